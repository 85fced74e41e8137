"""What a render produces: line timings, the files written, and the render's options."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.core.errors import TroupeError
from engine.export.tags import Chapter

if TYPE_CHECKING:
    from engine.export.compliance import Compliance
from engine.core.timecode import format_srt_time

Progress = Callable[[float, str], None]
"""Called with (fraction done 0..1, what is happening)."""

STEM_MODES = ("roles", "clips")


class RenderCancelled(TroupeError):
    """The render was cancelled; its partial files were removed (the message lists them)."""


@dataclass(frozen=True)
class StemOptions:
    """What a render writes besides the mix, when it writes stems at all."""

    mode: str = "roles"
    """'roles': one file per role, all in one pass; 'clips': one file per line plus a timeline."""
    format: str = "flac"
    """A lossless format ('flac' or 'wav'): silence in a FLAC stem costs almost nothing."""
    sample_format: str = "s24"


WordSpan = tuple[str, float, float]
"""A word as written and its (start, end) in seconds from the line's start."""


@dataclass(frozen=True)
class LineNotes:
    """What listening to a voiced line found, and how it was fitted to its slot."""

    wer: float | None = None
    """Word error rate of what was heard against the script; None when not checked."""
    heard: str = ""
    check: bool = False
    """Marked "check": the WER is over its backend's threshold (a word dropped or slurred)."""
    words: tuple[WordSpan, ...] = ()
    words_from: str = ""
    """Where the word times came from: 'model' (the backend's own durations), 'asr' (what the
    line check heard) or '' (none)."""
    word_drift_s: float | None = None
    """Mean |predicted - heard| over the words' starts and ends, where both were had."""
    words_disagree: bool = False
    """The predicted word times are further than `engine.asr.DRIFT_BOUND_S` from the heard."""
    speech_db: float | None = None
    """The line's active speech level as voiced (dBFS; None: too little speech to tell)."""
    retaken: bool = False
    """Voiced a second time after a failed check (the better take was kept)."""
    fit: str = ""
    """The slot strategy ('fits', 'rate', 'stretch', 'overrun', 'over'); '' without a slot."""
    misfit_before_s: float | None = None
    """How far the line ran past its slot's end as first voiced (negative: ended early)."""
    misfit_after_s: float | None = None
    rate: float = 1.0
    stretch: float = 1.0


@dataclass(frozen=True)
class LineTiming:
    """Where one line ended up in the render."""

    cue_index: int
    role: str
    text: str
    start_s: float
    duration_s: float
    error: str | None = None
    fallback: str | None = None
    """Why an espeak-ng stand-in voiced this line instead of the voice it is cast to."""
    scene: int = 0
    notes: LineNotes = LineNotes()
    lead_s: float = 0.0
    """Silence at the head of the clip before the speech (a `(beat)`, the model's own)."""

    @property
    def onset_s(self) -> float:
        """Where the speech starts: the cue sheet's time for the line."""
        return self.start_s + min(self.lead_s, self.duration_s)


@dataclass
class RenderResult:
    """What a render produced, and how long each stage took."""

    path: Path
    duration_s: float
    lines: list[LineTiming]
    stems: dict[str, Path] = field(default_factory=dict)
    """Role (or, in clips mode, the line's file stem) -> file written."""
    cue_sheet: Path | None = None
    timeline: Path | None = None
    """The OpenTimelineIO file next to the stems, when stems were written."""
    synth_s: float = 0.0
    mix_s: float = 0.0
    bytes_written: int = 0
    loudness_measured_lufs: float | None = None
    """The mix's integrated loudness before normalisation (None when not normalised)."""
    loudness_gain_db: float | None = None
    captions: list[Path] = field(default_factory=list)
    """Word-level captions (SRT, WebVTT, ASS karaoke) and the JSON cue sheet with word times."""
    report: dict[str, Any] = field(default_factory=dict)
    """Slot misfit before and after fitting, WER per role, lines flagged (also as .report.json)."""
    stale_removed: list[Path] = field(default_factory=list)
    """Partial files an earlier, killed render of the same outputs had left: removed."""
    chapters: list[Chapter] = field(default_factory=list)
    """The chapters written into the mix (none where its format has no place for them)."""
    compliance: Compliance | None = None
    """What the encoded mix measures against its loudness target (a normalised render)."""
    compliance_report: Path | None = None
    """The same as JSON beside the mix."""

    @property
    def failed(self) -> list[LineTiming]:
        return [ln for ln in self.lines if ln.error]

    @property
    def flagged(self) -> list[LineTiming]:
        """Lines marked "check" by the line check."""
        return [ln for ln in self.lines if ln.notes.check and not ln.error]

    @property
    def fell_back(self) -> list[LineTiming]:
        return [ln for ln in self.lines if ln.fallback and not ln.error]


def write_cue_sheet(path: Path, lines: list[LineTiming]) -> None:
    """An SRT of the actual line timings, `[ROLE] text`, in time order, each from its speech's
    onset (a pause before the speech is outside the cue) to the end of its clip."""
    rows = sorted((ln for ln in lines if not ln.error), key=lambda ln: (ln.onset_s, ln.cue_index))
    fmt = format_srt_time
    blocks = [
        f"{k}\n{fmt(ln.onset_s)} --> {fmt(ln.start_s + ln.duration_s)}\n[{ln.role}] {ln.text}\n"
        for k, ln in enumerate(rows, start=1)
    ]
    path.write_text("\n".join(blocks), encoding="utf-8")
