"""The report step's aggregation: every run of the DAG (its `RunSummary`) aggregated per target and compared with
the baseline into the `BenchmarkSummary` (`components.contracts.benchmark_summary`) that `summary.json` holds.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from components.contracts.benchmark_summary import (
    BenchmarkSummary,
    BestRun,
    EpochsRaised,
    RunRow,
    TargetSummary,
    TaskFloor,
    TaskStats,
)
from components.contracts.manifest import Manifest
from components.contracts.run_summary import RunSummary
from components.contracts.time_split import TimeSplit
from components.evaluate.calibration_interval import calibration_interval
from components.evaluate.run_statistics import describe, welch_test
from components.report.cost import cost_per_million_examples, cost_per_run
from components.report.scaling import scaling_sweeps
from configs.slices import ReportStepConfig


def hardware_label(run: RunSummary) -> str:
    """What the runtime reported, e.g. '1 × CPU' or '4 × GPU (NVIDIA A100-SXM4-40GB)'."""
    hardware = run.hardware
    label = f"{hardware.device_count} × {hardware.device_kind}"
    descriptions = sorted(set(hardware.device_descriptions))
    if descriptions:
        label += f" ({', '.join(descriptions)})"
    return label


def summarize(config: ReportStepConfig, manifest: Manifest, runs: list[RunSummary]) -> BenchmarkSummary:
    """Aggregate the runs per target (in the config's target order) and compare each with the baseline; the
    targets the DAG skipped come from the config slice (`ReportStepConfig.skipped_targets`)."""
    if not runs:
        raise ValueError("the report needs at least one training run")
    primary = manifest.tasks[0]
    by_target: dict[str, list[RunSummary]] = defaultdict(list)
    for run in sorted(runs, key=lambda r: (r.target, r.run_index)):
        by_target[run.target].append(run)
    ordered = [t.name for t in config.targets if t.name in by_target]
    baseline = config.report.baseline_target if config.report.baseline_target in by_target else ordered[0]

    targets = {name: _target_summary(config, name, by_target[name]) for name in ordered}
    base = targets[baseline]
    for name, summary in targets.items():
        if summary.examples_per_second_mean > 0 and base.examples_per_second_mean > 0:
            summary.relative_throughput = summary.examples_per_second_mean / base.examples_per_second_mean
        if summary.cost_per_million_examples_usd is not None and base.cost_per_million_examples_usd:
            summary.relative_cost = summary.cost_per_million_examples_usd / base.cost_per_million_examples_usd
        if name != baseline:
            for task in summary.tasks:
                summary.tasks[task].vs_baseline = welch_test(
                    [r.metrics[task].logloss for r in by_target[name]],
                    [r.metrics[task].logloss for r in by_target[baseline]],
                    other=baseline,
                )

    best = min(runs, key=lambda r: r.metrics[primary].logloss)
    exported = [r for r in runs if r.model_uri]
    best_exported = min(exported, key=lambda r: r.metrics[primary].logloss) if exported else None
    floors = {
        task: TaskFloor(
            bayes_logloss=(manifest.splits["eval"].bayes_logloss or {}).get(task),
            constant_ctr_logloss=manifest.constant_ctr_logloss(task),
            train_positive_rate=manifest.splits["train"].label_rates[task],
            eval_positive_rate=manifest.splits["eval"].label_rates[task],
        )
        for task in manifest.tasks
    }
    return BenchmarkSummary(
        pipeline=config.name,
        config_hash=config.config_hash,
        generated=dt.datetime.now(dt.timezone.utc),
        primary_task=primary,
        baseline_target=baseline,
        bayes_logloss=floors[primary].bayes_logloss,
        constant_ctr_logloss=floors[primary].constant_ctr_logloss,
        train_examples=manifest.splits["train"].examples,
        eval_examples=manifest.splits["eval"].examples,
        tasks=floors,
        targets=targets,
        runs=[_run_row(r) for r in runs],
        best_run=_best(best, primary),
        best_exported_run=_best(best_exported, primary) if best_exported else None,
        dead_letter=dict(manifest.dead_letter),
        mostly_missing_features=dict(manifest.mostly_missing_features),
        mostly_unseen_features=dict(manifest.mostly_unseen_features),
        skipped_targets=list(config.skipped_targets),
        scaling=scaling_sweeps(config.targets, runs, primary),
    )


def _best(run: RunSummary, task: str) -> BestRun:
    return BestRun(target=run.target, run_index=run.run_index, logloss=run.metrics[task].logloss,
                   model_uri=run.model_uri)


def eval_curve(run: RunSummary) -> list[tuple[int, float]]:
    """(epoch, eval log-loss) of every epoch the run evaluated."""
    return [(p.epoch, p.eval_logloss) for p in run.curve if p.epoch is not None and p.eval_logloss is not None]


def mean_eval_curve(runs: list[RunSummary]) -> list[tuple[int, float]]:
    """The eval log-loss per epoch averaged over the runs that evaluated that epoch."""
    by_epoch: dict[int, list[float]] = defaultdict(list)
    for run in runs:
        for epoch, value in eval_curve(run):
            by_epoch[epoch].append(value)
    return [(epoch, sum(values) / len(values)) for epoch, values in sorted(by_epoch.items())]


def learning_rate_note(run: RunSummary) -> str:
    """How the effective learning rate came about, e.g. '0.001 × 1.41 (sqrt batch scaling)'."""
    configured = run.configured_learning_rate
    if not configured or run.learning_rate_scaling in (None, "none") or run.learning_rate == configured:
        return ""
    return f"{configured:g} × {run.learning_rate / configured:.3g} ({run.learning_rate_scaling} batch scaling)"


def embedding_memory_mib(run: RunSummary) -> float | None:
    """Embedding tables + their optimizer slots of one run, MiB (None when the run recorded none)."""
    if not run.embedding_tables:
        return None
    return sum(t.parameter_bytes + t.optimizer_slot_bytes for t in run.embedding_tables) / 2**20


def calibration_step_stats(runs: list[RunSummary], task: str) -> dict:
    """The calibration fields of a target's `TaskStats`: before/after the calibration step when every run had
    one, and the reliability curve averaged bin by bin (runs of a target share the eval split, so bins of
    equal count hold the same number of examples)."""
    stats: dict = {}
    metrics = [r.metrics[task] for r in runs]
    uncalibrated_logloss = [m.uncalibrated_logloss for m in metrics if m.uncalibrated_logloss is not None]
    uncalibrated_calibration = [m.uncalibrated_calibration for m in metrics if m.uncalibrated_calibration is not None]
    if len(uncalibrated_logloss) == len(uncalibrated_calibration) == len(metrics):
        stats["uncalibrated_logloss"] = describe(uncalibrated_logloss)
        stats["uncalibrated_calibration"] = describe(uncalibrated_calibration)
        stats["calibration_method"] = runs[0].calibrators[task].method if task in runs[0].calibrators else None
    curves = [m.reliability for m in metrics if m.reliability]
    if curves and len({len(c) for c in curves}) == 1:
        stats["reliability"] = [
            (sum(c[i][0] for c in curves) / len(curves), sum(c[i][1] for c in curves) / len(curves), curves[0][i][2])
            for i in range(len(curves[0]))
        ]
    return stats
def mean_time_split(runs: list[RunSummary]) -> TimeSplit | None:
    """Each phase's seconds averaged over the runs that recorded a split."""
    splits = [r.time_split for r in runs if r.time_split is not None]
    if not splits:
        return None
    fields = [name for name in TimeSplit.model_fields if name != "steady_steps"]
    mean = {name: sum(getattr(split, name) for split in splits) / len(splits) for name in fields}
    return TimeSplit(**mean, steady_steps=round(sum(split.steady_steps for split in splits) / len(splits)))


def placement_label(run: RunSummary) -> str | None:
    placement = run.table_placement
    if placement is None:
        return None
    return placement.implementation + (f" ({placement.detail})" if placement.detail else "")


def mean_input_stall(runs: list[RunSummary]) -> float | None:
    return _mean_measured([r.input_stall_fraction for r in runs])


def _mean_measured(values: list[float | None]) -> float | None:
    measured = [v for v in values if v is not None]
    return sum(measured) / len(measured) if measured else None


def _target_summary(config: ReportStepConfig, name: str, runs: list[RunSummary]) -> TargetSummary:
    target = config.target(name)
    tasks = {
        task: TaskStats(
            logloss=describe([r.metrics[task].logloss for r in runs]),
            auc=describe([r.metrics[task].auc for r in runs]),
            normalized_entropy=describe([r.metrics[task].normalized_entropy for r in runs]),
            calibration=describe([r.metrics[task].calibration for r in runs]),
            calibration_ci95=calibration_interval([r.metrics[task].calibration for r in runs],
                                                  runs[0].metrics[task].examples, runs[0].metrics[task].positive_rate),
            **calibration_step_stats(runs, task),
        )
        for task in runs[0].metrics
    }
    primary = tasks[next(iter(tasks))]
    throughput = describe([r.examples_per_second for r in runs])
    wall = describe([r.wall_time_seconds for r in runs])
    ci = primary.logloss
    placements = [r.table_placement for r in runs if r.table_placement is not None]
    return TargetSummary(
        name=name,
        kind=target.kind,
        backend=runs[0].backend,
        global_batch_size=runs[0].global_batch_size,
        learning_rate=runs[0].learning_rate,
        learning_rate_note=learning_rate_note(runs[0]),
        eval_curve=mean_eval_curve(runs),
        dropped_steps=max(r.dropped_steps for r in runs),
        epochs_raised=epochs_raised(runs[0]),
        price_per_hour=target.price_per_hour,
        runs=len(runs),
        hardware_seen=sorted({hardware_label(r) for r in runs}),
        logloss_mean=ci.mean,
        logloss_std=ci.std,
        logloss_ci95=(ci.ci95_low, ci.ci95_high) if ci.ci95_low is not None else None,
        auc_mean=primary.auc.mean,
        examples_per_second_mean=throughput.mean,
        examples_per_second_std=throughput.std,
        wall_time_seconds_mean=wall.mean,
        cost_per_run_usd=cost_per_run(target.price_per_hour, wall.mean),
        cost_per_million_examples_usd=cost_per_million_examples(target.price_per_hour, throughput.mean),
        relative_throughput=None,
        relative_cost=None,
        tasks=tasks,
        embedding_memory_mib=embedding_memory_mib(runs[0]),
        input_stall_mean=mean_input_stall(runs),
        input_examples_per_second_mean=_mean_measured([r.input_examples_per_second for r in runs]),
        step_examples_per_second_mean=_mean_measured([r.step_examples_per_second for r in runs]),
        input_format=runs[0].input_format,
        input_cache_mib=max(r.input_cache_bytes for r in runs) / 2**20,
        time_split=mean_time_split(runs),
        table_placement=sorted({label for r in runs if (label := placement_label(r))}),
        tables_on_embedding_hardware=all(p.embedding_hardware for p in placements) if placements else None,
    )


def epochs_raised(run: RunSummary) -> EpochsRaised | None:
    """What the small-split rule did to a target's runs (they share its config, so one run says it)."""
    if run.configured_epochs is None or run.steps_per_epoch is None:
        return None
    return EpochsRaised(configured=run.configured_epochs, epochs=run.epochs, steps_per_epoch=run.steps_per_epoch,
                        min_train_steps=run.min_train_steps)


def _run_row(run: RunSummary) -> RunRow:
    return RunRow(
        target=run.target, run_index=run.run_index, seed=run.seed, hardware=hardware_label(run),
        strategy=run.hardware.strategy.lstrip("_"), replicas=run.hardware.replicas, global_batch_size=run.global_batch_size,
        steps=run.steps, wall_time_seconds=run.wall_time_seconds, examples_per_second=run.examples_per_second,
        input_stall_fraction=run.input_stall_fraction, input_examples_per_second=run.input_examples_per_second,
        step_examples_per_second=run.step_examples_per_second,
        logloss={t: m.logloss for t, m in run.metrics.items()}, auc={t: m.auc for t, m in run.metrics.items()},
        calibration={t: m.calibration for t, m in run.metrics.items()},
        calibration_skipped=dict(run.calibration_skipped), deterministic=run.deterministic,
        calibration_backtest={t: line for t, c in run.calibrators.items() if (line := c.backtest_line())},
        learning_rate=run.learning_rate, dropped_steps=run.dropped_steps, eval_curve=eval_curve(run),
        model_uri=run.model_uri, backend=run.backend, time_split=run.time_split, table_placement=placement_label(run),
    )
