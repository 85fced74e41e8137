"""One Piper voice (a VITS model exported to ONNX, with its `.onnx.json`): phonemes to ids,
ids to 22.05 kHz audio through onnxruntime, batched where the model's batch axis is dynamic.

Stages that test alone: `PiperConfig.ids` (phonemes -> ids), `PiperModel.run` (ids ->
audio). A batch is padded to its longest item; each item is cut back to its own length, which
the model computes (the sum of its rounded-up phoneme durations) but does not output: where
the `onnx` package is installed the graph is given that tensor as a second output."""

from __future__ import annotations

import json
import logging
import os
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from engine.core.errors import SynthesisError
from engine.synthesis.onnx_memory import CPU_CALLS, model_file, run_options

log = logging.getLogger("troupe.piper")
BOS, EOS, PAD = "^", "$", "_"
LENGTHS_OUTPUT = "troupe_item_frames"


@dataclass(frozen=True)
class PiperConfig:
    """What a voice's `.onnx.json` says that synthesis needs."""

    sample_rate_hz: int
    phoneme_id_map: dict[str, list[int]]
    espeak_voice: str = "en-us"
    speakers: dict[str, int] = field(default_factory=dict)
    """Speaker name -> id (empty for a single-speaker voice)."""
    num_speakers: int = 1
    noise_scale: float = 0.667
    length_scale: float = 1.0
    noise_w: float = 0.8
    language: str = ""

    @classmethod
    def load(cls, path: Path) -> PiperConfig:
        """Read and check a `.onnx.json`; a bad one raises `SynthesisError` naming it."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise SynthesisError(f"{path}: not a readable Piper voice config ({exc})") from exc
        try:
            return cls.from_dict(data)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SynthesisError(f"{path}: not a Piper voice config ({exc!r})") from exc

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PiperConfig:
        if data.get("phoneme_type", "espeak") != "espeak":
            raise ValueError(f"phoneme_type {data['phoneme_type']!r}; only 'espeak' is supported")
        id_map = {str(k): [int(i) for i in v] for k, v in data["phoneme_id_map"].items()}
        for needed in (BOS, EOS, PAD):
            if needed not in id_map:
                raise ValueError(f"phoneme_id_map has no {needed!r}")
        inference = dict(data.get("inference", {}))
        rate = int(data["audio"]["sample_rate"])
        if not 8000 <= rate <= 48000:
            raise ValueError(f"sample_rate {rate}")
        return cls(
            sample_rate_hz=rate,
            phoneme_id_map=id_map,
            espeak_voice=str(data.get("espeak", {}).get("voice", "en-us")),
            speakers={str(k): int(v) for k, v in dict(data.get("speaker_id_map", {})).items()},
            num_speakers=int(data.get("num_speakers", 1)),
            noise_scale=float(inference.get("noise_scale", 0.667)),
            length_scale=float(inference.get("length_scale", 1.0)),
            noise_w=float(inference.get("noise_w", 0.8)),
            language=str(dict(data.get("language", {})).get("code", "")),
        )

    def ids(self, phonemes: str) -> list[int]:
        """Piper's id sequence: BOS, then each phoneme followed by PAD, then EOS; phonemes the
        voice does not know are skipped."""
        m = self.phoneme_id_map
        out = [*m[BOS], *m[PAD]]
        for ch in unicodedata.normalize("NFD", phonemes):
            if ch in m:
                out += [*m[ch], *m[PAD]]
        out += m[EOS]
        return out

    def speaker_id(self, speaker: str, where: str) -> int:
        """`speaker` (a name in the voice's speaker map, or a number) as the model's id."""
        if self.num_speakers <= 1:
            if speaker:
                raise SynthesisError(f"{where}: a single-speaker voice has no speaker {speaker!r}")
            return 0
        if not speaker:
            return 0
        if speaker in self.speakers:
            return self.speakers[speaker]
        if speaker.isdigit() and int(speaker) < self.num_speakers:
            return int(speaker)
        names = ", ".join(sorted(self.speakers)[:8]) or f"0..{self.num_speakers - 1}"
        raise SynthesisError(f"{where}: no speaker {speaker!r} (have {names})")


def _with_lengths(model_bytes: bytes) -> bytes | None:
    """The model with each item's frame count (the Ceil -> ReduceSum -> Clip -> Cast chain of
    VITS) as an extra output, or None when `onnx` is missing, the batch axis is fixed or the
    chain is not found."""
    try:
        import onnx
    except ImportError:
        return None
    m = onnx.load_from_string(model_bytes)
    if not m.graph.input or not m.graph.input[0].type.tensor_type.shape.dim[0].dim_param:
        return None  # a fixed batch axis: one item a call
    consumers: dict[str, list[Any]] = {}
    for node in m.graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    ceil = next((n for n in m.graph.node if n.op_type == "Ceil"), None)
    if ceil is None:
        return None
    tensor = ceil.output[0]
    for op in ("ReduceSum", "Clip", "Cast"):
        nxt = next((n for n in consumers.get(tensor, []) if n.op_type == op), None)
        if nxt is None:
            if op == "ReduceSum":
                return None
            break
        tensor = nxt.output[0]
    m.graph.node.append(onnx.helper.make_node("Cast", [tensor], [LENGTHS_OUTPUT], to=onnx.TensorProto.INT64))
    m.graph.output.append(onnx.helper.make_tensor_value_info(LENGTHS_OUTPUT, onnx.TensorProto.INT64, None))
    return bytes(m.SerializeToString())


class PiperModel:
    """An inference session on one Piper `.onnx` file; loaded on first use."""

    def __init__(self, model: Path, config: PiperConfig, threads: int | None = None,
                 batches: bool = True) -> None:  # fmt: skip
        """`batches`: False: one item a call, and the graph is loaded as it is (patching it
        for batches holds three copies of the model at once while loading)."""
        self.path = model
        self.batches = batches
        self.config = config
        self.threads = threads or max(1, os.cpu_count() or 1)
        self.batched = False
        """The batch axis is dynamic and each item's length is known: batches are voiced at once."""
        self._session: Any = None
        self._lock = threading.Lock()
        self._run_opts: Any = None
        """One call at a time, its memory given back after (engine/synthesis/onnx_memory.py;
        two at once held two: a render's two voicing threads, 0.71 GB peak against 0.63)."""

    def load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort

            try:
                raw = self.path.read_bytes()
            except OSError as exc:
                raise SynthesisError(f"{self.path}: cannot read the voice model ({exc})") from exc
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = self.threads
            opts.inter_op_num_threads = 1
            try:
                patched = _with_lengths(raw) if self.batches else None
                del raw  # NB: a model given as bytes is copied by onnxruntime: a file, always
                source = model_file(patched, f"piper-{self.path.stem}") if patched else self.path
                session = ort.InferenceSession(str(source) if isinstance(source, Path) else source,
                                               sess_options=opts,
                                               providers=["CPUExecutionProvider"])  # fmt: skip
            except Exception as exc:  # onnxruntime and onnx raise their own untyped errors
                raise SynthesisError(f"{self.path}: cannot load the Piper voice ({exc})") from exc
            names = [i.name for i in session.get_inputs()]
            if names[:3] != ["input", "input_lengths", "scales"]:
                raise SynthesisError(
                    f"{self.path}: expected inputs input, input_lengths, scales; got {names}"
                )
            self.batched = patched is not None
            self._run_opts = run_options("CPUExecutionProvider")
            self._session = session

    def run(self, ids: Sequence[Sequence[int]], scales: tuple[float, float, float],
            speaker_ids: Sequence[int]) -> list[NDArray[np.float32]]:  # fmt: skip
        """Audio at the voice's rate for each id sequence (one scale triple for all: noise,
        length, noise_w); in one call where batched, else one call each."""
        self.load()
        if not self.batched or len(ids) == 1:
            return [self._call([i], scales, [s])[0] for i, s in zip(ids, speaker_ids, strict=True)]
        return self._call(ids, scales, speaker_ids)

    def _call(self, ids: Sequence[Sequence[int]], scales: tuple[float, float, float],
              speaker_ids: Sequence[int]) -> list[NDArray[np.float32]]:  # fmt: skip
        width = max(len(i) for i in ids)
        batch = np.zeros((len(ids), width), np.int64)  # PAD is id 0 in Piper voices; masked anyway
        for b, seq in enumerate(ids):
            batch[b, : len(seq)] = seq
        feed: dict[str, Any] = {
            "input": batch,
            "input_lengths": np.array([len(i) for i in ids], np.int64),
            "scales": np.array(scales, np.float32),
        }
        if self.config.num_speakers > 1:
            feed["sid"] = np.array(speaker_ids, np.int64)
        try:
            with CPU_CALLS:
                outputs = self._session.run(None, feed, self._run_opts)
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise SynthesisError(f"Piper ({self.path.name}): {exc}") from exc
        wave = np.asarray(outputs[0], np.float32).reshape(len(ids), -1)
        if len(ids) == 1 or not self.batched:
            return [wave[b] for b in range(len(ids))]
        frames = np.asarray(outputs[-1], np.int64).reshape(-1)
        hop = wave.shape[1] // max(1, int(frames.max()))
        return [wave[b, : int(frames[b]) * hop] for b in range(len(ids))]

    def close(self) -> None:
        self._session = None
