"""How much CPU the TensorFlow lane's training input takes per epoch, against the memory feed the step's own rate
is timed on: on a 2-core host every millisecond of it is taken from the step it feeds.

    .venv/bin/python benchmarks/train_input_cpu.py [--examples DIR] [--epochs 10] [--repeats 5] [--against TREE]

The train split is read as a training run reads it (`components.train.input.make_dataset` with the run's options
from the default config: cached, packed, repeated), its first epoch (the cache's fill) left out; each repeat then
takes `--epochs` epochs of batches inside tf.data (`Dataset.reduce`: no Python per batch) and the process's CPU
seconds are divided by the epochs. The same for `tf_input_capacity.memory_feed` over 32 of those batches (what
`step_examples_per_second` is timed on). Without --examples it writes synthetic blocks in the default config's
shape (as benchmarks/train_clock.py does). `--against TREE`: the same measurement with another source tree's code,
the trees taking turns, each in a process of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(examples: str, epochs: int, repeats: int) -> dict[str, list[float]]:
    """CPU ms per epoch of the training read and of the memory feed, `repeats` times each (this process's code)."""
    import dataclasses

    import tensorflow as tf

    from components.contracts.manifest import Manifest
    from components.train.input import make_dataset
    from components.train.loop import train_cache, train_input_options
    from components.train.step_plan import StepPlan
    from components.train.tf_input_capacity import memory_feed
    from configs import load_config

    training = load_config(None).training
    manifest = Manifest.read(examples)
    options = dataclasses.replace(train_input_options(training, 0, train_cache(manifest, training).cache), packed=True)
    steps = StepPlan.for_run(manifest, training).steps_per_epoch
    pipeline = make_dataset(examples, manifest, "train", options)
    held = memory_feed(list(pipeline.take(32)))

    def cpu_ms_per_epoch(dataset: tf.data.Dataset) -> float:
        started = time.process_time()
        dataset.take(steps * epochs).reduce(tf.constant(0, tf.int64), lambda count, _: count + 1)
        return (time.process_time() - started) * 1000 / epochs

    figures: dict[str, list[float]] = {"training read": [], "memory feed": []}
    pipeline.take(steps).reduce(tf.constant(0, tf.int64), lambda count, _: count + 1)  # the cache's fill
    for _ in range(repeats):
        figures["training read"].append(cpu_ms_per_epoch(pipeline))
        figures["memory feed"].append(cpu_ms_per_epoch(held))
    figures["steps per epoch"] = [float(steps)]
    return figures


def run_tree(tree: Path, examples: str, epochs: int, repeats: int) -> dict[str, list[float]]:
    """`measure` in a child process with `tree`'s code first on its path."""
    code = (f"import sys, json, runpy; sys.path.insert(0, {str(tree)!r}); "
            f"measure = runpy.run_path({__file__!r})['measure']; "
            f"print('RESULT', json.dumps(measure({examples!r}, {epochs}, {repeats})))")
    env = os.environ | {"PYTHONPATH": str(tree), "TF_CPP_MIN_LOG_LEVEL": "3", "ADRANK_LOG_LEVEL": "WARNING"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=tree)
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", help="blocks to read (default: synthetic, in the default config's shape)")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--against", type=Path, help="another source tree, measured alternately with this one")
    parser.add_argument("--rounds", type=int, default=2, help="alternations of the trees")
    args = parser.parse_args()
    examples = args.examples
    if examples is None:
        sys.path.insert(0, str(ROOT))
        from components.train.synthetic_blocks import write_blocks

        examples = tempfile.mkdtemp(prefix="adrank-input-cpu-")
        default_shape = runpy.run_path(str(Path(__file__).with_name("backends.py")))["default_shape"]
        write_blocks(examples, default_shape(4000), 44_544, 15_000, seed=7, block_examples=512)
    trees = {"this tree": ROOT} | ({"against": args.against.resolve()} if args.against else {})
    results: dict[str, list[dict[str, list[float]]]] = {name: [] for name in trees}
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; blocks {examples}; {args.epochs} epochs "
          f"a repeat, {args.repeats} repeats a round")
    for _ in range(args.rounds if args.against else 1):
        for name, tree in trees.items():
            results[name].append(figures := run_tree(tree, examples, args.epochs, args.repeats))
            print(f"{name:<10} training read {statistics.median(figures['training read']):6.1f} ms CPU an epoch "
                  f"(of {figures['steps per epoch'][0]:.0f} batches; "
                  + ", ".join(f"{value:.1f}" for value in figures["training read"])
                  + f")   memory feed {statistics.median(figures['memory feed']):6.1f} ms", flush=True)
    if args.against:
        ratios = [statistics.median(a["training read"]) / statistics.median(b["training read"])
                  for a, b in zip(results["this tree"], results["against"], strict=True)]
        print("this tree / against, training read's CPU an epoch: " + ", ".join(f"{r:.2f}x" for r in ratios))
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
