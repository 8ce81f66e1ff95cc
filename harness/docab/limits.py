"""What one sample may spend: the ``[limits]`` table of a run config, enforced by the agent loop.

One definition read by both sides: :mod:`docab.config` validates it with the rest of the file, and
:func:`docab.agent.loop.run_agent` checks turns and agent tokens before each model call and bounds
every await by the wall time. A sample that hits a limit is recorded with status ``limit``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class SampleLimits(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_turns: int = Field(default=30, ge=1)  # model calls
    max_tokens: int = Field(default=1_000_000, ge=1)  # agent tokens, input and output, summed over calls
    max_wall_s: float = Field(default=900.0, gt=0)  # seconds for the agent loop (model and tool calls)
    max_output_tokens: int = Field(default=4096, ge=1)  # per model call
