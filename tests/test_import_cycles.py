"""No import circles (issue 27): no two modules of the harness, the benchmark, the servers or the
guard import each other, directly or through others, lazy imports included; and import-linter's
contracts (pyproject.toml), which CI also runs as ``uv run lint-imports``, hold."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.import_graph import circles, import_graph, module_files
from tests.test_layering import PACKAGES

REPO = Path(__file__).resolve().parents[1]


def test_no_module_imports_itself_through_others() -> None:
    graph = import_graph(module_files(PACKAGES))
    assert len(graph) > 150  # every package was read
    assert circles(graph) == []


def test_a_circle_through_a_lazy_import_is_found(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text("def f():\n    from .. import c\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.a\n")
    (package / "d.py").write_text("import pkg.a\n")  # imports into the circle, not part of it
    assert circles(import_graph(module_files({"pkg": package}))) == [["pkg.a", "pkg.c", "pkg.sub.b"]]


def test_the_import_linter_contracts_hold() -> None:
    lint_imports = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint_imports is None:
        pytest.fail("lint-imports is missing: it comes with the dev group (uv sync --locked)")
    done = subprocess.run(
        [lint_imports, "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout
