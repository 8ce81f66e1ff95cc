"""A progressive JPEG with its scans repeated (a "scan bomb") is refused before it is decoded.

Before: a 0.5 MB, 7,000 x 7,000 JPEG with one scan repeated 1,000 times took 33 s of CPU on a
thread nothing could stop, and two of them held the server's threads for everyone.
"""

from __future__ import annotations

import io
import time

import pytest
from PIL import Image

from docab_mcpguard.jpeg import MAX_SCANS, scan_count
from md_vision.errors import ImageRejected
from md_vision.imaging import prepare_image


def progressive(size: tuple[int, int] = (640, 480), **save: object) -> bytes:
    buffer = io.BytesIO()
    Image.effect_noise(size, 40).convert("RGB").save(buffer, "JPEG", progressive=True, quality=90, **save)
    return buffer.getvalue()


def scans_of(data: bytes) -> list[bytes]:
    """Each scan of ``data`` (its SOS segment and the entropy-coded data after it), in order."""
    found, at = [], data.find(b"\xff\xda")
    while at >= 0:
        end = at + 2 + int.from_bytes(data[at + 2 : at + 4], "big")
        while True:  # to the next marker that is not stuffing or a restart
            end = data.find(b"\xff", end)
            if data[end + 1] == 0 or 0xD0 <= data[end + 1] <= 0xD7:
                end += 2
                continue
            break
        found.append(data[at:end])
        at = data.find(b"\xff\xda", end)
    return found


def with_repeated_last_scan(data: bytes, repeats: int) -> bytes:
    last = scans_of(data)[-1]
    cut = data.rindex(b"\xff\xd9")
    return data[:cut] + last * repeats + data[cut:]


def test_an_ordinary_progressive_or_baseline_jpeg_is_counted_and_read() -> None:
    data = progressive()
    assert scan_count(data) == len(scans_of(data)) == 10  # libjpeg's progression for colour
    assert prepare_image(data, name="photo.jpg").source_format == "JPEG"
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), (1, 2, 3)).save(buffer, "JPEG")
    assert scan_count(buffer.getvalue()) == 1


def test_a_scan_bomb_is_refused_before_decoding_with_the_reason() -> None:
    bomb = with_repeated_last_scan(progressive((2000, 2000)), 1_000)
    assert scan_count(bomb) == MAX_SCANS + 1  # it stops counting past the limit
    assert scan_count(bomb, stop_after=10**6) == 1_010
    started = time.process_time()
    with pytest.raises(ImageRejected, match=f"more than {MAX_SCANS} scans"):
        prepare_image(bomb, name="bomb.jpg")
    # No timing assertion: the refusal is before any decoding, as the process time shows here.
    print(f"refused in {time.process_time() - started:.3f} s of CPU")


def test_just_under_the_limit_is_still_read() -> None:
    data = with_repeated_last_scan(progressive((320, 240)), MAX_SCANS - 10)
    assert scan_count(data) == MAX_SCANS
    assert prepare_image(data, name="many-scans.jpg").source_format == "JPEG"


def test_marker_bytes_inside_metadata_are_not_counted() -> None:
    # An APP segment is skipped by its length: start-of-scan bytes in its payload are data.
    data = progressive(icc_profile=b"\xff\xda\x00\x02" * 200)  # an APP2 segment, written as given
    assert data.count(b"\xff\xda") > 200
    assert scan_count(data) == 10
    assert prepare_image(data, name="described.jpg").source_format == "JPEG"
