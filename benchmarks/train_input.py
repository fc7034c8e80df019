"""Is training input-bound? examples/s of the default model fed by the real tf.data pipeline vs the same
model fed from batches cached in memory, and their ratio (goal ≥ 0.9 on CPU).

    .venv/bin/python benchmarks/train_input.py --examples DIR [--steps N]
DIR is a preprocess output (manifest.json); without it a synthetic one is written to a temp dir.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import tensorflow as tf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from components.preprocess.manifest import Manifest  # noqa: E402
from components.train.input import InputOptions, make_dataset  # noqa: E402
from components.train.strategy import runtime_for  # noqa: E402
from components.train.task import compiled_model  # noqa: E402
from configs import load_config  # noqa: E402
from configs.training import resolve_target  # noqa: E402


def examples_per_second(model, data, steps: int, batch: int) -> float:
    model.fit(data, steps_per_epoch=min(steps, 16), epochs=1, verbose=0)  # trace and warm up
    start = time.perf_counter()
    model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0)
    return steps * batch / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", help="preprocess output directory")
    parser.add_argument("--steps", type=int, default=400)
    args = parser.parse_args()
    examples = args.examples
    if examples is None:
        sys.path.insert(0, str(ROOT / "tests/components/train"))
        from fixture_data import write_transformed_examples

        examples = tempfile.mkdtemp()
        write_transformed_examples(examples, train=45_000, eval=1024, shards=4)
    config = load_config(None)
    resolved = resolve_target(config.model, config.training, config.target("cpu"))
    manifest = Manifest.read(examples)
    batch = resolved.training.global_batch_size
    options = InputOptions(batch_size=batch, training=True, shuffle_buffer=resolved.training.shuffle_buffer, repeat=True)
    real = make_dataset(examples, manifest, "train", options)
    cached_batches = list(real.take(32))
    cached = tf.data.Dataset.from_tensor_slices(tf.range(len(cached_batches))).repeat().map(
        lambda i: tf.nest.map_structure(lambda *t: tf.gather(tf.stack(t), i), *cached_batches)
    ).prefetch(tf.data.AUTOTUNE)
    cached = tf.data.Dataset.from_tensors(cached_batches[0]).repeat() if len(cached_batches) == 1 else cached
    runtime = runtime_for("cpu")
    sample = cached_batches[0][0]
    results = {}
    for name, data in (("cached in memory", cached), ("real pipeline", real)):
        model = compiled_model(resolved, runtime, manifest, sample, resolved.training.steps_per_execution)
        results[name] = examples_per_second(model, data, args.steps, batch)
        print(f"{name:>17}: {results[name]:,.0f} examples/s")
    print(f"ratio real/cached: {results['real pipeline'] / results['cached in memory']:.2f}")


if __name__ == "__main__":
    main()
