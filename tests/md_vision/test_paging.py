"""Results sized for a model (issue 18): the budget arithmetic and index cursors, as pure functions."""

from __future__ import annotations

import pytest

from md_vision.paging import (
    CursorError,
    IndexCursor,
    char_budget,
    decode_cursor,
    estimate_tokens,
    items_that_fit,
    lines_that_fit,
    listing_fingerprint,
    uri_key,
)


def test_tokens_are_characters_over_four() -> None:
    assert estimate_tokens("") == 0 and estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    assert char_budget(25_000) == 100_000


def test_lines_that_fit_stop_at_the_budget_and_always_move_on() -> None:
    assert lines_that_fit([10, 10, 10], 30) == 3  # exactly at the edge: fits
    assert lines_that_fit([10, 10, 10], 29) == 2
    assert lines_that_fit([50, 1], 10) == 1  # one line over the budget is still a page
    assert lines_that_fit([], 10) == 0


def test_items_that_fit() -> None:
    assert items_that_fit([4, 4, 4], 8) == 2
    assert items_that_fit([9], 8) == 1 and items_that_fit([9], 8, at_least_one=False) == 0


def test_cursor_round_trip_and_opacity() -> None:
    cursor = IndexCursor(uri_key("/docs"), listing_fingerprint(["/docs/a.md"]), "detail", 12, 340)
    text = cursor.encode()
    assert "=" not in text and "/" not in text and "+" not in text  # URL- and quote-safe
    assert decode_cursor(text) == cursor
    assert decode_cursor(f"  {text}\n") == cursor


@pytest.mark.parametrize(
    "text",
    ["", "not a cursor", "eyJ2IjoyfQ", "eyJ2IjoxLCJ1IjoiYSIsImwiOiIiLCJwIjoieCIsImYiOjAsInIiOjB9", "%%%"],
)
def test_bad_cursors_are_refused_with_a_way_out(text: str) -> None:
    with pytest.raises(CursorError, match="without a cursor"):
        decode_cursor(text)


def test_a_negative_position_is_not_a_cursor() -> None:
    import base64
    import json

    payload = {"v": 1, "u": "k", "l": "", "p": "o", "f": -1, "r": 0}
    forged = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode()
    with pytest.raises(CursorError):
        decode_cursor(forged)
    payload["f"] = 0
    assert decode_cursor(base64.urlsafe_b64encode(json.dumps(payload).encode()).decode()).file == 0


def test_listing_fingerprint_follows_names_and_order_only() -> None:
    names = ["/d/a.md", "/d/b.md"]
    assert listing_fingerprint(names) == listing_fingerprint(list(names))
    assert listing_fingerprint(names) != listing_fingerprint([*names, "/d/c.md"])
    assert listing_fingerprint(names) != listing_fingerprint(["/d/a.mdx", "/d/b.md"])
    assert listing_fingerprint(names) != listing_fingerprint(list(reversed(names)))
    assert uri_key("/a") != uri_key("/b") and len(uri_key("/a")) == 16
