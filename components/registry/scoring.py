"""Champion and challenger on the same examples: per-example log-loss through each model's raw serving signature,
streamed over the eval split in batches.

    raw eval tf.Examples (as logged, written by preprocess), batch by batch ──► model A `serving_default` ──► ℓ_A(i)
                                                                         └──► model B `serving_default` ──► ℓ_B(i)
    d_i = ℓ_challenger(i) − ℓ_champion(i);   mean d̄,   95% interval by a paired bootstrap (`paired_bootstrap`)

Scoring goes through `serving_default`, the signature the prediction server calls, so each model applies its
own tf.Transform graph (its own vocabularies) to today's raw fields. Pairing by example removes the day's
noise (click rate, traffic mix) that both models see alike: the interval is about the models, not the day.

Memory stays bounded whatever the size of the day: the split is read `promotion.scoring_batch_size` examples at a
time, both models score each batch, and only running figures are kept (`PairedAccumulator`: the count, each
model's log-loss sum, and the mean and sum of squared deviations of d, merged batch by batch). Its t-interval
equals `components.evaluate.run_statistics.paired_difference` on the whole split in memory, to rounding; the
promotion reads the bootstrap's interval instead (`paired_logloss`), which holds when positives are rare.
"""

from __future__ import annotations

import glob
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import tensorflow as tf
from scipy import stats as scipy_stats

from components.contracts.manifest import Manifest
from components.evaluate.run_statistics import PairedComparison
from components.preprocess.attribution import label_key
from components.registry.paired_bootstrap import PairedBootstrap

SERVING_SIGNATURE = "serving_default"
SCORING_BATCH = 4096
EPSILON = 1e-7


class ModelUnscorable(RuntimeError):
    """A model cannot be loaded, cannot read today's raw features (schema changed), or answers no probability."""


class ChallengerUnscorable(RuntimeError):
    """The model this run exported cannot be scored: a failure of the run, never a reason to keep or promote."""


@dataclass(frozen=True)
class LabelCounts:
    examples: int
    positives: int
    positives_by_task: dict[str, int] | None = None  # every task of the split, the primary one included


@dataclass(frozen=True)
class BootstrapComparison(PairedComparison):
    """A paired comparison whose `difference_ci95` is the paired bootstrap's; `interval_method` says how it was
    made, `positives` how many of the examples were positive."""

    interval_method: str = ""
    positives: int = 0


@dataclass(frozen=True)
class EvalSplit:
    """Today's eval split as logged: the raw tf.Example files preprocess wrote, read `batch_size` examples at a
    time in file order (at most `max_examples` of them), with the primary task's labels."""

    files: tuple[str, ...]
    task: str
    batch_size: int = SCORING_BATCH
    max_examples: int | None = None

    @classmethod
    def locate(cls, examples_dir: str | Path, task: str, batch_size: int = SCORING_BATCH,
               max_examples: int | None = None) -> EvalSplit:
        manifest = Manifest.read(examples_dir)
        if manifest.raw_eval_pattern is None:
            raise FileNotFoundError(f"{examples_dir}: the manifest names no raw eval examples (preprocessed by an "
                                    "older adrank); re-run preprocess")
        files = sorted(glob.glob(str(Path(examples_dir) / manifest.raw_eval_pattern)))
        if not files:
            raise FileNotFoundError(f"no raw eval examples match {Path(examples_dir) / manifest.raw_eval_pattern}")
        return cls(tuple(files), task, batch_size, max_examples)

    def batches(self) -> Iterator[tuple[tf.Tensor, np.ndarray]]:
        """(serialized tf.Examples, their labels as float64), one batch at a time."""
        dataset = tf.data.TFRecordDataset(list(self.files), compression_type="GZIP")
        if self.max_examples is not None:
            dataset = dataset.take(self.max_examples)
        label_spec = {label_key(self.task): tf.io.FixedLenFeature([], tf.float32)}
        for serialized in dataset.batch(self.batch_size):
            labels = tf.io.parse_example(serialized, label_spec)[label_key(self.task)]
            yield serialized, labels.numpy().astype(np.float64)

    def label_counts(self, tasks: list[str] | tuple[str, ...] = ()) -> LabelCounts:
        """How many examples would be scored, and how many of them are positive for the primary task and for each
        of `tasks` (one streamed pass)."""
        others = [task for task in tasks if task != self.task]
        spec = {label_key(task): tf.io.FixedLenFeature([], tf.float32) for task in others}
        examples, positives = 0, 0
        by_task = dict.fromkeys(others, 0)
        for serialized, labels in self.batches():
            examples += int(labels.size)
            positives += int((labels >= 0.5).sum())
            if spec:
                parsed = tf.io.parse_example(serialized, spec)
                for task in others:
                    by_task[task] += int((parsed[label_key(task)].numpy() >= 0.5).sum())
        return LabelCounts(examples, positives, {self.task: positives, **by_task})


class ServingModel:
    """A SavedModel's raw serving function, kept alive with the loaded object it belongs to."""

    def __init__(self, model_dir: str):
        self.model_dir = model_dir
        try:
            self._loaded: Any = tf.saved_model.load(model_dir)
            self._serve: Callable[..., dict[str, tf.Tensor]] = self._loaded.signatures[SERVING_SIGNATURE]
        except Exception as error:  # any way a damaged directory fails to load (protobuf, checkpoint, missing file)
            raise ModelUnscorable(f"cannot load the model at {model_dir}: {_first_line(error)}") from error

    def probabilities(self, serialized: tf.Tensor, task: str) -> np.ndarray:
        """P(label) for each serialized example of the batch; `ModelUnscorable` when the model cannot read
        them or answers something that is not a probability."""
        try:
            result = self._serve(examples=serialized)
        except (tf.errors.InvalidArgumentError, ValueError, TypeError) as error:
            raise ModelUnscorable(
                f"the model at {self.model_dir} cannot read today's raw features (schema changed?): "
                f"{_first_line(error)}") from error
        if task not in result:
            raise ModelUnscorable(f"the model at {self.model_dir} predicts {sorted(result)}, not task '{task}'")
        probabilities = result[task].numpy().reshape(-1).astype(np.float64)
        if not np.all(np.isfinite(probabilities)) or np.any((probabilities < 0) | (probabilities > 1)):
            raise ModelUnscorable(f"the model at {self.model_dir} predicts values that are not probabilities "
                                     "(NaN, infinite or outside [0, 1]): its weights are damaged")
        return probabilities


class PairedAccumulator:
    """The paired comparison, accumulated batch by batch: n, Σℓ_challenger, Σℓ_champion, and the mean and M2
    (sum of squared deviations) of d, merged per batch (Chan, Golub & LeVeque) so no per-example array outlives
    its batch."""

    def __init__(self) -> None:
        self.count = 0
        self.challenger_sum = 0.0
        self.champion_sum = 0.0
        self.difference_mean = 0.0
        self.difference_m2 = 0.0

    def add(self, challenger_losses: np.ndarray, champion_losses: np.ndarray) -> None:
        if challenger_losses.shape != champion_losses.shape:
            raise ValueError(f"paired scores differ in length: {challenger_losses.shape} vs {champion_losses.shape}")
        n = int(challenger_losses.size)
        if n == 0:
            return
        d = challenger_losses - champion_losses
        batch_mean = float(d.mean())
        batch_m2 = float(((d - batch_mean) ** 2).sum())
        total = self.count + n
        delta = batch_mean - self.difference_mean
        self.difference_mean += delta * n / total
        self.difference_m2 += batch_m2 + delta * delta * self.count * n / total
        self.count = total
        self.challenger_sum += float(challenger_losses.sum())
        self.champion_sum += float(champion_losses.sum())

    def comparison(self) -> PairedComparison:
        n = self.count
        if n < 2:
            raise ValueError("a paired comparison needs at least 2 eval examples")
        std = math.sqrt(max(self.difference_m2, 0.0) / (n - 1))
        half_width = float(scipy_stats.t.ppf(0.975, n - 1) * std / math.sqrt(n))
        mean = self.difference_mean
        return PairedComparison(
            challenger_logloss=self.challenger_sum / n, champion_logloss=self.champion_sum / n,
            difference=mean, difference_ci95=(mean - half_width, mean + half_width), examples=n,
        )


def mean_logloss(split: EvalSplit, model: ServingModel) -> float:
    """One model's mean log-loss over the split, streamed."""
    total, count = 0.0, 0
    for serialized, labels in split.batches():
        total += float(per_example_logloss(labels, model.probabilities(serialized, split.task)).sum())
        count += int(labels.size)
    if count == 0:
        raise ValueError(f"no eval examples in {', '.join(split.files)}")
    return total / count


def paired_logloss(split: EvalSplit, challenger: ServingModel, champion: ServingModel,
                   resamples: int = 2000) -> BootstrapComparison:
    """Both models over the split in one streamed pass, the difference's 95% interval from the paired bootstrap
    (`resamples` resamples): `ChallengerUnscorable` when the challenger fails on a batch, `ModelUnscorable` when
    the champion does."""
    accumulator = PairedAccumulator()
    bootstrap = PairedBootstrap()
    for serialized, labels in split.batches():
        try:
            challenger_probabilities = challenger.probabilities(serialized, split.task)
        except ModelUnscorable as error:
            raise ChallengerUnscorable(str(error)) from error
        challenger_losses = per_example_logloss(labels, challenger_probabilities)
        champion_losses = per_example_logloss(labels, champion.probabilities(serialized, split.task))
        accumulator.add(challenger_losses, champion_losses)
        bootstrap.add(challenger_losses - champion_losses, labels)
    means = accumulator.comparison()
    return BootstrapComparison(
        challenger_logloss=means.challenger_logloss, champion_logloss=means.champion_logloss,
        difference=means.difference, difference_ci95=bootstrap.interval(resamples), examples=means.examples,
        interval_method=bootstrap.describe(resamples), positives=bootstrap.positives.count)


def per_example_logloss(labels: np.ndarray, probabilities: np.ndarray) -> np.ndarray:
    p = np.clip(probabilities.astype(np.float64), EPSILON, 1.0 - EPSILON)
    return -(labels * np.log(p) + (1.0 - labels) * np.log(1.0 - p))


def _first_line(error: BaseException) -> str:
    """The line that says what went wrong: TensorFlow's graph errors open with "Graph execution error:" and name
    the cause (e.g. "Feature: campaign_id (data type: string) is required but could not be found.") further down."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    meaningful = [line for line in lines if not line.startswith(("[[", "Graph execution error", "Detected at node"))
                  and not line.startswith("File ")]
    causes = [line for line in meaningful if "Feature:" in line or "Key:" in line]
    text = (causes or meaningful[-1:] or lines[:1] or [""])[0]
    return f"{type(error).__name__}: {text}".rstrip(": ")
