"""The README's first command installs every library Qt's X11 plugin links against: on a
desktop the window would otherwise abort at start (exit 134). .ci/run installs the README's
own package list, so this checks the list itself."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_qt_xcb_plugin_finds_every_library() -> None:
    import PySide6

    plugins = list(Path(PySide6.__file__).parent.rglob("libqxcb.so"))
    if not plugins or shutil.which("ldd") is None:
        pytest.fail("Qt's xcb plugin or ldd not found")
    qpa = list(Path(PySide6.__file__).parent.rglob("libQt6XcbQpa.so*"))
    out = subprocess.run(["ldd", str(plugins[0]), *map(str, qpa[:1])], capture_output=True, text=True).stdout
    missing = sorted(set(re.findall(r"^\s*(\S+) => not found", out, re.M)))
    assert not missing, f"add the packages that provide {missing} to the README's first command"


def test_readme_first_command_names_the_dlopened_cursor_library() -> None:
    readme = (ROOT / "README.md").read_text()
    first = re.search(r"apt-get install -y ([^&]*)", readme)
    assert first is not None
    packages = first.group(1).split()
    # Qt 6.5+ loads libxcb-cursor at run time (not linked: ldd cannot see it)
    assert {"libxcb-cursor0", "libxcb-icccm4", "libxcb-keysyms1", "libportaudio2"} <= set(packages)
