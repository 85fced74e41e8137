"""Files that ship with Troupe: the demo drama, the application icon and the desktop entry's
MIME types. Found through the package, so an install without the source tree (pipx, a
wheel) has them too."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
DEMO = HERE / "demo" / "the_last_broadcast.fountain"
"""The bundled demo drama."""
ICON_SVG = HERE / "desktop" / "troupe.svg"
MIME_XML = HERE / "desktop" / "troupe-mime.xml"
