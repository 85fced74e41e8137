"""Kokoro-82M in torch (the `kokoro` package's `KModel`), batched.

`KModel.forward_with_tokens` voices one utterance. `BatchedGraph` runs several at once
with their own lengths, voices and speeds, in tensor operations only, so that the same
code runs eagerly (`BatchedKokoro`) and traces into an ONNX graph with dynamic batch and
token axes (`main.py build-engine`):
- text side: padded token ids with an attention mask, the duration encoder and duration
  LSTM on packed sequences, so every item sees only its own tokens;
- alignment: each item's predicted durations expand its tokens to its own frame count,
  padded to the longest (a comparison of frame positions with cumulative durations);
- frame side (F0/energy predictor and the iSTFT decoder), batched over padded frames: the
  LSTM runs packed, every convolution sees zeros past an item's end (as a lone utterance
  sees zero padding), and every instance norm normalises each item over its own frames
  (`_FrameMask`: per item with the native kernel on a CPU, vectorised elsewhere);
- each item's audio is zeroed past its own length, and trimmed to it.
The one difference left from voicing an item alone: the harmonic source runs on through
the padding, so the source's last STFT frames differ (about 1e-3 of peak over the item,
through the decoder's norms; see the tests).
Where the model adds noise (the harmonic source), outputs differ run to run in either path.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from engine.core.errors import SynthesisError
from engine.synthesis.kokoro.words import SAMPLES_PER_FRAME


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


def load_kmodel(folder: Path, disable_complex: bool = False) -> Any:
    """A KModel from a local folder holding config.json and one .pth weights file
    (`disable_complex`: a real-valued STFT, as ONNX export needs)."""
    config = folder / "config.json"
    weights = sorted(folder.glob("*.pth"))
    if not config.is_file() or not weights:
        raise SynthesisError(f"{folder}: expected config.json and a .pth weights file (never downloaded)")
    km = kokoro_module().KModel(repo_id="hexgrad/Kokoro-82M", config=str(config), model=str(weights[0]),
                                disable_complex=disable_complex)  # fmt: skip
    return km.eval()


def random_kmodel(config: dict[str, Any], folder: Path, seed: int = 0, frames_per_token: float = 3.0,
                  disable_complex: bool = False) -> Any:  # fmt: skip
    """The real architecture with random weights (for tests and benchmarks): an empty state
    dict leaves every module as initialised. Only the duration head's bias is set, so that
    tokens last about `frames_per_token` frames (about 75 ms) as in trained speech rather than
    the ~25 that random weights predict."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    torch.save({}, folder / "random.pth")
    torch.manual_seed(seed)
    km = load_kmodel(folder, disable_complex)
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
    """Forward hooks that make padded frames invisible to convolutions and instance norms.

    Two ways to normalise each item over its own frames:
    - vectorised: one masked norm over the whole batch, tensor arithmetic only, so that the
      graph traces into ONNX with dynamic batch and length axes (a layer's length is read
      from its input's shape as a tensor when tracing) and a GPU runs a few kernels, not one
      per item, with no host sync;
    - per item: the module's own kernel on each item's frames, the arithmetic a lone
      utterance gets; on a CPU this is faster (one fused pass instead of several)."""

    def __init__(self, modules: Sequence[nn.Module], frames: torch.Tensor, vectorised: bool = True) -> None:
        self.vectorised = vectorised
        self.frames = frames.long()
        self.f_max = self.frames.max()
        self._masks: dict[tuple[int, torch.dtype], torch.Tensor] = {}
        self.handles: list[Any] = []
        for root in modules:
            for m in root.modules():
                if isinstance(m, nn.Conv1d | nn.ConvTranspose1d):
                    self.handles.append(m.register_forward_pre_hook(self._zero_padding))
                elif isinstance(m, nn.InstanceNorm1d):
                    self.handles.append(m.register_forward_hook(self._masked_norm))

    def mask(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, 1, length) ones over each item's own part of a layer `length` long."""
        tracing = _tracing()
        key = (x.shape[-1], x.dtype)
        if not tracing and key in self._masks:  # each length recurs in several layers
            return self._masks[key]
        t: torch.Tensor | int = torch._shape_as_tensor(x)[-1].to(x.device) if tracing else x.shape[-1]
        valid = self.valid(t)
        pos = torch.arange(t, device=x.device) if not tracing else torch.arange(t).to(x.device)  # type: ignore[arg-type]
        mask = (pos[None, :] < valid[:, None]).to(x.dtype)[:, None, :]
        if not tracing:
            self._masks[key] = mask
        return mask

    def valid(self, t: torch.Tensor | int) -> torch.Tensor:
        """(batch,) each item's share of a layer `t` long: ceil(frames * t / f_max), exact."""
        return (self.frames * t + self.f_max - 1) // self.f_max

    def _zero_padding(self, _m: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
        return (args[0] * self.mask(args[0]), *args[1:])

    def _masked_norm(self, m: nn.Module, args: tuple[Any, ...], out: torch.Tensor) -> torch.Tensor:
        if not self.vectorised:
            return self._norm_per_item(m, args[0], out)
        return self._norm_vectorised(m, args, out)

    def _norm_per_item(self, m: nn.Module, x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        t = x.shape[-1]
        valid = self.valid(t).tolist()
        weight, bias = getattr(m, "weight", None), getattr(m, "bias", None)
        y = torch.zeros_like(out)
        for b, n in enumerate(valid):  # NB: the functional form; calling `m` would re-enter this hook
            y[b : b + 1, :, :n] = F.instance_norm(x[b : b + 1, :, :n], weight=weight, bias=bias,
                                                  eps=float(getattr(m, "eps", 1e-5)))  # fmt: skip
        return y

    def _norm_vectorised(self, m: nn.Module, args: tuple[Any, ...], out: torch.Tensor) -> torch.Tensor:
        """Each item normalised over its own frames (float32 statistics, as the native
        kernel keeps under autocast); zeros past its end. The sums run on values shifted by
        each channel's first frame: a near-constant channel (variance far under eps) then
        gives the native kernel's near-zero output, not its mean's rounding error x 300."""
        x = args[0].float()
        mask = self.mask(x)
        count = mask.sum(-1, keepdim=True)
        shifted = (x - x[..., :1]) * mask
        centred = (shifted - shifted.sum(-1, keepdim=True) / count) * mask
        var = (centred * centred).sum(-1, keepdim=True) / count
        y = centred * torch.rsqrt(var + float(getattr(m, "eps", 1e-5)))
        weight, bias = getattr(m, "weight", None), getattr(m, "bias", None)
        if weight is not None and bias is not None:
            y = (y * weight[None, :, None] + bias[None, :, None]) * mask
        return torch.as_tensor(y).to(out.dtype)

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


class BatchedGraph(nn.Module):
    """The batched forward as tensors in, tensors out: what the eager path runs and what
    `main.py build-engine` traces into ONNX (dynamic batch and token axes).

    Inputs: `input_ids` (batch, tokens) with 0 at both ends of each item and 0 padding, the
    width being the longest item; `input_lengths` (batch,) counting the two 0 ends;
    `ref_s` (batch, 256) each item's style row; `speed` (batch,).
    Outputs: `waveform` (batch, samples) at 24 kHz, zero past each item's end,
    `sample_lengths` (batch,), and `durations` (batch, tokens): each token's frames
    (`SAMPLES_PER_FRAME` samples each; the two 0 ends included, 0 on padding), the alignment
    the audio was made from, so that word times come free with it."""

    def __init__(self, kmodel: Any, mask_frames: bool = True, vectorised: bool | None = None) -> None:
        super().__init__()
        self.km = kmodel
        self.mask_frames = mask_frames
        """False only where the batch holds one item (the package's own arithmetic then)."""
        self.vectorised = vectorised
        """How items are normalised (see `_FrameMask`); None: vectorised when tracing or on
        a GPU, per item on a CPU."""

    def forward(
        self, input_ids: torch.Tensor, input_lengths: torch.Tensor, ref_s: torch.Tensor, speed: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        km, pred = self.km, self.km.predictor
        dev = input_ids.device
        pad = torch.arange(input_ids.shape[1], device=dev)[None, :] >= input_lengths[:, None]
        s = ref_s[:, 128:]
        bert = km.bert(input_ids, attention_mask=(~pad).int())
        d = pred.text_encoder(km.bert_encoder(bert).transpose(-1, -2), s, input_lengths, pad)
        x = _packed(pred.lstm, d, input_lengths)
        dur = torch.sigmoid(pred.duration_proj(x)).sum(-1) / speed[:, None]
        dur = torch.round(dur).clamp(min=1).long().masked_fill(pad, 0)
        ends = dur.cumsum(-1)
        frames = ends[:, -1]
        pos = torch.arange(frames.max()).to(dev)[None, None, :]  # type: ignore[call-overload]  # NB: traced
        aln = ((pos >= (ends - dur)[:, :, None]) & (pos < ends[:, :, None])).to(d.dtype)  # token -> frames
        en = d.transpose(-1, -2) @ aln
        asr = km.text_encoder(input_ids, input_lengths, pad) @ aln
        masked = [pred.F0, pred.N, pred.F0_proj, pred.N_proj, km.decoder] if self.mask_frames else []
        vectorised = self.vectorised
        if vectorised is None:
            vectorised = _tracing() or dev.type != "cpu"
        with _FrameMask(masked, frames, vectorised):
            shared = _packed(pred.shared, en.transpose(-1, -2), frames).transpose(-1, -2)
            f0, n = shared, shared
            for block in pred.F0:
                f0 = block(f0, s)
            for block in pred.N:
                n = block(n, s)
            f0, n = pred.F0_proj(f0).squeeze(1), pred.N_proj(n).squeeze(1)
            audio = km.decoder(asr, f0, n, ref_s[:, :128])
        audio = audio.reshape(audio.shape[0], -1)
        samples = frames * SAMPLES_PER_FRAME
        if self.mask_frames:  # the decoder's tail past a shorter item's end
            inside = torch.arange(audio.shape[1], device=dev)[None, :] < samples[:, None]
            audio = audio * inside.to(audio.dtype)
        return audio, samples, dur


class BatchedKokoro:
    """Batched inference over a KModel (on its device and dtype)."""

    def __init__(self, kmodel: Any, vectorised: bool | None = None) -> None:
        self.km = kmodel
        self._graphs = {mask: BatchedGraph(kmodel, mask, vectorised) for mask in (False, True)}

    @property
    def device(self) -> torch.device:
        return torch.device(next(self.km.parameters()).device)

    def forward(self, items: Sequence[BatchItem]) -> list[torch.Tensor]:
        """Audio (24 kHz, on the model's device) for each item, trimmed to its length."""
        return [audio for audio, _frames in self.forward_timed(items)]

    @torch.no_grad()
    def forward_timed(self, items: Sequence[BatchItem]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Each item's audio (as `forward`) and its tokens' durations in frames (the two 0
        ends included: `len(tokens) + 2`, summing to the audio's length in frames)."""
        dev = self.device
        dtype = next(self.km.parameters()).dtype
        ids, lengths = pad_tokens([it.tokens for it in items])
        ref = torch.stack([it.style for it in items]).to(dev, dtype)
        speed = torch.tensor([it.speed for it in items], device=dev, dtype=dtype)
        audio, n, dur = self._graphs[len(items) > 1](ids.to(dev), lengths.to(dev), ref, speed)
        return [(audio[b, :end], dur[b, : len(it.tokens) + 2])
                for b, (end, it) in enumerate(zip(n.tolist(), items, strict=True))]  # fmt: skip

    def single(self, item: BatchItem) -> torch.Tensor:
        """The package's own one-utterance path (the reference the batched one must match)."""
        return self.single_timed(item)[0]

    @torch.no_grad()
    def single_timed(self, item: BatchItem) -> tuple[torch.Tensor, torch.Tensor]:
        """`single`'s audio and the package's own predicted durations (frames per token)."""
        ids = torch.tensor([[0, *item.tokens, 0]], device=self.device)
        ref = item.style[None, :].to(self.device, next(self.km.parameters()).dtype)
        audio, dur = self.km.forward_with_tokens(ids, ref, item.speed)
        return torch.as_tensor(audio).reshape(-1), torch.as_tensor(dur).reshape(-1)


def _tracing() -> bool:
    return bool(torch.jit.is_tracing())  # type: ignore[attr-defined,no-untyped-call]


def pad_tokens(tokens: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids framed by 0 at both ends and padded with 0 to the longest, and the lengths."""
    lengths = torch.tensor([len(t) + 2 for t in tokens])
    ids = torch.zeros((len(tokens), int(lengths.max())), dtype=torch.long)
    for b, t in enumerate(tokens):
        ids[b, 1 : len(t) + 1] = torch.tensor(t, dtype=torch.long)
    return ids, lengths


def _packed(lstm: nn.LSTM, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """The LSTM over each item's own steps; padded back to the longest (= x's width)."""
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
    out, _ = lstm(packed)
    y, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
    return y
