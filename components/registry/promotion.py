"""The promotion rule, shared by the local registry and the Vertex Model Registry.

A daily run's best model is always registered as a new version (with its evaluation). It becomes
the default version only if its log-loss is not worse than the current default's by more than
`promotion.logloss_tolerance`: `new <= current + tolerance`. With no default yet, it becomes the default.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Candidate:
    """The best run of one pipeline run, read from the report's `summary_json`."""

    pipeline: str
    config_hash: str
    primary_task: str
    target: str
    run_index: int
    logloss: float
    model_uri: str
    auc: float | None = None


@dataclass(frozen=True)
class PromotionDecision:
    model: str
    version: str
    is_default: bool
    logloss: float
    previous_default_logloss: float | None
    tolerance: float
    reason: str

    def write(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(asdict(self), indent=2))


def decide(logloss: float, current_default_logloss: float | None, tolerance: float) -> tuple[bool, str]:
    """(becomes default?, why) for a new version with `logloss` against the current default's."""
    if current_default_logloss is None:
        return True, "no default version yet"
    limit = current_default_logloss + tolerance
    if logloss <= limit:
        return True, f"log-loss {logloss:.5f} <= default {current_default_logloss:.5f} + tolerance {tolerance:g}"
    return False, f"log-loss {logloss:.5f} > default {current_default_logloss:.5f} + tolerance {tolerance:g}"


class NoExportedModel(ValueError):
    """No run of the pipeline exported a model (e.g. only TPU runs), so there is nothing to register."""


def read_candidate(summary_json: str | Path) -> Candidate:
    """The best run that exported a model, from the report's summary JSON (`best_exported_run`, else
    `best_run` when it has a `model_uri`: {target, run_index, model_uri, logloss}). A run without a model
    (TPU runs export none) is never promoted, even when its log-loss is the best."""
    summary = json.loads(Path(summary_json).read_text())
    best = summary.get("best_exported_run")
    if best is None and "best_exported_run" not in summary and (summary.get("best_run") or {}).get("model_uri"):
        best = summary["best_run"]  # a summary written before `best_exported_run` existed
    if best is None or not best.get("model_uri"):
        raise NoExportedModel(
            f"{summary_json}: no training run exported a model; nothing to promote"
        )
    auc = None
    for run in summary.get("runs", []):
        if (run.get("target"), run.get("run_index")) == (best["target"], best["run_index"]):
            auc = run.get("auc", {}).get(summary.get("primary_task", ""))
    return Candidate(
        pipeline=summary.get("pipeline", ""),
        config_hash=summary.get("config_hash", ""),
        primary_task=summary.get("primary_task", ""),
        target=best["target"],
        run_index=int(best["run_index"]),
        logloss=float(best["logloss"]),
        model_uri=best["model_uri"],
        auc=auc,
    )
