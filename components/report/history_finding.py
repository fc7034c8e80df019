"""Do a config's history features cost log-loss on the held-out days?

History features (`kind: history`, docs/history_features.md) are measured by training the same config with and
without them on the same logs, split and eval examples, once per seed (`benchmarks/quality.py`): run i with them
and run i without them share the seed and the eval examples, so the per-run differences are paired. The finding
is raised when their mean is a cost (eval log-loss higher with them) that is beyond run-to-run noise (the paired
t-test is significant, or every run paid it) or at least `MATERIAL_COST` (1%) on average, noise or not: features
that cost a few percent in some seeds and gain in others (on a sparse install log with the inputs as numbers,
1.046x on average, seeds from 0.918x to 1.142x, p = 0.24) are not worth keeping either. It names the features,
says which of the two it is, and what to set instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from components.evaluate.run_statistics import SIGNIFICANCE, paired_change

MATERIAL_COST = 0.01  # a mean cost of at least 1% of log-loss is a finding even when the runs cannot test it
WHAT_TO_SET = (
    "with `encoding: log` on them, `encoding: buckets` (numbers in the cross layers made history features cost 4.6% "
    "on a sparse install log where buckets gained 9%, docs/history_features.md); else drop them from `features`, or "
    "keep only the ids whose history the label depends on (one id pair rather than every id)")


def history_cost_finding(features: Sequence[str], with_history: Sequence[float],
                         without_history: Sequence[float], task: str = "") -> str | None:
    """A sentence naming `features` when adrank's eval log-loss with them (`with_history`, one per run) is higher
    than without them (`without_history`, the same runs' seeds on the same eval examples) beyond noise or by at
    least `MATERIAL_COST`; None when they do not cost log-loss, or cost less than that within the runs' noise."""
    if not features:
        return None
    change = paired_change(without_history, with_history)
    if change.mean <= 0:
        return None
    costs = np.asarray(with_history, np.float64) - np.asarray(without_history, np.float64)
    every_run = bool(np.all(costs > 0))
    ratio = float(np.mean(with_history) / np.mean(without_history))
    if not (change.significant or every_run or ratio >= 1 + MATERIAL_COST):
        return None
    evidence = (f"p = {change.p_value:.3f} over {change.runs} paired runs" if change.p_value is not None
                else f"{change.runs} run(s), not testable")
    if not change.significant:
        evidence += (f", not significant at {SIGNIFICANCE}, but higher in every run" if every_run else
                     f", not significant at {SIGNIFICANCE}: per run {' '.join(f'{c:+.5f}' for c in costs)}, "
                     "unstable from seed to seed")
    names = ", ".join(f"'{name}'" for name in features)
    label = f" ({task})" if task else ""
    return (f"History features {names} cost log-loss on the held-out days{label}: eval log-loss "
            f"{np.mean(with_history):.5f} with them vs {np.mean(without_history):.5f} without ({ratio:.3f}×, "
            f"{evidence}). What to set: {WHAT_TO_SET}.")
