"""Which samples of a run failed for a reason that is not the model's answer, and why: a pure tally.

A sample with status ``error`` or ``timeout`` did not get a fair try: a model call failed (the
endpoint, the key, the provider), an MCP server did not start, the answer extraction could not
reach its model, or the harness hit a bug. A wrong answer or a limit hit (``limit``) is the
model's own outcome and does not count. An answer extraction whose reply could not be parsed
(status ``ok``, "Failed to extract", score 0) counts too: the model's answer was never judged, so
a misconfigured extractor fails the run instead of passing as a model scoring 0 %
(:func:`counts_as_error`); ``--retry-errors`` runs such samples again. ``docab run`` exits 1 when the errored share exceeds the
run's ``max_error_share`` (0 by default: any errored sample), and prints
:meth:`ErrorTally.summary` as its one-line account.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from docab.log.records import RunRecord

ERRORED = ("error", "timeout")
SHOWN_CAUSES = 3
_RETRIES = re.compile(r" \(after \d+ retries\)")


EXTRACTION_CAUSE = (
    'answer extraction failed: the extractor\'s reply had no answer ("Failed to extract"); '
    "check the [answer] extractor model"
)


def counts_as_error(record: RunRecord) -> bool:
    """An errored or timed-out sample, or one whose answer extraction failed (status ``ok``, score
    0, "Failed to extract"): the model's answer was never judged. These count against
    ``max_error_share`` and are what ``--retry-errors`` runs again."""
    return record.status in ERRORED or record.extraction_failed


def cause_of(record: RunRecord) -> str:
    """The first error of a sample, without its retry count (so equal causes group together)."""
    if record.extraction_failed:
        return EXTRACTION_CAUSE
    for error in record.errors:
        if error.strip():
            return _RETRIES.sub("", error.strip())
    return f"status {record.status} with no error recorded"


@dataclass(frozen=True)
class ErrorTally:
    samples: int
    errored: int
    causes: tuple[tuple[str, int], ...]  # most frequent first

    @property
    def share(self) -> float:
        return self.errored / self.samples if self.samples else 0.0

    def exceeds(self, max_share: float) -> bool:
        """More errored samples than ``max_share`` of the samples allows."""
        return self.errored > max_share * self.samples + 1e-9

    def summary(self, max_share: float) -> str:
        """One line: how many errored, against what was allowed, and the commonest causes."""
        allowed = "none allowed" if max_share == 0 else f"{max_share:.0%} allowed"
        extraction = (
            " or a failed answer extraction" if any(c == EXTRACTION_CAUSE for c, _ in self.causes) else ""
        )
        shown = "; ".join(f"{n} × {cause}" for cause, n in self.causes[:SHOWN_CAUSES])
        more = len(self.causes) - SHOWN_CAUSES
        if more > 0:
            shown += f"; and {more} other cause(s)"
        return (
            f"{self.errored} of {self.samples} samples ({self.share:.0%}) ended in an error or timeout"
            f"{extraction} "
            f"({allowed}): {shown}"
        )


def tally_errors(records: Iterable[RunRecord]) -> ErrorTally:
    """The errored samples of ``records`` (one record per sample: pass the newest of each)."""
    listed = list(records)
    causes = Counter(cause_of(r) for r in listed if counts_as_error(r))
    return ErrorTally(
        samples=len(listed),
        errored=sum(causes.values()),
        causes=tuple(causes.most_common()),
    )
