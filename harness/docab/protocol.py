"""The fixed names of the task every policy plays, shared by the agent loop and the offline
baseline policy (:mod:`docab.models.baseline`): the answer tool, the benchmark's "not answerable"
answer, and the corpus layout the evidence tracker reads (one ``document/document.md`` per
document, a ``## Page N`` heading before each page's text).

Part of the harness's ground floor: it imports nothing of docab.
"""

from __future__ import annotations

import re

NOT_ANSWERABLE = "Not answerable"  # the benchmark's exact string (its F1 counts it case-sensitively)
SUBMIT_TOOL_NAME = "submit_answer"
DOCUMENT_FILE = "document/document.md"
PAGE_HEADING = re.compile(r"^##\s+Page\s+(\d+)\s*$")
PROSE_FALLBACK_AFTER = 2  # the default of a config's answer.prose_fallback_after
