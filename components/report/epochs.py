"""More epochs, or fewer? Advice only where the per-run eval curves say so significantly.

Every run of a target with more than one epoch measures the eval log-loss after each epoch (`RunRow.eval_curve`).
Over the runs that evaluated the same epochs, with the mean curve lowest at epoch `b` and the last epoch `L`:

- **fewer**: `b < L` and the rise from `b` to `L` is significant, run by run (paired over runs: a t-test of the
  per-run differences, 5%): "set training.epochs: b";
- **more**: `b = L` and the fall from `L − 1` to `L` is significant, run by run; then how many epochs the trend
  supports (`epochs_supported`), so a user sets the number once instead of adding one epoch per try;
- otherwise nothing. Three runs whose last epoch fell by 1% on average but rose in one of them are not evidence
  that a fourth epoch helps (the click-log case: the advice said "more", and 4 epochs were worse).

How many epochs the trend supports. The mean curve's gain per epoch g (log-loss lost between two evaluations,
divided by the epochs between them) is fitted over its trailing run of positive gains as a geometric decay,
log g = a + e · log r (least squares; an eval curve that falls like L∞ + A·rᵉ, as they do once the fast start is
over). The next epochs are worth running while an epoch gains at least `MIN_EPOCH_GAIN` (0.1%) of the log-loss —
an improvement that a ranking team counts as real — so the advice is the first epoch where g·rᵏ drops below it,
with the log-loss the trend expects there. The extrapolation is capped at `MAX_GROWTH` (4×) the epochs run: a
trend measured over L epochs says little about 10·L. With only two evaluations (one gain, no decay to measure), or
gains that do not shrink (r ≥ 1), the trend sets no end: the advice is to double the epochs, which gives the next
report enough of the curve to size the rest (at most two tries, not one per epoch).
"""

from __future__ import annotations

import math

from components.contracts.benchmark_summary import EpochsRaised
from components.evaluate.run_statistics import SIGNIFICANCE, paired_change
from configs.training import MAX_RAISED_EPOCHS

MIN_EPOCH_GAIN = 0.001  # an epoch is worth running while it lowers eval log-loss by at least 0.1%
MAX_GROWTH = 4  # the most epochs advised, as a multiple of those run


def epochs_supported(mean_curve: dict[int, float]) -> tuple[int, str]:
    """(training.epochs to set, why) for a mean eval curve (epoch → log-loss) that still falls at its last epoch."""
    epochs = sorted(mean_curve)
    last = epochs[-1]
    gains = [((mean_curve[a] - mean_curve[b]) / (b - a), b) for a, b in zip(epochs, epochs[1:])]
    trailing: list[tuple[float, int]] = []
    for gain, epoch in reversed(gains):
        if gain <= 0:
            break
        trailing.insert(0, (gain, epoch))
    doubled = (min(2 * last, MAX_GROWTH * last), "the curve is too short to show how fast its gains shrink: double "
               "the epochs, and the next report sizes the rest from the longer curve")
    if len(trailing) < 2:
        return doubled
    xs = [float(epoch) for _, epoch in trailing]
    ys = [math.log(gain) for gain, _ in trailing]
    x_mean, y_mean = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - x_mean) * (y - y_mean) for x, y in zip(xs, ys)) / sum((x - x_mean) ** 2 for x in xs)
    ratio = math.exp(slope)
    if slope >= -1e-9:  # gains that do not shrink (a straight or steepening fall)
        doubled = (doubled[0], f"its gains per epoch do not shrink yet (×{ratio:.2f} an epoch over epochs "
                   f"{int(xs[0])}–{last}): double the epochs, and the next report sizes the rest from the longer curve")
        return doubled
    gain_at_last = math.exp(y_mean + slope * (last - x_mean))
    threshold = MIN_EPOCH_GAIN * mean_curve[last]
    more = 0
    expected = mean_curve[last]
    while gain_at_last * ratio ** (more + 1) >= threshold and last + more < MAX_GROWTH * last:
        more += 1
        expected -= gain_at_last * ratio ** more
    if more == 0:
        return last, ""
    capped = last + more >= MAX_GROWTH * last
    why = (f"its gains per epoch shrink ×{ratio:.2f} an epoch (epochs {int(xs[0])}–{last}), so epochs up to "
           f"{last + more} each still gain ≥ {MIN_EPOCH_GAIN:.1%} of the log-loss (expected {expected:.5f} there, "
           f"{1 - expected / mean_curve[last]:.1%} lower)")
    if capped:
        why += f"; capped at {MAX_GROWTH}× the epochs run, beyond which the trend is a guess"
    return last + more, why


def epochs_raised_finding(target: str, raised: EpochsRaised) -> str:
    """What the small-split rule did, so a user reading the epochs does not look for them in the config."""
    return (f"{target}: trained {raised.epochs} epochs, not the {raised.configured} set: the train split is "
            f"{raised.steps_per_epoch:,} steps an epoch, and a small split trains at least {raised.min_train_steps:,} "
            f"steps (training.min_train_steps, by default the square root of the train examples; at most "
            f"{MAX_RAISED_EPOCHS} epochs; 0 turns it off).")


def epochs_advice(target: str, curves: list[list[tuple[int, float]]],
                  raised: EpochsRaised | None = None) -> str | None:
    """A sentence naming `training.epochs` when the eval curves of `target`'s runs significantly favour fewer or
    more epochs; None otherwise (fewer than 2 runs, or 2 epochs, or no significant change). `raised`: the runs'
    epochs came from the small-split rule, so fewer epochs also need the rule off (it would raise them again)."""
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
                    f"{rise.p_value:.3g} < {SIGNIFICANCE}): over-fitting; set training.epochs: {best}"
                    + (" and training.min_train_steps: 0." if raised is not None and best < raised.epochs else "."))
        return None
    previous = epochs[-2]
    fall = paired_change([run[previous] for run in runs], [run[last] for run in runs])
    if fall.mean < 0 and fall.significant:
        epochs_to_set, why = epochs_supported(mean)
        if epochs_to_set <= last:
            return None  # falling, but by less than an epoch is worth
        return (f"{target}: eval log-loss still fell {-fall.mean / mean[previous]:.1%} in the last epoch "
                f"({mean[previous]:.5f} → {mean[last]:.5f}), significantly over {fall.runs} runs (paired, p = "
                f"{fall.p_value:.3g} < {SIGNIFICANCE}): more epochs help; {why}: set training.epochs: "
                f"{epochs_to_set}.")
    return None
