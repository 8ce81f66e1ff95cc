"""Pages built to make the renderer slow or its output huge (red-team pass 5 on extraction).

Each size is chosen so that the fixed code takes well under a second and the old, quadratic code
minutes: a test that finishes shows linear work (none of them measures time).
"""

from __future__ import annotations

from lxml import html

from markfetch.markdown import html_to_markdown


def md(fragment: str, *, base_url: str | None = None) -> str:
    return html_to_markdown(html.fragment_fromstring(fragment, create_parent="div"), base_url=base_url)


def test_blank_lines_in_a_code_block_cost_linear_time() -> None:
    # The fence search rescanned a run of blank lines from each of its line starts (40,000 lines:
    # 8.3 s holding the GIL); 200,000 take minutes.
    out = md("<pre>```x" + "\n" * 200_000 + "y</pre>")
    assert out == "````\n```x\n\ny\n````\n"


def test_a_fence_indented_by_blank_lines_is_not_a_fence_run() -> None:
    # Only spaces and tabs indent a fence line; the backticks after blank lines still count.
    assert md("<pre>a\n\n  ```\nb</pre>") == "````\na\n\n  ```\nb\n````\n"
