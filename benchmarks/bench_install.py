"""What the README's first command costs a new user: the download (every wheel of
`.[gui]`, fetched from PyPI with no cache), the install into a fresh virtual environment,
the installed size, and whether the fresh install casts the demo with no espeak-ng role.

pip runs `--isolated` (no machine-wide pip configuration, no local indexes): what a user's
machine does. The system packages of the README's command are not counted (apt's own).

    python benchmarks/bench_install.py [--extra gui] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, machine, save, table

TARGET = "the README's first command: download and install measured; the demo cast with no espeak-ng role"


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def run(extra: str, work: Path) -> dict[str, object]:
    wheels, venv = work / "wheels", work / "venv"
    spec = f"{ROOT}[{extra}]" if extra else str(ROOT)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--isolated", "--disable-pip-version-check"]
    t0 = time.monotonic()  # what pip fetches and builds: the dependencies' wheels and Troupe's own
    subprocess.run([*pip, "download", "--no-cache-dir", "-q", "-d", str(wheels), spec], check=True)
    own = [*pip, "wheel", "--no-cache-dir", "--no-deps", "-q", "-w", str(wheels), str(ROOT)]
    subprocess.run(own, check=True)
    download_s = time.monotonic() - t0
    for leftover in wheels.glob("troupe-*.zip"):
        leftover.unlink()  # the source archive pip download keeps of a folder: not a download
    named = f"troupe[{extra}]" if extra else "troupe"
    t1 = time.monotonic()
    offline = ["install", "--no-cache-dir", "-q", "--no-index", "--find-links", str(wheels), named]
    subprocess.run([*pip, *offline], check=True)
    install_s = time.monotonic() - t1
    cast = subprocess.run([str(venv / "bin" / "troupe"), "cast", "--json"], capture_output=True, text=True,
                          check=True, cwd=work)  # fmt: skip
    rows = json.loads(cast.stdout)
    sizes = sorted(((p.name, p.stat().st_size) for p in wheels.iterdir()), key=lambda x: -x[1])
    return {
        "extra": extra or "(default)",
        "download_mb": round(_du(wheels) / 1e6, 1),
        "wheels": len(sizes),
        "largest": [{"file": n, "mb": round(s / 1e6, 1)} for n, s in sizes[:8]],
        "download_s": round(download_s, 1),
        "install_s": round(install_s, 1),
        "total_s": round(download_s + install_s, 1),
        "installed_mb": round(_du(venv) / 1e6, 1),
        "demo_roles": len(rows),
        "demo_espeak_roles": sum(r["voice"].startswith("espeak:") for r in rows),
        "demo_voices": sorted({r["voice"] for r in rows}),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--extra", action="append", help="extras to measure (default: gui and none)")
    ap.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = ap.parse_args()
    results = []
    for extra in args.extra or ["gui", ""]:
        work = Path(tempfile.mkdtemp(prefix="troupe-install-", dir=args.keep))
        try:
            results.append(run(extra, work))
        finally:
            if args.keep is None:
                shutil.rmtree(work, ignore_errors=True)
    print(f"target: {TARGET}")
    columns = ["extra", "download_mb", "wheels", "download_s", "install_s", "total_s", "installed_mb",
               "demo_roles", "demo_espeak_roles"]  # fmt: skip
    print(table(results, columns))
    save("bench_install", {"target": TARGET, "machine": machine(), "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
