"""What the report compares against."""

from __future__ import annotations

from pydantic import Field

from configs.base import StrictModel


class ReportConfig(StrictModel):
    baseline_target: str | None = Field(None, description="target the others are compared to; first target if unset")


class SkippedTarget(StrictModel):
    """A configured target the DAG left out on this backend or machine, and why (the report lists it)."""

    name: str
    kind: str
    reason: str
