"""Where tf.Transform's `Transform` spends its time on one batch of wide hashed logs, split as its DoFn does the
work: the raw Arrow columns made tensors (tfx_bsl's `TensorAdapter.ToBatchTensors`), the transform graph run
(`SavedModelLoader.apply_transform_model`), the outputs made an Arrow batch again (`TensorsToRecordBatchConverter`).

    PYTHONPATH=. .venv/bin/python benchmarks/transform_batch.py [--width 1000] [--rows 2300] [--repeats 5]
        [--against DIR]

The features are the grid's wide ones (`benchmarks.preprocess.wide_config`: `--width` hashed categorical columns
of 64 buckets; `--rows` rows, about half a `run.TRANSFORM_BATCH_BYTES` slice of 32 MiB at 1,000 features). The transform
function is analysed and saved once (timed: tracing and saving grow with the graph), then each piece is timed
`--repeats` times on the same batch and its median printed. `--against DIR`: the same measurement, in a process of
its own, on the source tree in DIR (e.g. an earlier commit or a variant) (`git archive <commit> | tar -x -C DIR`), run alternately with this tree's, so
the ratios come from one machine at one time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def measure(width: int, rows: int, repeats: int) -> dict[str, float]:
    """Seconds of each piece for the tree on `sys.path` first (its `components` and `configs`)."""
    import apache_beam as beam
    import numpy as np
    import pyarrow as pa
    import tensorflow as tf
    import tensorflow_transform.beam as tft_beam
    from tensorflow_transform.saved import saved_transform_io_v2
    from tfx_bsl.tfxio import tensor_adapter, tensor_to_arrow

    from benchmarks.preprocess import wide_config
    from components.preprocess import transform

    config = wide_config(Path("unused-logs"), width)
    features, tasks = config.features, config.tasks
    adapter = transform.tensor_adapter_config(features, tasks)
    spec = transform.raw_feature_spec(features, tasks)

    def batch_of(n: int) -> pa.RecordBatch:  # the wide logs' values: feature j of row i = v<(i * (j + 1)) % 50>
        columns = []
        for name, feature_spec in spec.items():
            if feature_spec.dtype == tf.string:
                j = int(name[1:])
                values = pa.array([f"v{(i * (j + 1)) % 50}".encode() for i in range(n)], pa.large_binary())
            elif feature_spec.dtype == tf.int64:
                values = pa.array(np.arange(n, dtype=np.int64) * 1000)
            else:
                values = pa.array(np.zeros(n, np.float32))
            columns.append(transform._one_each(values))
        return pa.RecordBatch.from_arrays(columns, names=list(spec))

    batch = batch_of(rows)
    seconds: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        with beam.Pipeline() as pipeline, tft_beam.Context(temp_dir=tmp, force_tf_compat_v1=False):
            transform_fn = (pipeline | beam.Create([batch_of(8)]), adapter) | tft_beam.AnalyzeDataset(
                transform.build_preprocessing_fn(features, tasks))
            _ = transform_fn | tft_beam.WriteTransformFn(f"{tmp}/out")
        seconds["analyse and save"] = [time.perf_counter() - started]
        started = time.perf_counter()
        loader = saved_transform_io_v2.SavedModelLoader(f"{tmp}/out/transform_fn")
        loader.finalize(set(adapter.tensor_representations), set(loader.structured_outputs))
        seconds["load"] = [time.perf_counter() - started]
        to_tensors = tensor_adapter.TensorAdapter(adapter)
        outputs = loader.apply_transform_model(to_tensors.ToBatchTensors(batch, produce_eager_tensors=True))
        to_arrow = tensor_to_arrow.TensorsToRecordBatchConverter({
            name: tf.TensorSpec([None] + value.shape[1:], value.dtype) for name, value in outputs.items()})
        for _ in range(repeats):
            a = time.perf_counter()
            tensors = to_tensors.ToBatchTensors(batch, produce_eager_tensors=True)
            b = time.perf_counter()
            outputs = loader.apply_transform_model(tensors)
            c = time.perf_counter()
            to_arrow.convert(outputs)
            d = time.perf_counter()
            for piece, value in (("to tensors", b - a), ("graph", c - b), ("to Arrow", d - c)):
                seconds.setdefault(piece, []).append(value)
    return {piece: float(np.median(values)) for piece, values in seconds.items()}


def run_tree(tree: Path, args) -> dict[str, float]:
    """`measure` in a child process with `tree` first on its path."""
    code = (f"import sys, json; sys.path.insert(0, {str(tree)!r}); from benchmarks.transform_batch import measure; "
            f"print('RESULT', json.dumps(measure({args.width}, {args.rows}, {args.repeats})))")
    env = os.environ | {"PYTHONPATH": str(tree), "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--width", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=2300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--against", type=Path, help="another source tree, measured alternately with this one")
    parser.add_argument("--rounds", type=int, default=2, help="alternations of the trees")
    args = parser.parse_args()
    trees = {"this tree": Path(__file__).resolve().parents[1]} | ({"against": args.against.resolve()} if args.against else {})
    results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(args.rounds if args.against else 1):
        for name, tree in trees.items():
            results[name].append(run_tree(tree, args))
    load = os.getloadavg()[0]
    print(f"{args.width} hashed features, {args.rows} rows a batch, median of {args.repeats} per round; "
          f"load average {load:.1f} at the end")
    for name, rounds in results.items():
        for index, result in enumerate(rounds):
            pieces = "  ".join(f"{piece} {value * 1000:,.1f} ms" for piece, value in result.items())
            print(f"  {name} (round {index + 1}): {pieces}")
    if args.against:
        for piece in results["this tree"][0]:
            ratios = [a[piece] / b[piece] for a, b in zip(results["this tree"], results["against"])]
            print(f"  this tree / against, {piece}: " + ", ".join(f"{r:.2f}x" for r in ratios))


if __name__ == "__main__":
    main()
