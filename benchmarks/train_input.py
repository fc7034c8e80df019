"""Is training input-bound? examples/s of the default model fed by the real tf.data pipeline vs the same
model fed from batches cached in memory, and their ratio (goal ≥ 0.9 on CPU).

    .venv/bin/python benchmarks/train_input.py --examples DIR [--steps N]
DIR is a preprocess output (manifest.json); without it a synthetic one is written to a temp dir.
"""

from __future__ import annotations

import sys
from pathlib import Path

import tensorflow as tf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from training_setup import examples_per_second, training_bench  # noqa: E402  (puts the repo on sys.path)

from components.train.strategy import runtime_for  # noqa: E402
from components.train.loop import compiled_model  # noqa: E402


def main() -> None:
    bench = training_bench(__doc__.splitlines()[0])
    resolved, manifest, batch, args = bench.resolved, bench.manifest, bench.batch, bench
    real = bench.real_dataset()
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
