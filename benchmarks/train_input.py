"""Is training input-bound? examples/s of the default model fed by each input path, in one run:

    cached in memory      32 batches of the real pipeline, served again from memory (the ceiling)
    blocks, cached        the trainer's pipeline with training.cache on (what the default config does)
    blocks                the trainer's pipeline reading the block files every epoch
    tf.Example            the per-example path on the same examples (before blocks)

and each one's ratio to the ceiling (goal ≥ 0.9 for the trainer's pipeline on CPU).

    .venv/bin/python benchmarks/train_input.py [--examples DIR] [--steps N]
DIR is a preprocess output (manifest.json); without it a synthetic one is written to a temp dir.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from training_setup import examples_per_second, training_bench  # puts the repo on sys.path

from components.train.loop import compiled_model
from components.train.strategy import runtime_for
from components.train.tf_input_capacity import memory_feed


def main() -> None:
    bench = training_bench(__doc__.splitlines()[0])
    resolved, manifest, batch, args = bench.resolved, bench.manifest, bench.batch, bench
    real = bench.real_dataset()
    cached_batches = list(real.take(32))
    # one slice per batch (input_capacity.memory_feed, what a run's step rate is measured on). This ceiling used
    # to stack all 32 batches for every element it served, which made it slower than the real pipeline.
    cached = memory_feed(cached_batches)
    runtime = runtime_for("cpu")
    sample = cached_batches[0][0]
    paths = {"cached in memory": cached}
    if manifest.splits["train"].blocks is not None:
        paths |= {"blocks, cached": bench.real_dataset(cache=True), "blocks": real}
    paths["tf.Example"] = bench.example_dataset()
    results = {}
    for name, data in paths.items():
        model = compiled_model(resolved, runtime, manifest, sample, resolved.training.steps_per_execution)
        results[name] = examples_per_second(model, data, args.steps, batch)
        ratio = results[name] / results["cached in memory"]
        print(f"{name:>17}: {results[name]:>9,.0f} examples/s  ({ratio:.2f} of cached)", flush=True)


if __name__ == "__main__":
    main()
