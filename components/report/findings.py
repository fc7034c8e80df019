"""The few sentences a person reads first: what won, by how much, and whether it is real.

Facts (best run, fastest, cheapest, comparisons) come first; every piece of advice names the config key to change
and is raised only where the evidence holds (epochs: `components.report.epochs`; calibration:
`components.report.calibration_finding`)."""

from __future__ import annotations

from components.contracts.benchmark_summary import BenchmarkSummary, TargetSummary
from components.report.calibration_finding import calibration_findings
from components.report.epochs import epochs_advice, epochs_raised_finding
from components.report.retraining_target import retraining_target_finding
from components.report.scaling import scaling_findings


def missing_features(shares: dict[str, float]) -> list[str]:
    """A sentence per feature absent from more than `preprocess.max_missing_share` of examples: the model trained
    without most of it (a misspelt column is absent from every example)."""
    return [f"Feature '{name}' is absent from {share:.1%} of examples: check its column in the logs "
            "(logs.impression_fields maps names that differ)." for name, share in sorted(shares.items())]


def unseen_features(shares: dict[str, float]) -> list[str]:
    """A sentence per feature whose eval examples mostly carry a value never seen in train
    (`preprocess.max_unseen_share`): the model learned nothing for those values."""
    return [f"Feature '{name}': {share:.1%} of eval examples carry a value never seen in the train split, so the model "
            "learned nothing for it there (e.g. a day_of_week over fewer train days than a week); drop it from "
            "`features` or widen the train window (logs, split.eval_days)." for name, share in sorted(shares.items())]


def not_reproducible(summary: BenchmarkSummary) -> str | None:
    """A sentence when runs trained without op determinism (other than asynchronous parameter-server runs, which
    cannot have it): the same seed may then give a different log-loss."""
    kinds = {name: target.kind for name, target in summary.targets.items()}
    loose = sorted({r.target for r in summary.runs if r.deterministic is False and kinds.get(r.target) != "cpu-ps"})
    if not loose:
        return None
    return (f"{', '.join(loose)}: trained without op determinism (training.deterministic: false), so the same config "
            "and seed can give a different log-loss and a difference between two configs may be run-to-run noise; "
            "set training.deterministic: true to compare configs run by run.")


INPUT_BOUND_STALL = 0.10


def input_bound(target: TargetSummary) -> str | None:
    """A sentence when the target's input cost more than `INPUT_BOUND_STALL` of its step time: by
    how much, what its input pipeline delivers alone against what its step consumes, and only the fixes that
    those two figures support (components/train/input_capacity.py)."""
    stall, name = target.input_stall_mean, target.name
    if stall is None or stall <= INPUT_BOUND_STALL:
        return None
    line = (f"{name} is input-bound: {stall:.1%} of its step time went to its input, i.e. the same steps fed from "
            f"memory ran that much faster (above {INPUT_BOUND_STALL:.0%})")
    supply, demand = target.input_examples_per_second_mean, target.step_examples_per_second_mean
    if supply is None or demand is None:
        return line + ("; its input capacity was not measured (training.input_capacity_seconds is 0), so the "
                       "report cannot say whether the pipeline or the host's cores are short.")
    cache = "caching the split (training.cache: memory, or a larger training.cache_memory_mb)"
    if supply < demand:
        fixes = []
        if target.input_format != "blocks":
            fixes.append("training-ready blocks (these examples are per-example tf.Examples: rerun preprocess)")
        if target.input_cache_mib == 0:
            fixes.append(cache)
        fixes.append("more host cores for the input pipeline")
        return (f"{line}. Its input pipeline delivers {supply:,.0f} examples/s alone on this host and its step "
                f"consumes {demand:,.0f}: the step could run {demand / supply:.1f}x faster than its input. What "
                f"would fix it: {'; '.join(fixes)}.")
    fixes = ([cache + ", which leaves the cores to the step"] if target.input_cache_mib == 0 else []) + [
        "more host cores than the step uses"]
    return (f"{line}. Its input pipeline alone delivers {supply:,.0f} examples/s, {supply / demand:.1f}x what its "
            f"step consumes ({demand:,.0f}): the pipeline is fast enough alone, the wait comes from sharing this "
            f"host's cores with the step. What would fix it: {'; or '.join(fixes)}.")


OVERHEAD_DOMINATES = 0.5  # a target whose training steps are less than this share of its run time gets a finding


def time_overhead(target: TargetSummary) -> str | None:
    """A sentence when training steps were less than half of a target's run time: where the rest went, largest
    first, with the config key that controls each phase a user can shorten."""
    split = target.time_split
    if split is None or split.wall <= 0 or split.training / split.wall >= OVERHEAD_DOMINATES:
        return None
    knobs = {"evaluation": "training.eval_every_epochs, training.eval_sample_examples",
             "checkpoints": "training.checkpoints_per_epoch, training.checkpoint_every_minutes",
             "input_check": "training.input_capacity_seconds", "input_wait": "the input (see its stall)",
             "startup": "fixed per run: imports, building the model, compiling the step",
             "export": "fixed per run", "other": "progress lines and summaries"}
    phases = sorted(((getattr(split, phase), phase) for phase in knobs), reverse=True)
    parts = [f"{phase.replace('_', ' ')} {seconds / split.wall:.0%} ({knobs[phase]})"
             for seconds, phase in phases[:3] if seconds / split.wall >= 0.05]
    return (f"{target.name}: training steps were {split.training / split.wall:.0%} of each run's "
            f"{split.wall:.0f} s; the rest: {'; '.join(parts)}. examples/s counts the training steps alone.")


SHORT_WINDOW_SECONDS = 2.0  # a steady window below this is one burst of other work on the host away from its figure


def short_steady_window(summary: BenchmarkSummary, target: TargetSummary) -> str | None:
    """A sentence when a target's runs timed less than `SHORT_WINDOW_SECONDS` of steady training each: its
    examples/s rests on so short a window that other work on the host moves it run by run (a make-run cpu run:
    0.2 s, headline / step's own rate 0.63 one run and 0.94 the next). It gives each synchronous run's headline
    against its step's own rate fed from memory (seconds of paired rounds, steps over seconds as the headline is
    taken) and what would lengthen the window. (cpu-ps: the ratio is the workers' share of the window by definition,
    so not given.)"""
    split = target.time_split
    if split is None:
        return None
    window = split.training + split.input_wait
    if window <= 0 or window >= SHORT_WINDOW_SECONDS:
        return None
    line = (f"{target.name}: examples/s rests on {window:.2f} s of steady training steps a run (below "
            f"{SHORT_WINDOW_SECONDS:.0f} s), so a burst of other work on this host moves a run's figure")
    ratios = [run.examples_per_second / run.step_examples_per_second for run in summary.runs
              if run.target == target.name and run.step_examples_per_second]
    if ratios and target.kind != "cpu-ps":
        line += (f": its runs trained at {', '.join(f'{ratio:.2f}' for ratio in ratios)} of their step's own rate "
                 "fed from memory")
    return (line + ". For a throughput to compare hardware by, train more steps a run (training.epochs, a larger "
            "train split) or compare the step's own rate.")


def tables_off_the_hardware(target: TargetSummary) -> str | None:
    """A sentence when a TPU target's tables were not on the TPU's embedding hardware (read from the runtime)."""
    if target.kind != "tpu" or target.tables_on_embedding_hardware is not False:
        return None
    return (f"{target.name}: its embedding tables were not on the TPU's embedding hardware "
            f"({'; '.join(target.table_placement)}): they were ordinary variables in the TensorCores' memory. TPU "
            "v5e has no SparseCore; TPU v5p, v6e and TPU7x have, reached through the JAX lane (backend: jax, "
            "docs/backends.md).")


def synchronous_vs_asynchronous(summary: BenchmarkSummary, target: TargetSummary) -> str | None:
    """For a parameter-server target compared with a synchronous baseline: in words, whether their log-loss
    differs significantly, which trains faster, and what each costs per run and per million examples."""
    base = summary.targets[summary.baseline_target]
    comparison = target.tasks[summary.primary_task].vs_baseline
    if target.kind != "cpu-ps" or base.kind == "cpu-ps" or comparison is None:
        return None
    if comparison.significant:
        quality = f"their log-loss differs significantly ({comparison.verdict})"
    elif comparison.significant is None:
        quality = f"whether their log-loss differs cannot be tested ({comparison.verdict})"
    else:
        quality = f"their log-loss does not differ significantly ({comparison.verdict})"
    line = (f"Synchronous {base.name} vs asynchronous {target.name} (parameter servers): log-loss "
            f"{base.logloss_mean:.5f} vs {target.logloss_mean:.5f}, {quality}")
    if target.relative_throughput:
        faster, slower, ratio = (target, base, target.relative_throughput) if target.relative_throughput >= 1 else (
            base, target, 1 / target.relative_throughput)
        line += (f"; {faster.name} is faster, {ratio:.2f}× the examples/s of {slower.name} "
                 f"({faster.examples_per_second_mean:,.0f} vs {slower.examples_per_second_mean:,.0f})")
    line += f"; cost per run ${base.cost_per_run_usd:.4f} vs ${target.cost_per_run_usd:.4f}"
    if base.cost_per_million_examples_usd is not None and target.cost_per_million_examples_usd is not None:
        line += (f", per million examples ${base.cost_per_million_examples_usd:.4f} vs "
                 f"${target.cost_per_million_examples_usd:.4f}")
    return line + "."


def findings(summary: BenchmarkSummary) -> list[str]:
    task = summary.primary_task
    best = summary.best_run
    lines = []
    gap = summary.constant_ctr_logloss - (summary.bayes_logloss if summary.bayes_logloss is not None else 0.0)
    quality = (
        f"Best eval log-loss ({task}): {best.logloss:.5f} — {best.target} run {best.run_index + 1}; "
        f"constant-CTR baseline {summary.constant_ctr_logloss:.5f}"
    )
    if summary.bayes_logloss is not None:
        closed = (summary.constant_ctr_logloss - best.logloss) / gap if gap > 0 else float("nan")
        quality += f", Bayes floor {summary.bayes_logloss:.5f} (closes {closed:.0%} of the gap)"
    lines.append(quality + ".")
    lines += missing_features(summary.mostly_missing_features)
    lines += unseen_features(summary.mostly_unseen_features)
    if sentence := not_reproducible(summary):
        lines.append(sentence)

    targets = list(summary.targets.values())
    fastest = max(targets, key=lambda t: t.examples_per_second_mean)
    line = f"Fastest: {fastest.name} at {fastest.examples_per_second_mean:,.0f} examples/s"
    if len(targets) > 1 and fastest.relative_throughput is not None:
        line += f" ({fastest.relative_throughput:.2f}× {summary.baseline_target})"
    lines.append(line + ".")
    priced = [(t.cost_per_million_examples_usd, t.name) for t in targets if t.cost_per_million_examples_usd]
    if priced:
        cost, cheapest = min(priced)
        lines.append(f"Cheapest: {cheapest} at ${cost:.4f} per million examples.")
    recommendation = retraining_target_finding(summary)
    if recommendation:
        lines.append(recommendation)
    lines += scaling_findings(summary.scaling)
    for target in targets:
        comparison = target.tasks[task].vs_baseline
        if comparison is not None:
            lines.append(f"{target.name} vs {summary.baseline_target}: {comparison.verdict}.")
    lines += [sentence for target in targets if (sentence := synchronous_vs_asynchronous(summary, target))]
    for target in targets:
        if target.epochs_raised is not None:
            lines.append(epochs_raised_finding(target.name, target.epochs_raised))
        advice = epochs_advice(target.name, [r.eval_curve for r in summary.runs if r.target == target.name],
                               target.epochs_raised)
        if advice:
            lines.append(advice)
        if target.dropped_steps:
            lines.append(f"{target.name}: {target.dropped_steps:,} full batches per run were not trained "
                         "(steps per execution could not split the epoch evenly; training.steps_per_execution or "
                         "training.checkpoints_per_epoch decides the split).")
    lines += calibration_findings(summary)
    if summary.best_exported_run is None:
        lines.append("No run exported a model: nothing can be promoted.")
    elif (summary.best_exported_run.target, summary.best_exported_run.run_index) != (best.target, best.run_index):
        e = summary.best_exported_run
        lines.append(f"The best run exported no model; promotion uses the best exported run, {e.target} run "
                     f"{e.run_index + 1} (log-loss {e.logloss:.5f}).")
    lines += [sentence for target in targets if (sentence := input_bound(target))]
    lines += [sentence for target in targets if (sentence := tables_off_the_hardware(target))]
    lines += [sentence for target in targets if (sentence := time_overhead(target))]
    lines += [sentence for target in targets if (sentence := short_steady_window(summary, target))]
    lines += skipped_target_lines(summary)
    for target in targets:
        std = f" ± {target.logloss_std:.5f}" if target.logloss_std is not None else ""
        lines.append(
            f"{target.name} ({target.backend}): {target.runs} run(s) on {', '.join(target.hardware_seen)}; "
            f"log-loss {target.logloss_mean:.5f}{std}."
        )
    return lines


def skipped_target_lines(summary: BenchmarkSummary) -> list[str]:
    """One sentence per configured target this DAG did not train."""
    return [f"Skipped {s.name} ({s.kind}): {s.reason}." for s in summary.skipped_targets]
