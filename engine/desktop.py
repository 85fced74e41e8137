"""Troupe as a desktop application for the current user (freedesktop.org): a launcher entry,
the icon in the hicolor theme (SVG and PNG sizes), the script MIME types it opens and Troupe
as their default application, so a double-click on a script in the file manager opens it in
the window. `troupe desktop-install` writes them, `troupe desktop-uninstall` removes them.

Everything goes under the user's XDG folders ($XDG_DATA_HOME, default ~/.local/share;
$XDG_CONFIG_HOME, default ~/.config); the system's own tools (update-mime-database,
update-desktop-database, xdg-mime, gtk-update-icon-cache) are run where installed, and
their absence is said, not fatal."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import assets
from engine.core.errors import TroupeError

APP_ID = "troupe"
DESKTOP_FILE = f"{APP_ID}.desktop"
ICON_SIZES = (16, 32, 48, 64, 128, 256)
MIME_TYPES = (
    "text/x-fountain",  # .fountain (defined by Troupe's MIME package)
    "application/x-finaldraft",  # .fdx (likewise)
    "application/x-subrip",  # .srt (shared-mime-info)
    "text/vtt",  # .vtt
    "text/x-ssa",  # .ass, .ssa
    "application/x-troupe-project",  # Troupe's project file (likewise)
)
"""What Troupe opens and registers itself as the default for."""
_TOOL_TIMEOUT_S = 30


@dataclass
class Report:
    written: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def config_home() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def launcher_command() -> str:
    """How the entry starts Troupe: the `troupe` command of this install (beside this
    interpreter, as pip and pipx put it, or on PATH running this interpreter), else this
    interpreter on main.py."""
    beside = Path(sys.executable).parent / APP_ID
    if beside.is_file() and os.access(beside, os.X_OK):
        return shlex.quote(str(beside))
    found = shutil.which(APP_ID)
    if found:
        try:
            first = Path(found).read_text(errors="replace").splitlines()[0]
        except (OSError, IndexError):
            first = ""
        if first.startswith("#!") and Path(first[2:].strip()).resolve() == Path(sys.executable).resolve():
            return shlex.quote(found)
    import importlib.util

    spec = importlib.util.find_spec("main")
    if spec is None or spec.origin is None:
        raise TroupeError("desktop-install: Troupe's main.py is not importable; install Troupe first")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(Path(spec.origin).resolve()))}"


def desktop_entry(command: str) -> str:
    """The launcher entry (Desktop Entry Specification; Version 1.0, which every validator knows)."""
    return "\n".join([
        "[Desktop Entry]",
        "Type=Application",
        "Version=1.0",
        "Name=Troupe",
        "GenericName=Voice Drama Studio",
        "Comment=Live multi-role AI voice drama: every character of a script gets a voice",
        f"Exec={command} --open %f",
        f"TryExec={shlex.split(command)[0]}",
        f"Icon={APP_ID}",
        "Terminal=false",
        "Categories=AudioVideo;Audio;",
        "Keywords=radio;drama;podcast;audiobook;screenplay;subtitles;speech;voice;",
        f"MimeType={';'.join(MIME_TYPES)};",
        "StartupNotify=true",
        "StartupWMClass=troupe",
        "",
    ])  # fmt: skip


def _paths() -> dict[str, Path]:
    data = data_home()
    out = {
        "entry": data / "applications" / DESKTOP_FILE,
        "svg": data / "icons" / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg",
        "mime": data / "mime" / "packages" / f"{APP_ID}.xml",
    }
    for size in ICON_SIZES:
        out[f"png{size}"] = data / "icons" / "hicolor" / f"{size}x{size}" / "apps" / f"{APP_ID}.png"
    return out


def _run(report: Report, *argv: str) -> bool:
    tool = shutil.which(argv[0])
    if tool is None:
        package = "xdg-utils" if argv[0] == "xdg-mime" else "shared-mime-info or desktop-file-utils"
        report.notes.append(f"{argv[0]} not found: skipped (Debian package {package})")
        return False
    try:
        done = subprocess.run([tool, *argv[1:]], capture_output=True, text=True, timeout=_TOOL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        report.notes.append(f"{argv[0]} failed: {exc}")
        return False
    if done.returncode != 0:
        report.notes.append(
            f"{argv[0]} exited {done.returncode}: {(done.stderr or done.stdout).strip()[:200]}"
        )
        return False
    return True


def _set_defaults(report: Report, mime_types: tuple[str, ...], entry: str | None) -> None:
    """Troupe as the default for its types (`entry`), or not any more (None), in the user's
    mimeapps.list; through xdg-mime where it is installed and the entry is set."""
    if (
        entry is not None
        and shutil.which("xdg-mime")
        and _run(report, "xdg-mime", "default", entry, *mime_types)
    ):
        return
    path = config_home() / "mimeapps.list"
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    section, out, seen = "", [], False
    for line in lines:
        if line.startswith("["):
            if section == "[Default Applications]" and entry is not None and not seen:
                out += [f"{t}={entry}" for t in mime_types]
                seen = True
            section = line.strip()
        elif section == "[Default Applications]" and line.split("=", 1)[0] in mime_types:
            if entry is None and line.split("=", 1)[1].strip() != DESKTOP_FILE:
                out.append(line)  # another application's default: not ours to remove
            continue
        out.append(line)
    if entry is not None and not seen:
        if section != "[Default Applications]":
            out.append("[Default Applications]")
        out += [f"{t}={entry}" for t in mime_types]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def install(command: str | None = None) -> Report:
    """Write the entry, icons and MIME package for this user and make Troupe the default for
    its script types."""
    report = Report()
    paths = _paths()
    try:
        for key, path in paths.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            if key == "entry":
                path.write_text(desktop_entry(command or launcher_command()), encoding="utf-8")
            elif key == "svg":
                shutil.copyfile(assets.ICON_SVG, path)
            elif key == "mime":
                shutil.copyfile(assets.MIME_XML, path)
            else:
                shutil.copyfile(assets.HERE / "desktop" / f"{APP_ID}-{key[3:]}.png", path)
            report.written.append(path)
    except OSError as exc:
        raise TroupeError(f"desktop-install: cannot write {exc.filename}: {exc.strerror}") from exc
    _refresh(report)
    _set_defaults(report, MIME_TYPES, DESKTOP_FILE)
    return report


def uninstall() -> Report:
    """Remove what `install` wrote, and Troupe as the default for its types."""
    report = Report()
    for path in _paths().values():
        if path.exists():
            path.unlink()
            report.removed.append(path)
    _refresh(report)
    _set_defaults(report, MIME_TYPES, None)
    return report


def _refresh(report: Report) -> None:
    data = data_home()
    _run(report, "update-mime-database", str(data / "mime"))
    _run(report, "update-desktop-database", str(data / "applications"))
    icons = data / "icons" / "hicolor"
    if shutil.which("gtk-update-icon-cache") and (icons / "index.theme").exists():
        _run(report, "gtk-update-icon-cache", "-q", "-t", str(icons))
