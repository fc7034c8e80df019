"""Examples/s and peak RSS of adrank's trainer vs a straightforward Keras model as embedding tables grow.

Points: one table of 10^3, 10^5, 10^6, 10^7 rows (dim 32), and 10, 100, 1,000 categorical features
(1,000 rows each, dim 8, low-rank cross so the dense part stays small). adrank: `compiled_model` (stacked
tables, sparse `training.embedding_optimizer`) + `model.fit`; plain Keras: one `keras.layers.Embedding` per
feature, the same DCN body, default Adam, `model.fit`. Both train on the same synthetic in-memory batches;
each (point, model) runs in its own process, so peak RSS is that run's own.

At the features points a third model, `body`, is the same DCN body fed a ready x_0 (no embeddings): the step
time both models share. body / keras (in examples/s) is the most any embedding implementation could reach over
plain Keras there (embeddings that cost nothing): the `ceiling` column, next to the measured adrank / keras.

    .venv/bin/python benchmarks/embeddings.py [--steps 200] [--rounds 2] [--points rows=1000,features=1000]
                                              [--embedding-optimizer rowwise_adagrad]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_POINTS = "rows=1000,rows=100000,rows=1000000,rows=10000000,features=10,features=100,features=1000"
BATCH = 512


def point_shape(point: str) -> dict:
    """rows=N: one table of N rows, dim 32; features=F: F tables of 1,000 rows, dim 8, rank-16 cross."""
    kind, value = point.split("=")
    if kind == "rows":
        return {"tables": [int(value)], "dim": 32, "cross_projection_dim": None}
    if kind == "features":
        return {"tables": [1000] * int(value), "dim": 8, "cross_projection_dim": 16}
    raise ValueError(f"--points: '{point}' is neither rows=N nor features=N")


def synthetic_data(manifest, seed: int = 0, batches: int = 8):
    """`batches` distinct batches of random ids (uniform over each table), cycled. Each batch is its own
    `from_tensors` element: slicing and batching 1,000 feature columns per step in tf.data costs ~150 ms
    here, which would time the input pipeline instead of the trainers."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    elements = []
    for _ in range(batches):
        features = {}
        for feature in manifest.features:
            if feature.kind == "numeric":
                features[feature.name] = rng.normal(size=BATCH).astype("float32")
            else:
                features[feature.name] = rng.integers(0, feature.table_rows, size=BATCH)
        labels = {task: (rng.random(BATCH) < 0.2).astype("float32") for task in manifest.tasks}
        elements.append(tf.data.Dataset.from_tensors((features, labels)))
    data = elements[0]
    for element in elements[1:]:
        data = data.concatenate(element)
    return data.repeat()


def body_data(width: int, tasks: list[str], seed: int = 0, batches: int = 8):
    """`batches` distinct ready x_0 batches [BATCH, width] (uniform like fresh embeddings), cycled."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    elements = [
        tf.data.Dataset.from_tensors((
            {"x0": rng.uniform(-0.05, 0.05, size=(BATCH, width)).astype("float32")},
            {task: (rng.random(BATCH) < 0.2).astype("float32") for task in tasks},
        ))
        for _ in range(batches)
    ]
    data = elements[0]
    for element in elements[1:]:
        data = data.concatenate(element)
    return data.repeat()


def bench_manifest(shape: dict):
    from components.contracts.manifest import FeatureInfo, Manifest, SplitInfo

    features = [
        FeatureInfo(name=f"id_{i}", kind="categorical", dtype="int64", table_rows=rows)
        for i, rows in enumerate(shape["tables"])
    ]
    features.append(FeatureInfo(name="bid", kind="numeric", dtype="float32"))
    split = SplitInfo(examples=BATCH * 8, label_rates={"engagement": 0.2}, file_pattern="unused")
    return Manifest(tasks=["engagement"], features=features, splits={"train": split, "eval": split})


def run_point(point: str, model_name: str, steps: int, embedding_optimizer: str | None, repeats: int = 2) -> dict:
    """One (point, model) in this process: the best examples/s of `repeats` runs of `steps` steps after a warm-up."""
    from components.train.loop import compiled_model
    from components.train.run_clock import examples_rate
    from components.train.strategy import runtime_for
    from configs import load_config
    from configs.training import resolve_target

    shape = point_shape(point)
    manifest = bench_manifest(shape)
    data = synthetic_data(manifest)
    config = load_config(None)
    model_config = config.model.model_copy(
        update={"embedding_dim": shape["dim"], "cross_projection_dim": shape["cross_projection_dim"]}
    )
    training = config.training.model_copy(update={"global_batch_size": BATCH})
    if embedding_optimizer:
        training = training.model_copy(update={"embedding_optimizer": embedding_optimizer})
    built = time.perf_counter()
    if model_name == "adrank":
        resolved = resolve_target(model_config, training, config.target("cpu"))
        sample = next(iter(data))[0]
        model = compiled_model(resolved, runtime_for("cpu"), manifest, sample, training.steps_per_execution)
    elif model_name == "keras":
        from plain_keras import plain_keras_dcn  # benchmarks/plain_keras.py: the one baseline model

        model = plain_keras_dcn(
            manifest, shape["dim"], model_config.cross_layers, model_config.deep_layers,
            projection_dim=shape["cross_projection_dim"],
        )
    else:  # body: the shared DCN body on a ready x_0 = [embeddings ‖ bid]
        from plain_keras import dcn_body_only

        width = len(shape["tables"]) * shape["dim"] + 1
        data = body_data(width, manifest.tasks)
        model = dcn_body_only(
            width, manifest.tasks, model_config.cross_layers, model_config.deep_layers,
            projection_dim=shape["cross_projection_dim"],
        )
    build_seconds = time.perf_counter() - built
    warmup = training.steps_per_execution if model_name == "adrank" else 4
    model.fit(data, steps_per_epoch=warmup, epochs=1, verbose=0)  # trace, warm caches
    rates = []
    for _ in range(repeats):  # best of `repeats`: the machine is shared, a slow repeat is someone else's load
        start = time.perf_counter()
        model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0)
        rates.append(examples_rate(steps, BATCH, time.perf_counter() - start) or 0.0)
    return {
        "point": point,
        "model": model_name,
        "examples_per_second": max(rates),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "build_seconds": build_seconds,
    }


def steps_for(point: str, model_name: str, steps: int) -> int:
    """The plain model updates whole tables: from 10^6 table rows on, a step takes long enough that a fifth of
    the steps (at least 8) times it as well, and keeps the run within minutes."""
    if model_name == "keras" and sum(point_shape(point)["tables"]) >= 1_000_000:
        return max(8, steps // 5)
    return steps


def models_for(point: str) -> tuple[str, ...]:
    return ("adrank", "keras", "body") if point.startswith("features=") else ("adrank", "keras")


def best(first: dict | None, second: dict | None) -> dict | None:
    """The faster of two measurements of one (point, model); peak RSS is the larger (both are that model's)."""
    if first is None or second is None:
        return first or second
    faster = dict(max(first, second, key=lambda r: r["examples_per_second"]))
    faster["peak_rss_mib"] = max(first["peak_rss_mib"], second["peak_rss_mib"])
    return faster


def measure(point: str, model_name: str, steps: int, embedding_optimizer: str | None, timeout: int) -> dict | None:
    steps = steps_for(point, model_name, steps)
    command = [sys.executable, __file__, "--one", point, "--model", model_name, "--steps", str(steps)]
    if embedding_optimizer:
        command += ["--embedding-optimizer", embedding_optimizer]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"  {point} {model_name}: over {timeout} s, skipped", flush=True)
        return None
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"  {point} {model_name}: failed ({tail})", flush=True)
        return None
    result = json.loads(lines[-1])
    print(f"  {point:>16} {model_name:>6}: {result['examples_per_second']:>9,.0f} ex/s, "
          f"peak RSS {result['peak_rss_mib']:,.0f} MiB", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="timed steps per point (after a warm-up; fewer than ~100 steps at 512 is timer noise here)")
    parser.add_argument("--points", default=DEFAULT_POINTS)
    parser.add_argument("--embedding-optimizer", help="adrank's training.embedding_optimizer (default: config's)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per (point, model) process")
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure every (point, model) this many times, interleaved; the table keeps the best "
                             "(this machine is shared: a slow round is someone else's load)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--model", choices=["adrank", "keras", "body"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_point(args.one, args.model, args.steps, args.embedding_optimizer)))
        return

    points = args.points.split(",")
    for point in points:
        point_shape(point)  # bad --points fail before anything runs
    results: dict[tuple[str, str], dict | None] = {}
    for round_index in range(args.rounds):
        if args.rounds > 1:
            print(f"round {round_index + 1} of {args.rounds}", flush=True)
        for point in points:
            for model_name in models_for(point):
                result = measure(point, model_name, args.steps, args.embedding_optimizer, args.timeout)
                results[point, model_name] = best(results.get((point, model_name)), result)

    print(f"\nbatch {BATCH}, best of {2 * args.rounds} x {args.steps} timed steps per point (plain Keras from 10^6 "
          f"rows: {steps_for('rows=1000000', 'keras', args.steps)}), CPU ({os.cpu_count()} cores)")
    print(f"{'point':>16} {'adrank ex/s':>12} {'keras ex/s':>11} {'adrank/keras':>13} "
          f"{'adrank RSS MiB':>15} {'keras RSS MiB':>14} {'body ex/s':>10} {'ceiling':>8}")

    def cell(result, key, fmt):
        return format(result[key], fmt) if result else "-"

    def ratio(top, bottom):
        return f"{top['examples_per_second'] / bottom['examples_per_second']:.1f}x" if top and bottom else "-"

    for point in points:
        ours, plain, body = results[point, "adrank"], results[point, "keras"], results.get((point, "body"))
        # adrank / keras is at most keras step / body step (= body ex/s / keras ex/s): embeddings costing nothing
        bound = (f"{body['examples_per_second'] / plain['examples_per_second']:.1f}x" if body and plain else "-")
        print(f"{point:>16} {cell(ours, 'examples_per_second', ',.0f'):>12} "
              f"{cell(plain, 'examples_per_second', ',.0f'):>11} {ratio(ours, plain):>13} "
              f"{cell(ours, 'peak_rss_mib', ',.0f'):>15} {cell(plain, 'peak_rss_mib', ',.0f'):>14} "
              f"{cell(body, 'examples_per_second', ',.0f'):>10} {bound:>8}")
    if any(p.startswith("features=") for p in points):
        print("ceiling: body ex/s / keras ex/s, the adrank/keras that embeddings costing nothing would reach")
    row_points = [p for p in points if p.startswith("rows=") and results[p, "adrank"]]
    if len(row_points) > 1:
        smallest = min(row_points, key=lambda p: int(p.split("=")[1]))
        base = results[smallest, "adrank"]["examples_per_second"]
        for point in row_points:
            if point != smallest:
                print(f"adrank {point} / {smallest}: {results[point, 'adrank']['examples_per_second'] / base:.2f}x")


if __name__ == "__main__":
    main()
