"""How many scans a JPEG holds, read from its markers before anything is decoded. Pure.

A progressive JPEG is decoded in passes, one per scan, and each pass goes over the whole image.
An ordinary one has about ten scans; nothing in the format stops a file from repeating a scan: a
0.5 MB, 7,000 x 7,000 JPEG (under every size and pixel limit) with one scan repeated 1,000 times
took 33 s of CPU to decode, on a thread that cannot be stopped. libjpeg-turbo names the attack and
gives its applications a scan limit; Pillow does not pass one on, so the servers count first
(md-vision's images, vision-bridge's inputs).
"""

from __future__ import annotations

# Far above any encoder's script (libjpeg's default progression has 10 scans for colour, 6 for
# grey; mozjpeg's optimised ones about as many), and a bound on the cost: at the 50-megapixel
# limit a scan costs about 33 ms here, so the worst JPEG that passes decodes in about 3 s.
MAX_SCANS = 100

_SOS, _EOI = 0xDA, 0xD9


def scan_count(data: bytes, stop_after: int = MAX_SCANS) -> int:
    """The start-of-scan markers of the JPEG ``data``, counted up to ``stop_after + 1``.

    Segments are skipped by their declared length, so bytes inside metadata (an EXIF thumbnail,
    an ICC profile) are never read as markers; in entropy-coded data a 0xFF byte is always
    followed by 0x00 (a stuffed byte), a restart marker or the next real marker."""
    count, at, end = 0, 2, len(data)
    while count <= stop_after:
        at = data.find(b"\xff", at)
        if at < 0 or at + 1 >= end:
            break
        marker = data[at + 1]
        if marker == 0x00 or 0xD0 <= marker <= 0xD7 or marker == 0xFF:  # stuffing, restart, fill
            at += 1
            continue
        if marker == _EOI or at + 4 > end:
            break
        if marker == _SOS:
            count += 1
        at += 2 + int.from_bytes(data[at + 2 : at + 4], "big")  # the segment; a scan's data follows
    return count
