"""The run's spend meter: every billed model call is reported to it as the call returns.

A sample's record carries what its calls cost, but only once the sample is recorded: calls of a
sample that a kill, a Ctrl-C, the circuit breaker or the spend cap cut short were billed all the
same, and a cap that counted records alone let each interruption spend up to a sample per worker
again. So the provider reports each call (its usable reply, or the billed replies of a call that
failed in the end) to the :data:`METER` of the task making it, which the runner sets per sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from typing import Protocol

from docab.usage import Usage


class SpendCapReached(Exception):
    """A sample's next model call would be made with the run's spend cap already reached: the
    sample stops unrecorded (its calls so far are journaled) and the run stops (see
    :mod:`docab.runner.spend`)."""


class Meter(Protocol):
    def charge(self, usage: Sequence[Usage]) -> None:
        """The tokens one model call was billed (several records for a call retried after
        unusable replies); empty or zero usage costs nothing."""


METER: ContextVar[Meter | None] = ContextVar("spend_meter", default=None)
"""The meter of the sample this task runs (None outside a run: nothing is metered)."""


def charge(usage: Sequence[Usage]) -> None:
    """Report ``usage`` to the current task's meter, if it has one."""
    meter = METER.get()
    if meter is not None and usage:
        meter.charge(usage)
