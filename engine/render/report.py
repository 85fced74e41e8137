"""The render's listening report: how far timed lines missed their slots before and after
fitting, the word error rate per role, the lines marked "check"."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.render.result import LineTiming


def _spread_ms(values_s: Sequence[float]) -> dict[str, float]:
    """p50, p95 and max of values (seconds) in ms, and how many are over 0 (past the slot)."""
    a = np.asarray(values_s, np.float64) * 1000
    return {"p50_ms": round(float(np.percentile(a, 50)), 1), "p95_ms": round(float(np.percentile(a, 95)), 1),
            "max_ms": round(float(a.max()), 1), "n_past_end": int((a > 0.5).sum())}  # fmt: skip


def build_report(lines: Sequence[LineTiming]) -> dict[str, Any]:
    voiced = [ln for ln in lines if not ln.error]
    report: dict[str, Any] = {"lines": len(lines), "voiced": len(voiced)}
    fitted = [ln.notes for ln in voiced if ln.notes.fit]
    if fitted:
        report["slots"] = {
            "lines": len(fitted),
            "strategies": dict(Counter(n.fit for n in fitted)),
            "misfit_before": _spread_ms([n.misfit_before_s or 0.0 for n in fitted]),
            "misfit_after": _spread_ms([n.misfit_after_s or 0.0 for n in fitted]),
            "rate_max": round(max(n.rate for n in fitted), 3),
            "stretch_max": round(max(n.stretch for n in fitted), 3),
        }
    checked = [ln for ln in voiced if ln.notes.wer is not None]
    if checked:
        roles: dict[str, list[float]] = {}
        for ln in checked:
            roles.setdefault(ln.role, []).append(ln.notes.wer or 0.0)
        report["wer_by_role"] = {
            r: {"mean": round(float(np.mean(w)), 3), "max": round(max(w), 3), "lines": len(w)}
            for r, w in sorted(roles.items())
        }
        report["flagged"] = [{"cue": ln.cue_index, "role": ln.role, "wer": round(ln.notes.wer or 0.0, 3),
                              "text": ln.text, "heard": ln.notes.heard, "retaken": ln.notes.retaken}
                             for ln in checked if ln.notes.check]  # fmt: skip
    compared = [ln for ln in voiced if ln.notes.word_drift_s is not None]
    if compared:
        report["word_times"] = _word_times(compared)
    return report


def _word_times(compared: Sequence[LineTiming]) -> dict[str, Any]:
    """How far the backends' predicted word times were from where the recogniser heard the
    words: per line, and the lines past the bound."""
    from engine.asr.align import DRIFT_BOUND_S

    drift = [ln.notes.word_drift_s or 0.0 for ln in compared]
    return {
        "lines": len(compared), "bound_s": DRIFT_BOUND_S,
        "mean_drift_s": round(float(np.mean(drift)), 3), "max_drift_s": round(max(drift), 3),
        "per_line": [{"cue": ln.cue_index, "drift_s": round(d, 3)}
                     for ln, d in zip(compared, drift, strict=True)],
        "disagree": [{"cue": ln.cue_index, "role": ln.role, "drift_s": round(d, 3), "text": ln.text}
                     for ln, d in zip(compared, drift, strict=True) if ln.notes.words_disagree],
    }  # fmt: skip


def write_report(path: Path, report: dict[str, Any]) -> None:
    path.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")


def summary_lines(report: dict[str, Any]) -> list[str]:
    """The report for a terminal, a line per part."""
    out: list[str] = []
    slots = report.get("slots")
    if slots:
        b, a = slots["misfit_before"], slots["misfit_after"]
        ways = ", ".join(f"{k} {v}" for k, v in sorted(slots["strategies"].items()))
        out.append(f"slots: {slots['lines']} timed lines ({ways}); past the slot's end before fitting "
                   f"{b['n_past_end']} (p95 {b['p95_ms']:+.0f} ms), after {a['n_past_end']} "
                   f"(p95 {a['p95_ms']:+.0f} ms, max {a['max_ms']:+.0f} ms)")  # fmt: skip
    for role, w in report.get("wer_by_role", {}).items():
        out.append(f"WER {role}: mean {w['mean']:.2f}, max {w['max']:.2f} over {w['lines']} lines")
    for f in report.get("flagged", []):
        out.append(f"CHECK cue {f['cue']} ({f['role']}, WER {f['wer']:.2f}): heard {f['heard']!r}")
    times = report.get("word_times")
    if times:
        out.append(f"word times: predicted vs heard, mean {times['mean_drift_s']:.2f} s, max "
                   f"{times['max_drift_s']:.2f} s over {times['lines']} lines")  # fmt: skip
        for d in times["disagree"]:
            out.append(f"WORD TIMES cue {d['cue']} ({d['role']}): {d['drift_s']:.2f} s from what was heard "
                       f"(bound {times['bound_s']:.2f} s)")  # fmt: skip
    return out
