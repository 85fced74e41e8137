"""A generated show at a real production's size: 50 roles, 800 lines, 20 scenes, as a
Fountain script (for the real engine) and as a snapshot (for drawing tests)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.control import HISTORY_COLUMNS, CueView, EngineSnapshot

N_ROLES, N_LINES, N_SCENES = 50, 800, 20
LINE_S = 4.0
"""Each generated line's slot on the timeline."""
WORDS = ("the", "signal", "fades", "over", "harbour", "lights", "and", "we", "wait", "for",
         "morning", "news", "from", "a", "distant", "station")  # fmt: skip


def role_names(n_roles: int = N_ROLES) -> tuple[str, ...]:
    """Distinct names, some long enough that a label must be elided."""
    long = ("THE ASSISTANT DEPUTY HARBOURMASTER", "CALLER FROM THE NORTHERN LIGHTHOUSE")
    return tuple(f"{long[k % 2]} {k}" if k % 7 == 3 else f"ROLE {k:02d}" for k in range(n_roles))


def line_text(k: int) -> str:
    n = 4 + k % 9
    return " ".join(WORDS[(k * 3 + j) % len(WORDS)] for j in range(n)).capitalize() + "."


def fountain(n_roles: int = N_ROLES, n_lines: int = N_LINES, n_scenes: int = N_SCENES) -> str:
    roles = role_names(n_roles)
    per_scene = n_lines // n_scenes
    parts = ["Title: Fifty Voices\n"]
    for k in range(n_lines):
        if k % per_scene == 0:
            parts.append(f"\nINT. STUDIO {k // per_scene + 1} - NIGHT\n")
        parts.append(f"\n{roles[(k * 7) % n_roles]}\n{line_text(k)}\n")
    return "".join(parts)


def write_script(folder: Path) -> Path:
    path = folder / "fifty_voices.fountain"
    path.write_text(fountain(), encoding="utf-8")
    return path


def cues(playhead_s: float = 0.0) -> tuple[CueView, ...]:
    """The 800 lines as the engine would show them with the playhead at `playhead_s`."""
    roles = role_names()
    per_scene = N_LINES // N_SCENES
    out = []
    for k in range(N_LINES):
        start = k * LINE_S
        state = "played" if start + 3.0 < playhead_s else "playing" if start <= playhead_s else "ready"
        out.append(CueView(k, roles[(k * 7) % N_ROLES], line_text(k), k // per_scene, state, start,
                           3.0, 0.0, False, "", ()))  # fmt: skip
    return tuple(out)


def snapshot(version: int, playhead_s: float = 0.0, playing: bool = True) -> EngineSnapshot:
    roles = role_names()
    pr = np.zeros((N_ROLES, HISTORY_COLUMNS), np.float32)
    pr[::5, -100:] = 3.0
    return EngineSnapshot(
        version=version, title="Fifty Voices", playing=playing, playhead_s=playhead_s,
        end_s=N_LINES * LINE_S, cues=cues(playhead_s), roles=roles,
        scenes=tuple(f"INT. STUDIO {k + 1} - NIGHT" for k in range(N_SCENES)), priorities=pr,
        status="playing" if playing else "stopped",
    )  # fmt: skip
