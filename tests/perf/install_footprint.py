"""What installing each distribution costs a user: time and disk of a fresh virtual environment.

Each distribution is installed alone into a new venv with pip, without pip's cache, from wheels
built from this checkout (the servers' guard, ``docab-mcpguard``, is the one sibling a server
needs) and from the package index for everything else. ``mcp-server-fetch``, the reference MCP
server, is installed from the index the same way, for scale. Printed per distribution: seconds
for ``pip install``, the venv's size minus an empty venv's, and the number of distributions.

    uv run python -m tests.perf.install_footprint [--only md-vision,markfetch] [--repeat 1]

Needs the package index (PyPI or a mirror); network time is part of the figure, so run it twice
and read the lower one. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LOCAL = {
    "md-vision": "tools/md_vision",
    "markfetch": "tools/markfetch",
    "vision-bridge": "tools/vision_bridge",
    "docab": ".",
}
REFERENCE = "mcp-server-fetch"


def folder_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            file = Path(root) / name
            if not file.is_symlink():
                total += file.stat().st_size
    return total


def build_wheels(out: Path) -> dict[str, Path]:
    """Wheels of the guard and every local distribution, built from this checkout."""
    wheels: dict[str, Path] = {}
    for name, folder in {"docab-mcpguard": "tools/mcpguard", **LOCAL}.items():
        subprocess.run(
            ["uv", "build", "--wheel", "--out-dir", str(out), str(REPO / folder)],
            check=True,
            capture_output=True,
        )
        stem = name.replace("-", "_")
        wheels[name] = next(out.glob(f"{stem}-*.whl"))
    return wheels


def measure(requirements: list[str], python: str) -> tuple[float, int, int]:
    with tempfile.TemporaryDirectory() as scratch:
        venv = Path(scratch) / "venv"
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        pip = venv / "bin" / "pip"
        # A current pip, as a user gets from `python -m venv --upgrade-deps` (pip 23 trips over a
        # repeated extra in trafilatura's lxml requirement); not timed.
        subprocess.run(
            [str(pip), "install", "--quiet", "--upgrade", "pip", "--disable-pip-version-check"],
            check=True,
            stderr=subprocess.DEVNULL,
        )
        empty = folder_size(venv)
        started = time.perf_counter()
        subprocess.run(
            [str(pip), "install", "--quiet", "--no-cache-dir", "--disable-pip-version-check", *requirements],
            check=True,
            stderr=subprocess.DEVNULL,  # index warnings; a failure still raises
        )
        seconds = time.perf_counter() - started
        listed = subprocess.run(
            [str(pip), "list", "--format", "freeze", "--disable-pip-version-check"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        return seconds, folder_size(venv) - empty, len(listed)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", help="comma-separated distributions (default: all, and the reference)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    names = [*LOCAL, REFERENCE] if not args.only else args.only.split(",")
    python = shutil.which("python3.11") or sys.executable
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; "
        f"{python} ({platform.python_version()}), current pip without cache"
    )
    with tempfile.TemporaryDirectory() as out:
        wheels = build_wheels(Path(out))
        print(f"{'distribution':<18} {'seconds':>8} {'MB':>8} {'packages':>9}")
        for name in names:
            if name == REFERENCE:
                requirements = [REFERENCE]
            else:
                requirements = [str(wheels[name])]
                if name != "docab-mcpguard":
                    requirements.append(str(wheels["docab-mcpguard"]))
                if name == "docab":
                    requirements += [str(wheels[n]) for n in ("md-vision", "markfetch", "vision-bridge")]
            for _ in range(args.repeat):
                seconds, size, count = measure(requirements, python)
                print(f"{name:<18} {seconds:>8.1f} {size / 1e6:>8.1f} {count:>9}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
