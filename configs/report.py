"""What the report compares against."""

from __future__ import annotations

from pydantic import Field

from configs.base import StrictModel


class ReportConfig(StrictModel):
    baseline_target: str | None = Field(None, description="target the others are compared to; first target if unset")
