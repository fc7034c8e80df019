"""Is a target's mean prediction off by more than the shift of the base rate between train and eval explains?

A model that learned the train split's rate predicts on average about `train rate`; if the eval day's rate
differs, its calibration (mean prediction / eval rate) lands near `train rate / eval rate` without being wrong
about anything it could know. So the explained band is between 1 (perfectly tracking the eval rate) and that
shift ratio; a target's mean calibration more than `CALIBRATION_TOLERANCE` (10%) outside the band is a finding:
in an auction a predicted rate 10% too high is a bid 10% too high.
"""

from __future__ import annotations

from components.report.benchmark import BenchmarkSummary
from components.report.table import Table

CALIBRATION_TOLERANCE = 0.10


def explained_band(train_rate: float, eval_rate: float) -> tuple[float, float]:
    """The calibration range the base-rate shift explains: [min(1, shift), max(1, shift)], shift = train/eval."""
    shift = train_rate / eval_rate if eval_rate > 0 else 1.0
    return min(1.0, shift), max(1.0, shift)


def calibration_findings(summary: BenchmarkSummary) -> list[str]:
    lines = []
    for target in summary.targets.values():
        for task, stats in target.tasks.items():
            floor = summary.tasks[task]
            low, high = explained_band(floor.train_positive_rate, floor.eval_positive_rate)
            value = stats.calibration.mean
            band = f"train rate {floor.train_positive_rate:.3%}, eval rate {floor.eval_positive_rate:.3%}"
            if value > high * (1 + CALIBRATION_TOLERANCE):
                lines.append(f"{target.name}/{task}: over-predicts — mean prediction is {value:.2f}× the eval rate, "
                             f"{value / high - 1:.0%} beyond what the base-rate shift explains ({band}).")
            elif value < low * (1 - CALIBRATION_TOLERANCE):
                lines.append(f"{target.name}/{task}: under-predicts — mean prediction is {value:.2f}× the eval rate, "
                             f"{1 - value / low:.0%} beyond what the base-rate shift explains ({band}).")
            if stats.uncalibrated_calibration is not None and stats.uncalibrated_logloss is not None:
                lines.append(
                    f"{target.name}/{task}: the {stats.calibration_method or ''} calibration step moved mean "
                    f"prediction / eval rate {stats.uncalibrated_calibration.mean:.3f} → {value:.3f} and log-loss "
                    f"{stats.uncalibrated_logloss.mean:.5f} → {stats.logloss.mean:.5f}."
                )
    return lines


def reliability_table(summary: BenchmarkSummary) -> Table | None:
    """Per target and task, each bin's mean prediction vs observed rate (mean over runs); None without curves."""
    rows = []
    for target in summary.targets.values():
        for task, stats in target.tasks.items():
            for index, (predicted, observed, examples) in enumerate(stats.reliability):
                ratio = f"{predicted / observed:.2f}" if observed > 0 else "—"
                rows.append([target.name, task, str(index + 1), f"{examples:,}", f"{predicted:.5f}", f"{observed:.5f}",
                             ratio])
    if not rows:
        return None
    return Table(["target", "task", "bin", "examples", "mean prediction", "observed rate", "predicted / observed"],
                 rows)
