"""The report's tables as plain rows of text (`components.display_tables` renders them to HTML and to Markdown alike)."""

from __future__ import annotations

from components.contracts.benchmark_summary import BenchmarkSummary
from components.display_tables import Table


def per_target_table(summary: BenchmarkSummary) -> Table:
    header = ["target", "kind", "lane", "ran on", "runs", "batch", "learning rate", "log-loss mean ± std", "95% CI", "AUC",
              "examples/s", "rel. speed", "input stall", "input ex/s alone", "step ex/s", "cost/run", "$/M examples", "rel. cost",
              "tables + slots MiB"]
    rows = []
    for t in summary.targets.values():
        rows.append([
            t.name + (" (baseline)" if t.name == summary.baseline_target else ""),
            t.kind,
            t.backend,
            ", ".join(t.hardware_seen),
            str(t.runs),
            f"{t.global_batch_size:,}",
            f"{t.learning_rate:.3g}" + (f" = {t.learning_rate_note}" if t.learning_rate_note else ""),
            f"{t.logloss_mean:.5f}" + (f" ± {t.logloss_std:.5f}" if t.logloss_std is not None else ""),
            f"[{t.logloss_ci95[0]:.5f}, {t.logloss_ci95[1]:.5f}]" if t.logloss_ci95 else "—",
            f"{t.auc_mean:.4f}",
            f"{t.examples_per_second_mean:,.0f}" + (f" ± {t.examples_per_second_std:,.0f}" if t.examples_per_second_std else ""),
            _ratio(t.relative_throughput),
            _share(t.input_stall_mean),
            _rate(t.input_examples_per_second_mean) + (" (cached)" if t.input_cache_mib else ""),
            _rate(t.step_examples_per_second_mean),
            f"${t.cost_per_run_usd:.4f}",
            f"${t.cost_per_million_examples_usd:.4f}" if t.cost_per_million_examples_usd is not None else "—",
            _ratio(t.relative_cost),
            f"{t.embedding_memory_mib:,.1f}" if t.embedding_memory_mib is not None else "—",
        ])
    return Table(header, rows)


TIME_PHASES = (("startup", "start-up"), ("input_wait", "input wait"), ("training", "training steps"),
               ("evaluation", "evaluation"), ("checkpoints", "checkpoints"), ("input_check", "input check"),
               ("export", "export"), ("other", "other"))


def time_split_table(summary: BenchmarkSummary) -> Table | None:
    """Where each target's run time went (mean seconds per phase and its share of the run, `RunSummary.time_split`),
    and where its tables lived; None when no run recorded a split."""
    rows = []
    for t in summary.targets.values():
        split = t.time_split
        if split is None:
            continue
        wall = split.wall or 1.0
        rows.append([t.name, f"{split.wall:.1f}"]
                    + [f"{getattr(split, phase):.1f} ({getattr(split, phase) / wall:.0%})" for phase, _ in TIME_PHASES]
                    + ["; ".join(t.table_placement) or "—"])
    if not rows:
        return None
    return Table(["target", "run s"] + [label + " s" for _, label in TIME_PHASES] + ["tables"], rows)


def statistics_table(summary: BenchmarkSummary) -> Table:
    header = ["target", "task", "log-loss mean", "std", "min", "max", "CV", "NE", "calibration (95% interval)",
              f"vs {summary.baseline_target}"]
    rows = []
    for t in summary.targets.values():
        for task, s in t.tasks.items():
            rows.append([
                t.name, task,
                f"{s.logloss.mean:.5f}",
                _num(s.logloss.std, 5), f"{s.logloss.min:.5f}", f"{s.logloss.max:.5f}",
                f"{s.logloss.cv:.3%}" if s.logloss.cv is not None else "—",
                f"{s.normalized_entropy.mean:.4f}",
                f"{s.calibration.mean:.3f}" + (f" ({s.calibration_ci95[0]:.2f}–{s.calibration_ci95[1]:.2f})"
                                               if s.calibration_ci95 else ""),
                s.vs_baseline.verdict if s.vs_baseline else "baseline",
            ])
    return Table(header, rows)


def eval_curve_table(summary: BenchmarkSummary) -> Table | None:
    """Eval log-loss after each epoch, mean over each target's runs; None when no run evaluated per epoch."""
    epochs = sorted({epoch for t in summary.targets.values() for epoch, _ in t.eval_curve})
    if not epochs:
        return None
    header = ["target"] + [f"epoch {e}" for e in epochs] + ["best epoch"]
    rows = []
    for t in summary.targets.values():
        values = dict(t.eval_curve)
        best = min(values, key=lambda epoch: values[epoch]) if values else None
        rows.append([t.name] + [f"{values[e]:.5f}" if e in values else "—" for e in epochs]
                    + [str(best) if best is not None else "—"])
    return Table(header, rows)


def per_run_table(summary: BenchmarkSummary) -> Table:
    tasks = list(summary.tasks)
    header = ["target", "lane", "run", "seed", "hardware seen", "strategy", "replicas", "batch", "lr", "steps",
              "dropped steps", "wall s", "training s", "examples/s", "input stall", "input ex/s alone",
              "step ex/s"] + [f"log-loss {t}" for t in tasks] + [
              f"AUC {t}" for t in tasks] + ["model"]
    rows = [
        [r.target, r.backend, str(r.run_index + 1), str(r.seed), r.hardware, r.strategy, str(r.replicas),
         f"{r.global_batch_size:,}", f"{r.learning_rate:.3g}", f"{r.steps:,}", f"{r.dropped_steps:,}",
         f"{r.wall_time_seconds:.1f}", f"{r.time_split.training:.1f}" if r.time_split else "—",
         f"{r.examples_per_second:,.0f}",
         _share(r.input_stall_fraction), _rate(r.input_examples_per_second), _rate(r.step_examples_per_second)]
        + [f"{r.logloss[t]:.5f}" for t in tasks] + [f"{r.auc[t]:.4f}" for t in tasks]
        + ["exported" if r.model_uri else "not exported"]
        for r in summary.runs
    ]
    return Table(header, rows)


def skipped_targets_table(summary: BenchmarkSummary) -> Table | None:
    """The configured targets this DAG did not train, and why; None when every target ran."""
    if not summary.skipped_targets:
        return None
    return Table(["target", "kind", "why it was skipped"], [[s.name, s.kind, s.reason] for s in summary.skipped_targets])


def _rate(value: float | None) -> str:
    return f"{value:,.0f}" if value is not None else "—"


def _share(value: float | None) -> str:
    return f"{value:.1%}" if value is not None else "—"


def _ratio(value: float | None) -> str:
    return f"{value:.2f}×" if value is not None else "—"


def _num(value: float | None, digits: int) -> str:
    return f"{value:.{digits}f}" if value is not None else "—"
