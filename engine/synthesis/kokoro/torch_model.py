"""Kokoro-82M in torch (the `kokoro` package's `KModel`), batched.

`KModel.forward_with_tokens` voices one utterance. `BatchedKokoro.forward` runs several
at once with their own lengths, voices and speeds:
- text side: padded token ids with an attention mask, the duration encoder and duration
  LSTM on packed sequences, so every item sees only its own tokens;
- alignment: each item's predicted durations expand its tokens to its own frame count,
  padded to the longest;
- frame side (F0/energy predictor and the iSTFT decoder), batched over padded frames: the
  LSTM runs packed, every convolution sees zeros past an item's end (as a lone utterance
  sees zero padding), and every instance norm normalises each item over its own frames
  with the kernel a lone utterance gets (`_FrameMask`);
- each item's audio is trimmed to its own length.
Where the model adds noise (the harmonic source), outputs differ run to run in either path.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from engine.core.errors import SynthesisError

SAMPLES_PER_FRAME = 600
"""Audio samples (24 kHz) per predicted duration frame: iSTFT hop 5 x upsampling 10 x 6 x 2."""


def kokoro_module() -> types.ModuleType:
    """`kokoro.model` without running `kokoro/__init__` (which pulls in the G2P stack)."""
    if "kokoro.model" in sys.modules:
        return sys.modules["kokoro.model"]
    spec = importlib.util.find_spec("kokoro")
    if spec is None or not spec.submodule_search_locations:
        raise SynthesisError("the kokoro package is not installed (pip install --no-deps kokoro)")
    if "kokoro" not in sys.modules:
        pkg = types.ModuleType("kokoro")
        pkg.__path__ = list(spec.submodule_search_locations)
        sys.modules["kokoro"] = pkg  # NB: a bare parent: only model, modules and istftnet load
    import kokoro.model
    from loguru import logger

    logger.disable("kokoro")  # what the package's own __init__ does
    module: types.ModuleType = kokoro.model
    return module


def load_kmodel(folder: Path) -> Any:
    """A KModel from a local folder holding config.json and one .pth weights file."""
    config = folder / "config.json"
    weights = sorted(folder.glob("*.pth"))
    if not config.is_file() or not weights:
        raise SynthesisError(f"{folder}: expected config.json and a .pth weights file (never downloaded)")
    km = kokoro_module().KModel(repo_id="hexgrad/Kokoro-82M", config=str(config), model=str(weights[0]))
    return km.eval()


def random_kmodel(config: dict[str, Any], folder: Path, seed: int = 0, frames_per_token: float = 3.0) -> Any:
    """The real architecture with random weights (for tests and benchmarks): an empty state
    dict leaves every module as initialised. Only the duration head's bias is set, so that
    tokens last about `frames_per_token` frames (about 75 ms) as in trained speech rather than
    the ~25 that random weights predict."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    torch.save({}, folder / "random.pth")
    torch.manual_seed(seed)
    km = load_kmodel(folder)
    head = km.predictor.duration_proj.linear_layer
    p = frames_per_token / head.out_features
    with torch.no_grad():
        head.weight.mul_(0.01)
        head.bias.fill_(math.log(p / (1 - p)))
    return km


def small_config(vocab: dict[str, int]) -> dict[str, Any]:
    """Kokoro's layout with a small ALBERT and one duration layer: the same modules, faster
    on a CPU (the decoder's widths are fixed by the architecture: 512 in, 1024 inside)."""
    return {
        "vocab": vocab, "n_token": 178, "hidden_dim": 512, "style_dim": 128, "n_layer": 1,
        "max_dur": 50, "dropout": 0.2, "text_encoder_kernel_size": 5, "n_mels": 80,
        "plbert": {"hidden_size": 64, "num_attention_heads": 2, "intermediate_size": 128,
                   "max_position_embeddings": 512, "num_hidden_layers": 2, "dropout": 0.1},
        "istftnet": {"upsample_kernel_sizes": [20, 12], "upsample_rates": [10, 6],
                     "gen_istft_hop_size": 5, "gen_istft_n_fft": 20,
                     "resblock_dilation_sizes": [[1, 3, 5], [1, 3, 5], [1, 3, 5]],
                     "resblock_kernel_sizes": [3, 7, 11], "upsample_initial_channel": 512},
    }  # fmt: skip


def full_config(vocab: dict[str, int]) -> dict[str, Any]:
    """Kokoro-82M's published layout (82 M parameters)."""
    cfg = small_config(vocab)
    cfg.update(n_layer=3)
    cfg["plbert"] = {"hidden_size": 768, "num_attention_heads": 12, "intermediate_size": 2048,
                     "max_position_embeddings": 512, "num_hidden_layers": 12, "dropout": 0.1}  # fmt: skip
    return cfg


class _FrameMask:
    """Forward hooks that make padded frames invisible to convolutions and instance norms."""

    def __init__(self, modules: Sequence[nn.Module], frames: list[int], max_frames: int) -> None:
        self.frames, self.max_frames = frames, max_frames
        self._masks: dict[tuple[int, torch.dtype], torch.Tensor] = {}
        self.handles: list[Any] = []
        for root in modules:
            for m in root.modules():
                if isinstance(m, nn.Conv1d | nn.ConvTranspose1d):
                    self.handles.append(m.register_forward_pre_hook(self._zero_padding))
                elif isinstance(m, nn.InstanceNorm1d):
                    self.handles.append(m.register_forward_hook(self._masked_norm))

    def mask(self, x: torch.Tensor) -> torch.Tensor:
        key = (x.shape[-1], x.dtype)
        if key not in self._masks:  # each time length recurs in several layers
            t = x.shape[-1]
            valid = torch.tensor(self.valid(t), device=x.device)
            self._masks[key] = (torch.arange(t, device=x.device)[None, :] < valid[:, None]).to(x.dtype)[
                :, None, :
            ]
        return self._masks[key]

    def _zero_padding(self, _m: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
        return (args[0] * self.mask(args[0]), *args[1:])

    def _masked_norm(self, m: nn.Module, args: tuple[Any, ...], out: torch.Tensor) -> torch.Tensor:
        """Each item normalised over its own frames, by the module's own kernel (so an item
        gets the same arithmetic as when it runs alone); zeros past its end."""
        x = args[0]
        t = x.shape[-1]
        valid = self.valid(t)
        y = torch.zeros_like(out)
        weight, bias, eps = (
            getattr(m, "weight", None),
            getattr(m, "bias", None),
            float(getattr(m, "eps", 1e-5)),
        )
        for b, n in enumerate(valid):  # NB: the functional form; calling `m` would re-enter this hook
            y[b : b + 1, :, :n] = F.instance_norm(x[b : b + 1, :, :n], weight=weight, bias=bias, eps=eps)
        return y

    def valid(self, t: int) -> list[int]:
        return [min(t, math.ceil(float(f) * t / self.max_frames)) for f in self.frames]

    def __enter__(self) -> _FrameMask:
        return self

    def __exit__(self, *_exc: object) -> None:
        for h in self.handles:
            h.remove()


@dataclass
class BatchItem:
    tokens: list[int]
    style: torch.Tensor
    """(256,) style row for this item's length."""
    speed: float = 1.0


class BatchedKokoro:
    """Batched inference over a KModel (on its device and dtype)."""

    def __init__(self, kmodel: Any) -> None:
        self.km = kmodel

    @property
    def device(self) -> torch.device:
        return torch.device(next(self.km.parameters()).device)

    @torch.no_grad()
    def forward(self, items: Sequence[BatchItem]) -> list[torch.Tensor]:
        """Audio (24 kHz, on the model's device) for each item, trimmed to its length."""
        km, dev = self.km, self.device
        dtype = next(km.parameters()).dtype
        lengths = torch.tensor([len(it.tokens) + 2 for it in items])
        t_max = int(lengths.max())
        ids = torch.zeros((len(items), t_max), dtype=torch.long)
        for b, it in enumerate(items):
            ids[b, 1 : len(it.tokens) + 1] = torch.tensor(it.tokens)
        ids = ids.to(dev)
        pad = (torch.arange(t_max)[None, :] >= lengths[:, None]).to(dev)
        ref = torch.stack([it.style for it in items]).to(dev, dtype)
        speed = torch.tensor([it.speed for it in items], device=dev, dtype=dtype)[:, None]
        s = ref[:, 128:]
        bert = km.bert(ids, attention_mask=(~pad).int())
        d = km.predictor.text_encoder(km.bert_encoder(bert).transpose(-1, -2), s, lengths, pad)
        x = _packed(km.predictor.lstm, d, lengths, t_max)
        dur = torch.sigmoid(km.predictor.duration_proj(x)).sum(-1) / speed
        dur = torch.round(dur).clamp(min=1).long().masked_fill(pad, 0)
        frames = dur.sum(-1)
        f_max = int(frames.max())
        aln = torch.zeros((len(items), t_max, f_max), device=dev, dtype=dtype)
        for b in range(len(items)):
            tok = torch.repeat_interleave(torch.arange(t_max, device=dev), dur[b])
            aln[b, tok, torch.arange(tok.shape[0], device=dev)] = 1
        en = d.transpose(-1, -2) @ aln
        asr = km.text_encoder(ids, lengths, pad) @ aln
        pred = km.predictor
        masked = [pred.F0, pred.N, pred.F0_proj, pred.N_proj, km.decoder] if len(items) > 1 else []
        with _FrameMask(masked, [int(f) for f in frames], f_max):
            shared = _packed(pred.shared, en.transpose(-1, -2), frames.cpu(), f_max).transpose(-1, -2)
            f0, n = shared, shared
            for block in pred.F0:
                f0 = block(f0, s)
            for block in pred.N:
                n = block(n, s)
            f0, n = pred.F0_proj(f0).squeeze(1), pred.N_proj(n).squeeze(1)
            audio = km.decoder(asr, f0, n, ref[:, :128]).reshape(len(items), -1)
        return [audio[b, : int(frames[b]) * SAMPLES_PER_FRAME] for b in range(len(items))]

    @torch.no_grad()
    def single(self, item: BatchItem) -> torch.Tensor:
        """The package's own one-utterance path (the reference the batched one must match)."""
        ids = torch.tensor([[0, *item.tokens, 0]], device=self.device)
        ref = item.style[None, :].to(self.device, next(self.km.parameters()).dtype)
        audio, _ = self.km.forward_with_tokens(ids, ref, item.speed)
        return torch.as_tensor(audio).reshape(-1)


def _packed(lstm: nn.LSTM, x: torch.Tensor, lengths: torch.Tensor, total: int) -> torch.Tensor:
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
    out, _ = lstm(packed)
    y, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=total)
    return y


def length_buckets(lengths: Sequence[int], max_batch: int, bucket: int = 32) -> Iterator[list[int]]:
    """Indices grouped by token-length bucket, at most `max_batch` a group (less padding)."""
    groups: dict[int, list[int]] = {}
    for k, n in enumerate(lengths):
        groups.setdefault(n // bucket, []).append(k)
    for _, idx in sorted(groups.items()):
        for start in range(0, len(idx), max_batch):
            yield idx[start : start + max_batch]
