"""Errors of the benchmark side whose message is fit to show a user as is."""

from __future__ import annotations


class DataError(Exception):
    """Question data or documents that cannot be read: missing file, bad literal, unknown source."""
