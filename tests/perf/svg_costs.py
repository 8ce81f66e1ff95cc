"""What resvg costs on the SVG shapes md-vision's pre-check limits (md_vision.imaging.SvgLimits).

    uv run python -m tests.perf.svg_costs

Each SVG is rendered at 400x300 in a child process (md_vision.sandbox.render_isolated, 60 s and
4 GB allowed), so a crash or a long render is a row, not the end of the run; the first rows
compare a small render in-process with the same render in a child (the overhead per image).
"""

from __future__ import annotations

import argparse
import time

from md_vision.errors import ImageRejected
from md_vision.sandbox import RenderLimits, render_isolated

HEAD = '<svg xmlns="http://www.w3.org/2000/svg" width="400" height="300">'
FILTERED = '<rect width="400" height="300" filter="url(#f)"/></svg>'


def _cases() -> list[tuple[str, str]]:
    cases = [("plain rectangle", HEAD + '<rect width="400" height="300" fill="#00f"/></svg>')]
    for depth in (100, 200, 250, 300):
        cases.append((f"{depth} nested <g>", HEAD + "<g>" * depth + "<rect/>" + "</g>" * depth + "</svg>"))
    for count in (1_000, 20_000, 50_000):
        rects = "".join(f'<rect x="{i % 400}" y="{i % 300}" width="3" height="3"/>' for i in range(count))
        cases.append((f"{count:,} <rect>", HEAD + rects + "</svg>"))
    for chars in (1_000, 5_000, 20_000):
        cases.append(
            (
                f"{chars:,} characters of text",
                HEAD + '<text y="20">' + "abcd " * (chars // 5) + "</text></svg>",
            )
        )
    for octaves in (1, 8, 10, 30):
        primitive = f'<feTurbulence baseFrequency="0.05" numOctaves="{octaves}"/>'
        cases.append(
            (f"feTurbulence {octaves} octaves", HEAD + f'<filter id="f">{primitive}</filter>' + FILTERED)
        )
    for radius in (5, 10, 20):
        primitive = f'<feMorphology radius="{radius}"/>'
        cases.append(
            (f"feMorphology radius {radius}", HEAD + f'<filter id="f">{primitive}</filter>' + FILTERED)
        )
    for order in (5, 9, 20):
        kernel = " ".join(["1"] * (order * order))
        primitive = f'<feConvolveMatrix order="{order}" kernelMatrix="{kernel}"/>'
        cases.append(
            (f"feConvolveMatrix order {order}", HEAD + f'<filter id="f">{primitive}</filter>' + FILTERED)
        )
    return cases


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args(argv)
    import resvg_py

    plain = _cases()[0][1]
    started = time.monotonic()
    resvg_py.svg_to_bytes(svg_string=plain, width=400, height=300)
    print(f"{'plain rectangle, in-process':40} {time.monotonic() - started:8.3f} s")
    limits = RenderLimits(seconds=60, memory_bytes=4 << 30)
    render_isolated(plain, 400, 300, limits)  # starts the forkserver
    for label, svg in _cases():
        started = time.monotonic()
        try:
            render_isolated(svg, 400, 300, limits)
            outcome = "rendered"
        except ImageRejected as exc:
            outcome = str(exc)
        print(f"{label + ', in a child':40} {time.monotonic() - started:8.3f} s  {outcome}")


if __name__ == "__main__":
    main()
