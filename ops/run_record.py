"""`run.json`: the record of one local DAG run, read by `adrank runs list|show|compare`."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

RUN_FILE = "run.json"


class RunRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    config_name: str
    config_source: str
    config_hash: str
    started: dt.datetime
    finished: dt.datetime | None = None
    status: Literal["running", "succeeded", "failed"]
    failed_step: str | None = None
    failure_reason: str | None = None
    best_logloss: float | None = None
    best_target: str | None = None

    def write(self, run_dir: Path) -> Path:
        path = run_dir / RUN_FILE
        path.write_text(self.model_dump_json(indent=2))
        return path

    @classmethod
    def read(cls, run_dir: Path) -> RunRecord:
        return cls.model_validate_json((run_dir / RUN_FILE).read_text())

    def attach_summary(self, summary_path: Path) -> None:
        summary = json.loads(summary_path.read_text())
        best = summary.get("best_run") or {}
        self.best_logloss = best.get("logloss")
        self.best_target = best.get("target")
