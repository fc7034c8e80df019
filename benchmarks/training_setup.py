"""What both trainer benchmarks share: the data they train on and how examples/s is timed."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from components.contracts.manifest import Manifest  # noqa: E402
from components.train.callbacks import StepClock  # noqa: E402
from components.train.input import InputOptions, example_dataset, make_dataset  # noqa: E402
from components.train.run_clock import RunClock  # noqa: E402
from configs import load_config  # noqa: E402
from configs.training import ResolvedTarget, resolve_target  # noqa: E402


@dataclass
class TrainingBench:
    examples: str
    manifest: Manifest
    resolved: ResolvedTarget
    batch: int
    steps: int
    args: argparse.Namespace

    def real_dataset(self, cache: bool = False):
        """The train split as a run reads it (blocks when the examples have them, as packed batches like
        `components.train.loop.train_input_options`); `cache`: decoded blocks kept."""
        return make_dataset(self.examples, self.manifest, "train", self._options(cache, packed=True))

    def example_dataset(self):
        """The same split through the per-example tf.Example path."""
        return example_dataset(self.examples, self.manifest, "train", self._options(False))

    def _options(self, cache: bool, packed: bool = False) -> InputOptions:
        training = self.resolved.training
        return InputOptions(batch_size=self.batch, training=True, shuffle_buffer=training.shuffle_buffer, repeat=True,
                            cache=cache, packed=packed)


def training_bench(description: str,
                   more_arguments: Callable[[argparse.ArgumentParser], object] | None = None) -> TrainingBench:
    """Parse `--examples DIR --steps N` (and what `more_arguments` adds; all of them in `args`); without DIR, write
    45k synthetic transformed examples (blocks and tf.Examples) to a temp dir."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--examples", help="preprocess output directory (with manifest.json)")
    parser.add_argument("--steps", type=int, default=400)
    if more_arguments is not None:
        more_arguments(parser)
    args = parser.parse_args()
    examples = args.examples
    if examples is None:
        sys.path.insert(0, str(ROOT / "tests/components/train"))
        from fixture_data import write_transformed_examples

        examples = tempfile.mkdtemp()
        write_transformed_examples(examples, train=45_000, eval=1024, shards=4, block_examples=512)
    config = load_config(None)
    resolved = resolve_target(config.model, config.training, config.target("cpu"))
    return TrainingBench(examples, Manifest.read(examples), resolved, resolved.training.global_batch_size, args.steps,
                         args)


def examples_per_second(model, data, steps: int, batch: int) -> float:
    """Steady-state examples/s of `steps` steps of `fit` on `data`: from the end of the first execution to the end
    of the last (`StepClock`). Every `fit` starts a new iterator, whose first batch can take a few hundred ms (a
    cached split is read and permuted): timing the whole call would count that once-a-run cost in every reading
    and made the block reader look 3x slower than memory at 200 steps (docs/input.md, "The input stall")."""
    model.fit(data, steps_per_epoch=min(steps, 16), epochs=1, verbose=0)  # trace and warm up
    clock = RunClock()
    model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0, callbacks=[StepClock(clock)])
    rate = clock.steady_examples_per_second(batch)
    if rate <= 0:
        raise ValueError(f"{steps} steps are too few to time after the first execution")
    return rate
