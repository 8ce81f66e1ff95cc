"""markfetch's rendering steps on hostile shapes (run with -m perf): time should grow with the
page, not its square. Compare the two sizes' means in the table pytest-benchmark prints: 4x the
runs should take about 4x the time (the string-concatenating merge took 23x: 1.7 s -> 7.3 s for
50,000 -> 100,000 runs, and minutes for a 5 MB page)."""

from __future__ import annotations

import pytest
from lxml import html

from markfetch.markdown import merge_split_emphasis

pytestmark = pytest.mark.perf


@pytest.mark.parametrize("runs", [25_000, 100_000])
def test_merging_touching_emphasis_runs(benchmark, runs: int) -> None:
    source = "<div>" + "<i>x</i>" * runs + "</div>"
    merged = benchmark(lambda: merge_split_emphasis(html.fromstring(source)))
    assert len(merged) == 1 and merged[0].text == "x" * runs
