"""The error md-vision's image layers share: :mod:`md_vision.imaging` (decoding, limits) and
:mod:`md_vision.sandbox` (the isolated SVG renderer) both refuse an image with it, and the service
turns it into a one-line note in place of that image. Below both, so neither imports the other
for it.
"""

from __future__ import annotations


class ImageRejected(Exception):
    """The image cannot be shown; ``str()`` is the reason, one short clause."""
