"""More epochs, or fewer? Advice only where the per-run eval curves say so significantly.

Every run of a target with more than one epoch measures the eval log-loss after each epoch (`RunRow.eval_curve`).
Over the runs that evaluated the same epochs, with the mean curve lowest at epoch `b` and the last epoch `L`:

- **fewer**: `b < L` and the rise from `b` to `L` is significant, run by run (paired over runs: a t-test of the
  per-run differences, 5%): "set training.epochs: b";
- **more**: `b = L` and the fall from `L − 1` to `L` is significant, run by run: "more epochs may help";
- otherwise nothing. Three runs whose last epoch fell by 1% on average but rose in one of them are not evidence
  that a fourth epoch helps (the click-log case: the advice said "more", and 4 epochs were worse).
"""

from __future__ import annotations

from components.evaluate.run_statistics import SIGNIFICANCE, paired_change


def epochs_advice(target: str, curves: list[list[tuple[int, float]]]) -> str | None:
    """A sentence naming `training.epochs` when the eval curves of `target`'s runs significantly favour fewer or
    more epochs; None otherwise (fewer than 2 runs, or 2 epochs, or no significant change)."""
    epochs = max((tuple(epoch for epoch, _ in curve) for curve in curves), key=len, default=())
    runs = [dict(curve) for curve in curves if tuple(epoch for epoch, _ in curve) == epochs]
    if len(epochs) < 2 or len(runs) < 2:
        return None
    mean = {epoch: sum(run[epoch] for run in runs) / len(runs) for epoch in epochs}
    best, last = min(epochs, key=lambda epoch: mean[epoch]), epochs[-1]
    if best != last:
        rise = paired_change([run[best] for run in runs], [run[last] for run in runs])
        if rise.mean > 0 and rise.significant:
            return (f"{target}: eval log-loss was lowest after epoch {best} ({mean[best]:.5f}) and rose to "
                    f"{mean[last]:.5f} by epoch {last}, significantly over {rise.runs} runs (paired, p = "
                    f"{rise.p_value:.3g} < {SIGNIFICANCE}): over-fitting; set training.epochs: {best}.")
        return None
    previous = epochs[-2]
    fall = paired_change([run[previous] for run in runs], [run[last] for run in runs])
    if fall.mean < 0 and fall.significant:
        return (f"{target}: eval log-loss still fell {-fall.mean / mean[previous]:.1%} in the last epoch "
                f"({mean[previous]:.5f} → {mean[last]:.5f}), significantly over {fall.runs} runs (paired, p = "
                f"{fall.p_value:.3g} < {SIGNIFICANCE}): more epochs may help; try training.epochs: {last + 1}.")
    return None
