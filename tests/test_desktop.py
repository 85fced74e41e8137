"""`troupe desktop-install`: a launcher entry the freedesktop validator accepts, icons in the
hicolor theme, the script MIME types registered with Troupe as their default, all removed by
`desktop-uninstall`. Run in a private XDG home; the system's tools as installed by .ci/run
(desktop-file-utils, xdg-utils, shared-mime-info)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_DATA_DIRS": f"{tmp_path / 'data'}:/usr/local/share:/usr/share"}  # fmt: skip


def _troupe(env: dict[str, str], *argv: str) -> str:
    done = subprocess.run([sys.executable, str(ROOT / "main.py"), *argv], env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_desktop_install_validates_registers_and_uninstalls(tmp_path: Path) -> None:
    for tool in ("desktop-file-validate", "xdg-mime", "update-mime-database"):
        if shutil.which(tool) is None:
            pytest.fail(
                f"{tool} not installed (.ci/run installs desktop-file-utils, xdg-utils, shared-mime-info)"
            )
    env = _env(tmp_path)
    out = _troupe(env, "desktop-install")
    data = tmp_path / "data"
    entry = data / "applications" / "troupe.desktop"
    assert entry.is_file(), out
    check = subprocess.run(["desktop-file-validate", str(entry)], capture_output=True, text=True)
    assert check.returncode == 0 and not check.stdout.strip(), check.stdout + check.stderr
    text = entry.read_text()
    assert "Exec=" in text and "--open %f" in text and "MimeType=text/x-fountain;" in text
    assert (data / "icons" / "hicolor" / "scalable" / "apps" / "troupe.svg").is_file()
    for size in (16, 32, 48, 64, 128, 256):
        png = data / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "troupe.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    globs = (data / "mime" / "globs2").read_text()
    assert "text/x-fountain:*.fountain" in globs and "application/x-finaldraft:*.fdx" in globs
    for mime in (
        "text/x-fountain",
        "application/x-finaldraft",
        "application/x-subrip",
        "text/vtt",
        "text/x-ssa",
    ):
        query = subprocess.run(
            ["xdg-mime", "query", "default", mime], env=env, capture_output=True, text=True
        )
        assert query.stdout.strip() == "troupe.desktop", (mime, query.stdout, query.stderr)
    # the entry's command opens a script: its interpreter and main.py exist
    command = next(line for line in text.splitlines() if line.startswith("Exec="))[5:].split()
    assert Path(command[0]).exists()

    _troupe(env, "desktop-uninstall")
    assert not entry.exists()
    assert not list((data / "icons").rglob("troupe.*"))
    assert not (data / "mime" / "packages" / "troupe.xml").exists()
    query = subprocess.run(["xdg-mime", "query", "default", "text/x-fountain"], env=env, capture_output=True,
                           text=True)  # fmt: skip
    assert query.stdout.strip() != "troupe.desktop"


def test_uninstall_keeps_another_applications_defaults(tmp_path: Path) -> None:
    env = _env(tmp_path)
    config = tmp_path / "config"
    config.mkdir()
    (config / "mimeapps.list").write_text(
        "[Default Applications]\ntext/vtt=editor.desktop\nimage/png=viewer.desktop\n"
    )
    _troupe(env, "desktop-uninstall")
    kept = (config / "mimeapps.list").read_text()
    assert "text/vtt=editor.desktop" in kept and "image/png=viewer.desktop" in kept
