"""The front door and the documentation site (issue 27 item 3): a short README whose links resolve,
and a docs/ folder that mkdocs builds (the build itself runs in CI: `uv run mkdocs build --strict`)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\((?!https?://|#|mailto:)([^)\s#]+)")


def test_the_readme_is_a_front_page_of_at_most_250_lines() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250
    assert "uv run pytest" in "\n".join(lines)  # the test command CI runs (.ci/run)


def test_every_relative_link_of_the_readme_and_the_docs_resolves() -> None:
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    for page in pages:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            assert (page.parent / target).exists(), f"{page.relative_to(REPO)} links to missing {target}"


def test_every_docs_page_is_in_the_sites_navigation() -> None:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)  # mkdocs' !!python tags
    config = yaml.load((REPO / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)

    def files(nav: object) -> list[str]:
        if isinstance(nav, str):
            return [nav]
        if isinstance(nav, list):
            return [f for item in nav for f in files(item)]
        if isinstance(nav, dict):
            return [f for value in nav.values() for f in files(value)]
        return []

    listed = set(files(config["nav"]))
    pages = {str(p.relative_to(REPO / "docs")) for p in (REPO / "docs").rglob("*.md")}
    assert pages == listed
    assert config["strict"] is True
