"""Is a target's mean prediction off by more than the shift of the base rate between train and eval explains?

A model that learned the train split's rate predicts on average about `train rate`; if the eval day's rate
differs, its calibration (mean prediction / eval rate) lands near `train rate / eval rate` without being wrong
about anything it could know. So the explained band is between 1 (perfectly tracking the eval rate) and that
shift ratio; a target's mean calibration more than `CALIBRATION_TOLERANCE` (10%) outside the band is a finding:
in an auction a predicted rate 10% too high is a bid 10% too high.

With a calibration step (`training.calibration`), the findings also say what the step did on the eval split, and
when it hurt (raised eval log-loss) or was skipped in a run (it did not lower log-loss on held-out examples), what
to set instead.
"""

from __future__ import annotations

from components.display_tables import Table
from components.report.summary import BenchmarkSummary

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
            fix = ("" if stats.calibration_method else " training.calibration: intercept fits a shift of the log-odds on a "
                   "held-out slice and is kept only where it lowers held-out log-loss.")
            if value > high * (1 + CALIBRATION_TOLERANCE):
                lines.append(f"{target.name}/{task}: over-predicts — mean prediction is {value:.2f}× the eval rate, "
                             f"{value / high - 1:.0%} beyond what the base-rate shift explains ({band}).{fix}")
            elif value < low * (1 - CALIBRATION_TOLERANCE):
                lines.append(f"{target.name}/{task}: under-predicts — mean prediction is {value:.2f}× the eval rate, "
                             f"{1 - value / low:.0%} beyond what the base-rate shift explains ({band}).{fix}")
            if stats.uncalibrated_calibration is not None and stats.uncalibrated_logloss is not None:
                before, after = stats.uncalibrated_logloss.mean, stats.logloss.mean
                line = (f"{target.name}/{task}: the {stats.calibration_method or ''} calibration step moved mean "
                        f"prediction / eval rate {stats.uncalibrated_calibration.mean:.3f} → {value:.3f} and log-loss "
                        f"{before:.5f} → {after:.5f}")
                if after > before:
                    line += (": it hurt on the eval split; set training.calibration: none, or fit it on a held-out "
                             "slice (training.calibration_data: holdout) instead of the latest train days")
                lines.append(line + ".")
    lines += skipped_steps(summary)
    return lines


def skipped_steps(summary: BenchmarkSummary) -> list[str]:
    """A sentence per target and task whose calibration step some runs fitted but did not keep, with the first
    run's reason (the runs then served the model's own output)."""
    lines = []
    for name in summary.targets:
        runs = [r for r in summary.runs if r.target == name]
        for task in sorted({task for r in runs for task in r.calibration_skipped}):
            skipped = [r for r in runs if task in r.calibration_skipped]
            lines.append(f"{name}/{task}: the calibration step was skipped in {len(skipped)} of {len(runs)} run(s): "
                         f"{skipped[0].calibration_skipped[task]}.")
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
