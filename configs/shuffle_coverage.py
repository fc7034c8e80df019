"""Does each run's shuffle buffer hold the whole train split? Checked at config load where the size is known.

A run draws its own order over the train split only when `training.shuffle_buffer` holds all of it
(`components.train.input`); a smaller buffer mixes only a slice, so the repeated runs of one invocation read
the split in nearly the same order and their spread understates the real one. With synthetic logs the train
split's size is known before preprocessing: impressions per day × the days that are not eval (within the
lookback, when one is set). For logs from files it is known only after preprocessing: the train step warns
then, from the manifest.
"""

from __future__ import annotations

import warnings

from configs.logs import LogsConfig, SplitConfig
from configs.scaling import configured_index
from configs.training import ModelConfig, TargetConfig, TrainingConfig, resolve_target


class ShuffleCoverageWarning(UserWarning):
    """A shuffle buffer smaller than the train split the config will produce."""


def expected_train_examples(logs: LogsConfig, split: SplitConfig) -> int | None:
    """Train examples the config will produce, when that is known at load (synthetic logs); else None."""
    if logs.source != "synthetic":
        return None
    days = logs.synthetic.days if logs.lookback_days is None else min(logs.synthetic.days, logs.lookback_days)
    return max(days - split.eval_days, 0) * logs.synthetic.impressions_per_day


def shuffle_coverage_problems(
    logs: LogsConfig, split: SplitConfig, model: ModelConfig, training: TrainingConfig, targets: list[TargetConfig]
) -> list[str]:
    """One line per setting whose buffer holds less than the expected train split, naming the field."""
    examples = expected_train_examples(logs, split)
    if not examples:
        return []
    problems = []
    if training.shuffle_buffer < examples:
        problems.append(_line("training.shuffle_buffer", training.shuffle_buffer, examples))
    for position, target in enumerate(targets):
        if target.scale_point is not None and target.scale_point.factor > 1:
            continue  # a sweep's points share their target's training section: said once, for point 1
        buffer = resolve_target(model, training, target).training.shuffle_buffer
        if buffer < examples and buffer != training.shuffle_buffer:
            field = f"targets.{configured_index(targets, position)}.training.shuffle_buffer"
            problems.append(_line(field, buffer, examples))
    return problems


def warn_on_partial_shuffle(
    logs: LogsConfig, split: SplitConfig, model: ModelConfig, training: TrainingConfig, targets: list[TargetConfig]
) -> None:
    for problem in shuffle_coverage_problems(logs, split, model, training, targets):
        warnings.warn(problem, ShuffleCoverageWarning, stacklevel=2)


def _line(field: str, buffer: int, examples: int) -> str:
    return (
        f"{field}: {buffer:,} holds {buffer / examples:.0%} of the ~{examples:,} train examples these synthetic logs "
        f"give; repeated runs will read the split in nearly the same order (correlated runs, a spread that "
        f"understates the real one). Set it to at least {examples:,}"
    )
