"""BodyDecoder: every coding and stack round-trips, in bounded pieces, and refuses what it must."""

from __future__ import annotations

import os
import zlib

import pytest

from docab_mcpguard.decoding import MAX_CODINGS, STEP, BodyDecoder, UndecodableBody, parse_codings
from tests.support.bombs import encode, zeros_in, zstd

CODINGS = ("gzip", "deflate", "br", "zstd")
# brotli's output limit stops the buffer growing once it is reached, so a piece may pass the step
# by one growth of brotli's buffer; every other coding stops exactly at it.
SLACK = 64 * 1024


def decode_all(
    body: bytes, header: str, *, feed: int = 1000, stop_after: int | None = None
) -> tuple[bytes, int]:
    """Decode ``body`` fed in ``feed``-byte chunks; the bytes and the largest piece seen."""
    decoder = BodyDecoder(header)
    out: list[bytes] = []
    largest = total = 0
    for start in range(0, len(body), feed):
        decoder.feed(body[start : start + feed])
        while piece := decoder.pull():
            out.append(piece)
            largest = max(largest, len(piece))
            total += len(piece)
            if stop_after is not None and total > stop_after:
                return b"".join(out), largest
    decoder.finish()
    return b"".join(out), largest


@pytest.fixture(scope="module")
def text() -> bytes:
    return os.urandom(50_000) + b"markdown " * 40_000 + os.urandom(30_000)


@pytest.mark.parametrize("coding", CODINGS)
def test_each_coding_round_trips(coding: str, text: bytes) -> None:
    decoded, largest = decode_all(encode(coding, text), coding)
    assert decoded == text
    assert largest <= STEP + SLACK


@pytest.mark.parametrize("outer", CODINGS)
@pytest.mark.parametrize("inner", CODINGS)
def test_two_stacked_codings_round_trip(inner: str, outer: str, text: bytes) -> None:
    body = encode(outer, encode(inner, text))
    assert decode_all(body, f"{inner}, {outer}")[0] == text


def test_more_layers_than_allowed_are_refused_before_any_decoding() -> None:
    assert MAX_CODINGS == 2
    with pytest.raises(UndecodableBody, match="encoded 3 times"):
        BodyDecoder("gzip, gzip, gzip")


def test_identity_unknown_and_aliases() -> None:
    assert parse_codings("identity") == []
    assert parse_codings(" X-GZip , br ") == ["gzip", "br"]
    assert parse_codings("utf-8, gzip") == ["gzip"]  # unknown codings pass through, like browsers
    assert decode_all(b"plain", "")[0] == b"plain"
    assert decode_all(encode("gzip", b"zipped"), "bogus, gzip")[0] == b"zipped"


def test_raw_deflate_and_concatenated_gzip_members_and_zstd_frames() -> None:
    raw = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    assert decode_all(raw.compress(b"raw deflate") + raw.flush(), "deflate")[0] == b"raw deflate"
    members = encode("gzip", b"one ") + encode("gzip", b"two")
    assert decode_all(members, "gzip", feed=7)[0] == b"one two"
    frames = encode("zstd", b"one ") + encode("zstd", b"two")
    assert decode_all(frames, "zstd", feed=5)[0] == b"one two"


def _fed_in_two(body: bytes, cut: int, header: str = "gzip") -> bytes:
    """Decode ``body`` handed over in two reads, split at ``cut``."""
    decoder = BodyDecoder(header)
    out = b""
    for chunk in (body[:cut], body[cut:]):
        decoder.feed(chunk)
        while piece := decoder.pull():
            out += piece
    decoder.finish()
    return out


def test_gzip_members_split_at_any_read_boundary_all_come_through() -> None:
    """A member that ended exactly where a read ended (or one byte into the next member's magic)
    once ended the body there: half a document and no error."""
    first, second = encode("gzip", b"the first half, "), encode("gzip", b"and the second")
    members = first + second
    for cut in range(len(members) + 1):
        assert _fed_in_two(members, cut) == b"the first half, and the second", cut


def test_what_follows_the_last_gzip_member_is_ignored_wherever_it_is_cut() -> None:
    body = encode("gzip", b"the page") + b"\x00\x00trailing junk"
    for cut in range(len(body) + 1):
        assert _fed_in_two(body, cut) == b"the page", cut
    one_byte = encode("gzip", b"the page") + b"\x1f"  # a lone first byte of a magic number
    assert _fed_in_two(one_byte, len(one_byte) - 1) == b"the page"


@pytest.mark.parametrize("coding", CODINGS)
def test_corrupt_data_is_an_error(coding: str) -> None:
    body = bytearray(encode(coding, b"".join(b"line %d of the page\n" % n for n in range(20_000))))
    body[len(body) // 3 :] = b"\xff" * (len(body) - len(body) // 3)
    with pytest.raises(UndecodableBody, match=r"corrupt|ends early"):
        decode_all(bytes(body), coding)


@pytest.mark.parametrize("coding", CODINGS)
def test_a_truncated_stream_is_an_error_not_half_a_document(coding: str) -> None:
    body = encode(coding, b"".join(b"line %d of the page\n" % n for n in range(20_000)))
    with pytest.raises(UndecodableBody, match=f"the {coding} data ends early"):
        decode_all(body[: len(body) // 2], coding)
    assert decode_all(b"", coding)[0] == b""  # an empty body is complete


def test_a_zstd_frame_asking_for_a_huge_window_is_refused() -> None:
    params = {zstd.CompressionParameter.window_log: 27}  # 128 MB, over RFC 9659's 8 MB for HTTP
    compressor = zstd.ZstdCompressor(options=params)  # streamed: the frame declares the whole window
    body = compressor.compress(bytes(1 << 20)) + compressor.flush()
    with pytest.raises(UndecodableBody, match="zstd"):
        decode_all(body, "zstd")


@pytest.mark.parametrize("coding", CODINGS)
def test_a_bomb_comes_out_in_bounded_pieces(coding: str) -> None:
    # 256 MiB of zeros: each pull gives one bounded piece, so a caller can stop at its cap.
    body = zeros_in(coding, 256 << 20)
    decoded, largest = decode_all(body, coding, feed=len(body), stop_after=5_000_000)
    assert 5_000_000 < len(decoded) <= 5_000_000 + STEP + SLACK
    assert largest <= STEP + SLACK
