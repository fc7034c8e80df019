"""Which target a team should retrain on every day, from a benchmark: among the targets whose log-loss is not
significantly worse than the best target's (Welch's t-test over their repeated runs, 5%), the cheapest per million
examples, or the fastest when the targets are not priced. The sentence ends with the config line that selects it
(`retraining.target`), which is what the daily retraining pipeline trains."""

from __future__ import annotations

from components.contracts.benchmark_summary import BenchmarkSummary, TargetSummary
from components.evaluate.run_statistics import welch_test


def not_worse_than_best(summary: BenchmarkSummary) -> tuple[TargetSummary, list[TargetSummary], bool]:
    """(the best target by mean log-loss, the targets not significantly worse than it, whether that could be tested:
    False when some target has fewer than two runs, and then only the best counts)."""
    task = summary.primary_task
    per_target = {name: [r.logloss[task] for r in summary.runs if r.target == name] for name in summary.targets}
    best = min(summary.targets.values(), key=lambda t: t.logloss_mean)
    kept, testable = [], True
    for target in summary.targets.values():
        if target.name == best.name:
            kept.append(target)
            continue
        comparison = welch_test(per_target[target.name], per_target[best.name], other=best.name)
        if comparison.significant is None:
            testable = False
        elif not comparison.significant or comparison.difference <= 0:
            kept.append(target)
    return best, kept, testable


def retraining_target_finding(summary: BenchmarkSummary) -> str | None:
    """The sentence naming the target to retrain on; None for a report on one target (the retraining report)."""
    if len(summary.targets) < 2:
        return None
    best, candidates, testable = not_worse_than_best(summary)
    priced = [t for t in candidates if t.cost_per_million_examples_usd]
    if len(priced) == len(candidates):
        pick = min(priced, key=lambda t: t.cost_per_million_examples_usd or 0.0)
        why = f"the cheapest (${pick.cost_per_million_examples_usd:.4f} per million examples)"
    else:
        pick = max(candidates, key=lambda t: t.examples_per_second_mean)
        why = f"the fastest ({pick.examples_per_second_mean:,.0f} examples/s; not every target has a price)"
    among = ", ".join(t.name for t in candidates)
    if not testable:
        basis = (f"with fewer than two runs per target no log-loss difference can be tested, so only the best "
                 f"({best.name}, {best.logloss_mean:.5f}) qualifies")
    elif len(candidates) == 1:
        basis = f"every other target's log-loss is significantly worse than {best.name}'s ({best.logloss_mean:.5f})"
    else:
        basis = (f"{why} of the targets whose log-loss is not significantly worse than the best ({best.name}, "
                 f"{best.logloss_mean:.5f}): {among}")
    return (f"Retrain on {pick.name}: {basis}. In the config: `retraining: {{target: {pick.name}}}` "
            f"(`--set retraining.target={pick.name}`); the daily retraining pipeline trains it once a day.")
