"""The scaling table: each swept target's points side by side (`targets[].scale`, `configs.scaling`), as Snap's
8 → 32 → 128 TPU cores answer what a larger slice buys.

    per point N   devices the runtime saw (simulated or not), processes, global batch, learning rate
                  steady examples/s (mean over runs; training steps only, the headline of every report)
                  speed-up    = thr(N) / thr(1)
                  efficiency  = thr(N) / (d(N)/d(1) × thr(1)), d = devices the runs saw (N × d(1) when the hardware
                                matched the point; a point that saw fewer devices than asked is said so)
                  $/M examples at the point's price (N × the target's)
                  log-loss mean ± std and its difference from point 1, Welch's t-test over the runs (the batch
                  grew with N under `scale_batch: per_device`: a large-batch effect shows here)
"""

from __future__ import annotations

from collections import defaultdict

from components.contracts.benchmark_summary import ScalingPoint, ScalingSweep
from components.contracts.run_summary import RunSummary
from components.display_tables import Table
from components.evaluate.run_statistics import describe, welch_test
from components.report.cost import cost_per_million_examples
from configs.training import TargetConfig


def scaling_sweeps(targets: list[TargetConfig], runs: list[RunSummary], task: str) -> list[ScalingSweep]:
    """Every swept target whose points trained, with each point against the sweep's first (factor 1) on `task`'s
    log-loss; a sweep whose point 1 did not train is left out (nothing to scale from)."""
    by_target: dict[str, list[RunSummary]] = defaultdict(list)
    for run in runs:
        by_target[run.target].append(run)
    sweeps: dict[str, list[TargetConfig]] = defaultdict(list)
    for target in targets:
        if target.scale_point is not None and by_target.get(target.name):
            sweeps[target.scale_point.of].append(target)
    result = []
    for name, points in sweeps.items():
        points.sort(key=lambda t: t.scale_point.factor if t.scale_point else 0)
        first = points[0]
        if first.scale_point is None or first.scale_point.factor != 1:
            continue
        base_runs = by_target[first.name]
        base = _point(first, base_runs, task, None, None)
        rows = [base]
        for target in points[1:]:
            rows.append(_point(target, by_target[target.name], task, base, base_runs))
        result.append(ScalingSweep(target=name, batch=first.scale_point.batch, points=rows))
    return result


def _point(target: TargetConfig, runs: list[RunSummary], task: str, base: ScalingPoint | None,
           base_runs: list[RunSummary] | None) -> ScalingPoint:
    assert target.scale_point is not None
    timed = [r.examples_per_second for r in runs if r.examples_per_second > 0]  # 0: no steady step was timed
    throughput = describe(timed) if timed else None
    logloss = describe([r.metrics[task].logloss for r in runs])
    devices = min(r.hardware.device_count for r in runs)
    speedup = efficiency = None
    if base is not None and base.examples_per_second_mean and throughput is not None:
        speedup = throughput.mean / base.examples_per_second_mean
        efficiency = speedup / (devices / base.devices)
    return ScalingPoint(
        target=target.name, factor=target.scale_point.factor, devices=devices,
        processes=max(r.hardware.processes for r in runs), simulated=any(r.hardware.simulated for r in runs),
        global_batch_size=runs[0].global_batch_size, learning_rate=runs[0].learning_rate, runs=len(runs),
        examples_per_second_mean=throughput.mean if throughput else None,
        examples_per_second_std=throughput.std if throughput else None, speedup=speedup,
        efficiency=efficiency, price_per_hour=target.price_per_hour,
        cost_per_million_examples_usd=cost_per_million_examples(target.price_per_hour, throughput.mean)
        if throughput else None,
        logloss_mean=logloss.mean, logloss_std=logloss.std,
        vs_first=None if base_runs is None else welch_test([r.metrics[task].logloss for r in runs],
                                                            [r.metrics[task].logloss for r in base_runs],
                                                            other=base_runs[0].target),
    )


def scaling_table(sweeps: list[ScalingSweep]) -> Table | None:
    """Every sweep's points (None without a sweep)."""
    if not sweeps:
        return None
    header = ["sweep", "point", "target", "devices seen", "processes", "batch", "learning rate", "examples/s",
              "speed-up", "efficiency", "$/M examples", "log-loss mean ± std", "vs point 1"]
    rows = []
    for sweep in sweeps:
        for point in sweep.points:
            devices = f"{point.devices}" + (" (simulated)" if point.simulated else "")
            if point.devices != sweep.points[0].devices * point.factor:
                devices += f" (asked {sweep.points[0].devices * point.factor})"
            rows.append([
                sweep.target, f"×{point.factor}", point.target, devices, str(point.processes),
                f"{point.global_batch_size:,}", f"{point.learning_rate:.3g}",
                "— (no steady step)" if point.examples_per_second_mean is None
                else f"{point.examples_per_second_mean:,.0f}"
                + (f" ± {point.examples_per_second_std:,.0f}" if point.examples_per_second_std else ""),
                f"{point.speedup:.2f}×" if point.speedup is not None else "—",
                f"{point.efficiency:.0%}" if point.efficiency is not None else "—",
                f"${point.cost_per_million_examples_usd:.4f}" if point.cost_per_million_examples_usd is not None
                else "—",
                f"{point.logloss_mean:.5f}" + (f" ± {point.logloss_std:.5f}" if point.logloss_std is not None else ""),
                point.vs_first.verdict if point.vs_first is not None else "reference",
            ])
    return Table(header, rows)


def scaling_findings(sweeps: list[ScalingSweep]) -> list[str]:
    """What a reader must know before reading the table: simulated devices, points short of their devices."""
    lines = []
    for sweep in sweeps:
        last = sweep.points[-1]
        if sweep.simulated:
            lines.append(f"Scaling of {sweep.target}: the devices were simulated on one host's CPU (they share its "
                         "cores), so the table shows how the trainer's data parallelism behaves, not what more "
                         "accelerators would buy; sweep it on Vertex for that.")
        elif last.efficiency is not None:
            lines.append(f"Scaling of {sweep.target}: ×{last.factor} trains {last.speedup:.2f}× the examples/s of "
                         f"×1 ({last.efficiency:.0%} efficiency) at ${last.cost_per_million_examples_usd or 0:.4f} "
                         "per million examples.")
        untimed = [p for p in sweep.points if p.examples_per_second_mean is None]
        if untimed:
            lines.append(f"Scaling of {sweep.target}: " + ", ".join(f"×{p.factor}" for p in untimed)
                         + " timed no steady training step (each run's only execution was start-up: too few steps "
                         "for its batch); no throughput, speed-up or cost for it.")
        short = [p for p in sweep.points if p.devices < sweep.points[0].devices * p.factor]
        if short:
            lines.append(f"Scaling of {sweep.target}: " + ", ".join(
                f"×{p.factor} saw {p.devices} device(s) of {sweep.points[0].devices * p.factor}" for p in short)
                + "; its efficiency is over the devices seen.")
    return lines
