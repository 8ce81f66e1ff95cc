"""The arrows of the architecture run one way (docs/architecture.md): checked on every import
statement, including the lazy ones inside functions.

- a server imports only itself and the guard: no other server, no benchmark, no harness;
- the guard imports no server;
- the benchmark (``docab_benchmark``) imports no harness, so it is usable alone;
- inside the harness, only ``docab.cli`` (and ``python -m docab``) may import ``docab.cli``.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = {
    "docab_mcpguard": REPO / "tools" / "mcpguard" / "docab_mcpguard",
    "md_vision": REPO / "tools" / "md_vision" / "md_vision",
    "markfetch": REPO / "tools" / "markfetch" / "markfetch",
    "vision_bridge": REPO / "tools" / "vision_bridge" / "vision_bridge",
    "docab_benchmark": REPO / "benchmark" / "docab_benchmark",
    "docab": REPO / "harness" / "docab",
}
SERVERS = {"md_vision", "markfetch", "vision_bridge"}
FIRST_PARTY = set(PACKAGES)


def imports_of(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def allowed(package: str, module: str) -> bool:
    top = module.split(".")[0]
    if top not in FIRST_PARTY or top == package:
        return True
    if package in SERVERS:
        return top == "docab_mcpguard"
    if package == "docab_mcpguard":
        return False
    if package == "docab_benchmark":
        return top != "docab"  # the servers are fine (webextract measures markfetch)
    return True  # the harness uses everything below it


def test_imports_follow_the_architecture() -> None:
    wrong = []
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            for line, module in imports_of(path):
                if not allowed(package, module):
                    wrong.append(f"{path.relative_to(REPO)}:{line} imports {module}")
    assert not wrong, "imports against the architecture:\n" + "\n".join(wrong)


def test_only_the_cli_imports_the_cli() -> None:
    cli = PACKAGES["docab"] / "cli"
    wrong = []
    for path in sorted(PACKAGES["docab"].rglob("*.py")):
        if cli in path.parents or path.name == "__main__.py":  # ``python -m docab`` is a face too
            continue
        for line, module in imports_of(path):
            if module == "docab.cli" or module.startswith("docab.cli."):
                wrong.append(f"{path.relative_to(REPO)}:{line} imports {module}")
    assert not wrong, "library code importing the CLI faces:\n" + "\n".join(wrong)


def test_the_checker_sees_lazy_imports(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from docab.cli.errors import CommandError\n")
    assert imports_of(module) == [(2, "docab.cli.errors")]
    assert not allowed("docab_benchmark", "docab.cli.errors")
    assert not allowed("md_vision", "markfetch.extract")
    assert allowed("md_vision", "docab_mcpguard.paths")
