"""Word-level captions of a render: SRT with a cue per word, WebVTT with each word's time
inside its line's cue, ASS karaoke (`\\k` per word), and the cue sheet as JSON with word times."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pysubs2

from engine.core.timecode import format_srt_time, format_vtt_time
from engine.render.result import LineTiming


def _voiced(lines: Sequence[LineTiming]) -> list[LineTiming]:
    return sorted((ln for ln in lines if not ln.error), key=lambda ln: (ln.start_s, ln.cue_index))


def word_srt(lines: Sequence[LineTiming]) -> str:
    """One SRT cue per word, each shown while it is spoken."""
    blocks: list[str] = []
    for ln in _voiced(lines):
        for text, a, b in ln.notes.words:
            k = len(blocks) + 1
            blocks.append(
                f"{k}\n{format_srt_time(ln.start_s + a)} --> {format_srt_time(ln.start_s + b)}\n{text}\n"
            )
    return "\n".join(blocks)


def word_vtt(lines: Sequence[LineTiming]) -> str:
    """A WebVTT cue per line, speaker as a voice span, each word after its own timestamp."""
    out = ["WEBVTT", ""]
    for ln in _voiced(lines):
        end = ln.start_s + ln.duration_s
        parts = [f"<{format_vtt_time(ln.start_s + a)}>{_vtt_escape(t)}" for t, a, _ in ln.notes.words]
        body = " ".join(parts) if parts else _vtt_escape(ln.text)
        cue = f"{format_vtt_time(ln.onset_s)} --> {format_vtt_time(end)}"
        out += [cue, f"<v {_vtt_escape(ln.role)}>{body}", ""]
    return "\n".join(out)


def _vtt_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def karaoke_ass(lines: Sequence[LineTiming]) -> pysubs2.SSAFile:
    """ASS with a `\\k` karaoke tag per word (centiseconds), the role as the event's name."""
    subs = pysubs2.SSAFile()
    for ln in _voiced(lines):
        pieces: list[str] = []
        t = 0.0
        for text, a, b in ln.notes.words:
            if a > t:  # the silence before the word: an empty syllable
                pieces.append(f"{{\\k{round((a - t) * 100)}}}")
            word = text.replace("{", "(").replace("}", ")").replace("\\", "/")
            pieces.append(f"{{\\k{round((b - a) * 100)}}}{word} ")
            t = b
        text = "".join(pieces).rstrip() if pieces else ln.text
        start_ms, end_ms = round(ln.start_s * 1000), round((ln.start_s + ln.duration_s) * 1000)
        subs.append(pysubs2.SSAEvent(start=start_ms, end=end_ms, text=text, name=ln.role))
    return subs


def cue_sheet_json(lines: Sequence[LineTiming]) -> list[dict[str, object]]:
    """Each voiced line with its times, what was heard and each word's time on the show timeline."""
    rows: list[dict[str, object]] = []
    for ln in _voiced(lines):
        n = ln.notes
        end_s = round(ln.start_s + ln.duration_s, 3)
        row: dict[str, object] = {"cue": ln.cue_index, "role": ln.role, "text": ln.text,
                                  "start_s": round(ln.start_s, 3), "onset_s": round(ln.onset_s, 3),
                                  "end_s": end_s}  # fmt: skip
        if n.wer is not None:
            row |= {"wer": round(n.wer, 3), "heard": n.heard, "check": n.check}
        if n.fit:
            row["fit"] = n.fit
        if n.words_from:
            row["words_from"] = n.words_from
        if n.word_drift_s is not None:
            row |= {"word_drift_s": round(n.word_drift_s, 3), "words_disagree": n.words_disagree}
        row["words"] = [{"text": t, "start_s": round(ln.start_s + a, 3), "end_s": round(ln.start_s + b, 3)}
                        for t, a, b in n.words]  # fmt: skip
        rows.append(row)
    return rows


def side_file(out: Path, suffix: str, script: Path) -> Path:
    """The file with `suffix` beside the mix `out`, never the script itself (a subtitle
    script named like the mix: `show.srt` rendered to `show.wav`): that one is named apart,
    `show.render.srt`, so a render never writes over its input."""
    path = out.with_suffix(suffix)
    try:
        same = path.resolve() == script.resolve()
    except OSError:
        same = False
    return out.with_suffix(".render" + suffix) if same else path


def write_captions(out: Path, lines: Sequence[LineTiming], script: Path) -> list[Path]:
    """Next to the mix `out`: .words.srt, .words.vtt, .karaoke.ass and .cues.json (none of
    them over `script`); the paths."""
    paths = [side_file(out, s, script) for s in (".words.srt", ".words.vtt", ".karaoke.ass", ".cues.json")]
    paths[0].write_text(word_srt(lines), encoding="utf-8")
    paths[1].write_text(word_vtt(lines), encoding="utf-8")
    karaoke_ass(lines).save(str(paths[2]), format_="ass")
    paths[3].write_text(json.dumps(cue_sheet_json(lines), indent=1, ensure_ascii=False), encoding="utf-8")
    return paths
