"""Is a target's mean prediction off the eval positive rate by more than an auction tolerates, beyond doubt?

Calibration is mean prediction / eval positive rate; in an auction a predicted rate 5% too high is a bid 5% too
high. A target's calibration is a finding when its mean over the runs is more than `CALIBRATION_TOLERANCE` (5%)
from 1 and its 95% interval (`components.evaluate.calibration_interval`: the runs' spread and the eval labels'
binomial spread) excludes 1 — off, and not by the chance of a small eval split. The finding says how much of it
the base rate's move between the train and the eval split explains (a model that learned the train rate predicts
about `train rate / eval rate` of the eval rate) and names the settings that change it.

A feature whose eval values the train split mostly never had (`BenchmarkSummary.mostly_unseen_features`, e.g. a
day_of_week over fewer train days than a week) is named as a cause: its untrained embedding rows move every such
prediction, and no calibration step fitted on train days sees that.

With a calibration step (`training.calibration`), the findings also say what the step did on the eval split, and
when it hurt (raised eval log-loss) or was skipped in a run (it did not lower log-loss on held-out examples), what
to set instead.
"""

from __future__ import annotations

from components.contracts.benchmark_summary import BenchmarkSummary, TaskFloor, TaskStats
from components.display_tables import Table

CALIBRATION_TOLERANCE = 0.05
SETTINGS_WITHOUT_STEP = (
    "training.calibration: intercept (or platt) fits a correction of the log-odds on held-out train examples, kept "
    "only where it lowers held-out log-loss (training.calibration_data and split.calibration_days choose which "
    "examples); training.output_bias: label_rate starts each task at its train rate; a run too short to settle "
    "(training.epochs, training.learning_rate) can leave the output off its rate")
SETTINGS_WITH_STEP = (
    "training.calibration_data (holdout, or latest_train_days with split.calibration_days: the most recent days' "
    "rate), training.calibration_shrinkage_positives (how far a fit on few positives moves), or training."
    "calibration: none when the step does not transfer to the next day")


def shift_ratio(train_rate: float, eval_rate: float) -> float:
    """The calibration a model that learned the train split's rate shows on the eval split: train / eval rate."""
    return train_rate / eval_rate if eval_rate > 0 else 1.0


def explained_band(train_rate: float, eval_rate: float) -> tuple[float, float]:
    """The calibration range the base-rate shift explains: [min(1, shift), max(1, shift)], shift = train/eval."""
    shift = shift_ratio(train_rate, eval_rate)
    return min(1.0, shift), max(1.0, shift)


def miscalibration(target: str, task: str, stats: TaskStats, floor: TaskFloor,
                   unseen: dict[str, float] | None = None) -> str | None:
    """The finding for one target and task when its calibration is off by more than the tolerance and its
    interval excludes 1; None otherwise. `unseen`: features whose eval values are mostly never seen in train
    (`BenchmarkSummary.mostly_unseen_features`), named as a cause: every such eval example is scored through an
    untrained embedding row, which moves the output by whatever the model makes of it."""
    value, interval = stats.calibration.mean, stats.calibration_ci95
    if abs(value - 1) <= CALIBRATION_TOLERANCE or interval is None or interval[0] <= 1 <= interval[1]:
        return None
    low, high = explained_band(floor.train_positive_rate, floor.eval_positive_rate)
    shift = shift_ratio(floor.train_positive_rate, floor.eval_positive_rate)
    rates = f"train rate {floor.train_positive_rate:.3%}, eval rate {floor.eval_positive_rate:.3%}"
    if low * (1 - CALIBRATION_TOLERANCE) <= value <= high * (1 + CALIBRATION_TOLERANCE) and abs(shift - 1) > \
            CALIBRATION_TOLERANCE:
        cause = f"the base rate's move between the splits explains it ({rates}: a model of the train rate gives {shift:.2f}×)"
    else:
        cause = f"beyond what the base rate's move between the splits explains ({rates}: {shift:.2f}×)"
    if unseen:
        cause += "; " + unseen_cause(unseen)
    verb = "over-predicts" if value > 1 else "under-predicts"
    settings = SETTINGS_WITH_STEP if stats.calibration_method else SETTINGS_WITHOUT_STEP
    if unseen:
        settings = (f"drop {', '.join(repr(name) for name in sorted(unseen))} from `features` or train on logs that "
                    f"cover their values (dropped on two click-log stand-ins: calibration 0.55 → 1.01 and log-loss "
                    f"4.1% lower at 0.2% positives, 0.88 → 0.96 and 1.3% higher at 16%); {settings}")
    return (f"{target}/{task}: {verb} — mean prediction is {value:.2f}× the eval rate (95% interval "
            f"{interval[0]:.2f}–{interval[1]:.2f} over {stats.calibration.n} run(s) and the eval labels' binomial "
            f"spread), more than {CALIBRATION_TOLERANCE:.0%} off; {cause}. What to set: {settings}.")


def unseen_cause(unseen: dict[str, float]) -> str:
    """The clause naming features whose eval values train never saw, as a cause of miscalibration."""
    named = ", ".join(f"'{name}' on {share:.0%}" for name, share in sorted(unseen.items()))
    return (f"feature values the train split never had ({named} of eval examples) are scored through untrained "
            "embedding rows, a shift a calibration step fitted on train days cannot see (on a click log, a day_of_week "
            "over 3 train days: the same models scored the eval day 0.86 and 0.78 of its rate, and 1.02 and 0.90 "
            "with a train day's value in its place; docs/quality.md)")


def calibration_findings(summary: BenchmarkSummary) -> list[str]:
    lines = []
    for target in summary.targets.values():
        for task, stats in target.tasks.items():
            finding = miscalibration(target.name, task, stats, summary.tasks[task], summary.mostly_unseen_features)
            if finding:
                lines.append(finding)
            value = stats.calibration.mean
            if stats.uncalibrated_calibration is not None and stats.uncalibrated_logloss is not None:
                before, after = stats.uncalibrated_logloss.mean, stats.logloss.mean
                line = (f"{target.name}/{task}: the {stats.calibration_method or ''} calibration step moved mean "
                        f"prediction / eval rate {stats.uncalibrated_calibration.mean:.3f} → {value:.3f} and log-loss "
                        f"{before:.5f} → {after:.5f}")
                backtests = [r.calibration_backtest[task] for r in summary.runs
                             if r.target == target.name and task in r.calibration_backtest]
                if backtests:
                    line += f"; the day-ahead backtest {backtests[0]}"
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
