"""Run the docab Inspect task with Inspect's ``mockllm`` model driven by a scripted policy.

    python -m tests.harness.inspect_mock_run LIMIT LOG_DIR=CONFIG:ARM[,ARM...] [LOG_DIR=CONFIG:ARM...]

The policy reads the document once (md-vision's ``read_md_with_images`` when the arm has it, else
``read_file``), then answers: with ``submit_answer`` under the submit_tool protocol, in plain text
under extraction (where the same mock, as the ``grader`` role, replies in the extraction prompt's
format). Every output states its usage, so mockllm need not count tokens (that needs tiktoken's
encoding files, downloaded on first use). Each LOG_DIR gets one log per arm of its CONFIG (a
shipped name or a TOML path). Prints one line per log: its path.

A separate process keeps Inspect's global state (registry, display, event loop) out of pytest's.
"""

from __future__ import annotations

import sys

from inspect_ai import eval as inspect_eval
from inspect_ai.model import (
    ChatMessage,
    ChatMessageTool,
    GenerateConfig,
    ModelOutput,
    ModelUsage,
    get_model,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from docab.interchange.inspect_task import mmlongbench_doc

ANSWER = "Not answerable"


def policy(
    messages: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice, config: GenerateConfig
) -> ModelOutput:
    names = {t.name for t in tools}
    results = sum(isinstance(m, ChatMessageTool) for m in messages)
    first = str(messages[0].content) if messages else ""
    if not tools and "Extracted answer" in first:  # the extractor (grader role)
        output = ModelOutput.from_content(
            "mockllm/model", f"Extracted answer: {ANSWER}\nAnswer format: String"
        )
    elif results == 0 and "read_md_with_images" in names:
        output = ModelOutput.for_tool_call(
            "mockllm/model", "read_md_with_images", {"uri": "document/document.md", "section": "## Page 1"}
        )
    elif results == 0:
        output = ModelOutput.for_tool_call(
            "mockllm/model", "read_file", {"path": "document/document.md", "limit": 40}
        )
    elif "submit_answer" in names:
        output = ModelOutput.for_tool_call(
            "mockllm/model", "submit_answer", {"status": "not_answerable", "answer": ""}
        )
    else:
        output = ModelOutput.from_content("mockllm/model", "The document does not say: not answerable.")
    output.usage = ModelUsage(
        input_tokens=100 + 50 * results, output_tokens=12, total_tokens=112 + 50 * results
    )
    return output


def main(argv: list[str]) -> int:
    limit, *groups = argv
    model = get_model("mockllm/model", custom_outputs=policy)
    ok = True
    for group in groups:
        log_dir, _, spec = group.partition("=")
        config, _, arms = spec.rpartition(":")
        logs = inspect_eval(
            [mmlongbench_doc(config=config, arm=arm) for arm in arms.split(",")],
            model=model,
            model_roles={"grader": model},
            limit=int(limit),
            log_dir=log_dir,
            display="none",
        )
        for log in logs:
            print(log.location)
        ok = ok and all(log.status == "success" for log in logs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
