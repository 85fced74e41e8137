"""Kokoro's own pitch, movable: the shipped model with one more input, `f0_scale`, by which
the F0 curve its predictor makes is multiplied before the decoder voices it. The vocoder then
speaks the new pitch itself (formants kept, nothing of a pitch shifter heard: a library man's
pitch moved 8 semitones and resampled 3 smaller measured DNSMOS OVRL 3.30 where Rubber Band's
shift of joe to a woman's pitch measured 2.95-3.10), so a voice of the other gender can be made from
a library voice (`Shift.f0_st`).

The model is edited once per machine (the `onnx` package: ~1 s and ~200 MB, the model read
and written) and kept beside the shipped one in the models folder; where the edit cannot be
made (no `onnx`, another export without the predictor's projection), the model is used as it
is and the move is done by Rubber Band (`Shift.after_model`)."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path

log = logging.getLogger("troupe.kokoro")

F0_INPUT = "f0_scale"
"""The added input: shape (1,), float32; 1.0 leaves the model's pitch as it is."""
F0_PROJECTION = "/encoder/F0_proj/Conv_output_0"
"""The predictor's F0 curve in the shipped export (its F0 projection's output, in Hz)."""


def pitched_path(model: Path) -> Path:
    return model.with_name(f"{model.stem}-f0.onnx")


def pitched_model(model: Path) -> Path | None:
    """`model` with the `F0_INPUT` input, as a file beside it (made on first use; two
    processes at once are harmless); None where it cannot be made."""
    out = pitched_path(model)
    if out.is_file():
        return out
    try:
        import onnx
        from onnx import TensorProto, helper
    except Exception as exc:  # not installed, or a protobuf it cannot import with
        log.info("kokoro: no onnx package (%s): a voice's own pitch is moved by Rubber Band", exc)
        return None
    try:
        proto = onnx.load(str(model))
        graph = proto.graph
        if F0_INPUT in (i.name for i in graph.input):
            return model
        users = [n for n in graph.node if F0_PROJECTION in n.input]
        if not users:
            log.info(
                "kokoro: %s has no %s: a voice's own pitch is moved by Rubber Band", model, F0_PROJECTION
            )
            return None
        for node in users:
            node.input[:] = ["f0_scaled" if i == F0_PROJECTION else i for i in node.input]
        graph.node.append(
            helper.make_node("Mul", [F0_PROJECTION, F0_INPUT], ["f0_scaled"], name="troupe_f0_scale")
        )
        graph.input.append(helper.make_tensor_value_info(F0_INPUT, TensorProto.FLOAT, [1]))
        tmp = out.with_name(f"{out.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            onnx.save(proto, str(tmp))
            os.replace(tmp, out)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
    except Exception as exc:  # onnx and protobuf raise their own untyped errors
        log.warning(
            "kokoro: cannot make the pitched model (%s): a voice's own pitch is moved by Rubber Band", exc
        )
        return None
    return out
