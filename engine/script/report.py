"""The import report: what a script import read, skipped, guessed and split, shown before
anything is voiced (`troupe import SCRIPT --report [--json]`, the window's import dialog).

Built from the `Script` alone (its cues, roles, annotations and `facts`), so the report
and what plays can never disagree."""

from __future__ import annotations

from collections import Counter
from typing import Any

from engine.core.types import Script

_KIND_TITLES = {"warning": "warnings", "guess": "guesses", "split": "split paragraphs", "skipped": "skipped"}


def report_dict(script: Script) -> dict[str, Any]:
    """The report as one JSON-ready dict."""
    facts = script.facts
    words = Counter[str]()
    lines = Counter[str]()
    for cue in script.cues:
        words[cue.role] += len(cue.text.split())
        lines[cue.role] += 1
    skipped = Counter(n.reason or "other" for n in facts.notes if n.kind == "skipped")
    return {
        "file": script.path,
        "format": script.format,
        "encoding": {
            "name": facts.encoding,
            "confidence": facts.confidence,
            "how": facts.how,
            "first_line": facts.first_line,
        },
        "cues": len(script.cues),
        "roles": [
            {"name": r, "display_name": script.roles[r].display_name, "lines": lines[r], "words": words[r]}
            for r in script.roles
        ],
        "words": sum(words.values()),
        "annotations": len(script.annotations),
        "skipped": dict(sorted(skipped.items())),
        "styles": [
            {"name": u.name, "events": u.events, "dialogue": u.dialogue, "reason": u.reason}
            for u in facts.styles
        ],
        "notes": [
            {"line": n.line, "kind": n.kind, "message": n.message, "reason": n.reason} for n in facts.notes
        ],
    }


def report_text(script: Script, max_notes: int = 40) -> str:
    """The report as lines of text for a terminal or the window's dialog."""
    d = report_dict(script)
    enc = d["encoding"]
    how = {"bom": "marked by a BOM", "utf-8": "valid UTF-8", "chosen": "as chosen",
           "guessed": f"guessed, confidence {enc['confidence']:.0%}"}[enc["how"]]  # fmt: skip
    out = [
        f"{d['file']}: {d['format']}, {enc['name']} ({how})",
        f"  first line: {enc['first_line']!r}",
        f"  {d['cues']:,} lines, {len(d['roles']):,} roles, {d['words']:,} words, "
        f"{d['annotations']:,} sounds and signs (not spoken)",
    ]
    if d["skipped"]:
        out.append("  skipped: " + ", ".join(f"{n:,} {reason}" for reason, n in d["skipped"].items()))
    if d["styles"]:
        out.append("  styles:")
        for s in d["styles"]:
            said = "spoken" if s["dialogue"] else "not spoken"
            out.append(f"    {s['name']:<24} {s['events']:>5} events  {said} ({s['reason']})")
    top = sorted(d["roles"], key=lambda r: -r["lines"])
    out.append("  roles: " + ", ".join(f"{r['name']} {r['lines']}" for r in top[:12])
               + (f", and {len(top) - 12} more" if len(top) > 12 else ""))  # fmt: skip
    shown = [n for n in d["notes"] if n["kind"] != "skipped"]
    for kind, title in _KIND_TITLES.items():
        notes = [n for n in shown if n["kind"] == kind]
        if not notes:
            continue
        out.append(f"  {title} ({len(notes)}):")
        for n in notes[:max_notes]:
            where = f"line {n['line']}: " if n["line"] else ""
            out.append(f"    {where}{n['message']}")
        if len(notes) > max_notes:
            out.append(f"    ... and {len(notes) - max_notes} more (--json lists them all)")
    return "\n".join(out)
