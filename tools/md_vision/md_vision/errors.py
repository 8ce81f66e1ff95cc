"""The error md-vision's image layers share: :mod:`md_vision.imaging` (decoding, limits) and
:mod:`md_vision.sandbox` (the isolated SVG renderer) both refuse an image with it, and the service
turns it into a one-line note in place of that image. Below both, so neither imports the other
for it.
"""

from __future__ import annotations


class ImageRejected(Exception):
    """The image cannot be shown; ``str()`` is the reason, one short clause."""


class UndecodableImage(ImageRejected):
    """A decoder failed on the image (its header or its data). In a decode child under a memory
    cap this may be a failed allocation told as bad data (libwebp): see
    :func:`md_vision.reading.failure_under_cap`."""
