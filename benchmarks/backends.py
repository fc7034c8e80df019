"""Both training lanes side by side on the same blocks, config and seeds (each lane in a process of its own: Keras
picks its backend once per process, and the JAX lane runs without TensorFlow).

    .venv/bin/python benchmarks/backends.py [--examples DIR] [--seeds 3] [--table-rows 1000 4000000]

Prints, per lane and seed, the eval log-loss and AUC, the run's headline examples/s (steady training steps) and the
step's own rate fed from memory; each lane's mean with Welch's test of the log-loss; the table-scaling figure (each
lane's steady examples/s with one table (dim 32) of each of `--table-rows` rows, as a ratio to the smallest: the
TensorFlow lane's rows points of benchmarks/embeddings.py); and a plain
Keras DCN-v2 (`plain_keras.py`: `Embedding` per feature, `fit`) on each backend at the same batch on the same
examples. Without --examples it writes synthetic blocks in the default config's shape (its features and sizes;
components/train/synthetic_blocks.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # (not benchmarks/: its modules would shadow libraries' imports of the same names)

from components.train.synthetic_blocks import BlockShape, write_blocks  # noqa: E402

LANES = ("tensorflow", "jax")


def default_shape(user_rows: int) -> BlockShape:
    """configs/local.yaml's features with its table sizes (user_id hashed into `user_rows` buckets)."""
    return BlockShape(categorical={"user_id": user_rows, "ad_id": 404, "advertiser_id": 41, "ad_category": 21,
                                   "placement": 6, "device_os": 6, "country": 31},
                      numeric=["user_age", "ad_bid"], lists=(("user_interests", 61, 6),), positive_rate=0.15,
                      task="engagement")


def table_shape(rows: int) -> BlockShape:
    """One table of `rows` rows (and two numeric inputs): `benchmarks/embeddings.py`'s rows points, where the
    TensorFlow lane's step cost was measured flat in table rows."""
    return BlockShape(categorical={"item": rows}, numeric=["x0", "x1"], positive_rate=0.2, task="engagement")


def lane_config(lane: str, user_rows: int, epochs: int, table_rows: int | None = None):
    """The default config trained by one target of `lane`, user_id hashed into `user_rows` buckets; with
    `table_rows`, the features of `table_shape` at embedding dim 32 instead."""
    from configs import load_config

    config = load_config(None)
    values = config.model_dump()
    values["features"][0]["hash_buckets"] = user_rows
    if table_rows is not None:
        values["features"] = [{"name": "item", "kind": "categorical", "encoding": "hash", "hash_buckets": table_rows},
                              {"name": "x0", "kind": "numeric"}, {"name": "x1", "kind": "numeric"}]
        values["model"]["embedding_dim"] = 32
    values["training"].update(epochs=epochs, input_capacity_seconds=1.0)
    values["targets"] = [{"name": "bench", "kind": "cpu", "backend": lane, "price_per_hour": 0.38}]
    values["retraining"] = {**values["retraining"], "target": "bench"}
    return type(config).model_validate(values)


# -- what runs in a lane's own process ------------------------------------------------------------------------
def lane_job(job: dict) -> dict:
    """Train the lane's runs (and its plain Keras DCN) as `job` says; their figures."""
    from components.train import lanes
    from configs.slices import TrainStepConfig

    lanes.select_backend(job["lane"])
    results: dict = {"runs": [], "scaling": {}, "plain": None}
    config = TrainStepConfig.of(lane_config(job["lane"], job["user_rows"], job["epochs"]), "bench")
    for seed in range(job["seeds"]):
        run = lanes.train(config, "bench", seed, job["examples"], tempfile.mkdtemp())
        results["runs"].append({"seed": run.seed, "logloss": run.metrics["engagement"].logloss,
                                "auc": run.metrics["engagement"].auc, "examples_per_second": run.examples_per_second,
                                "step_examples_per_second": run.step_examples_per_second,
                                "hardware": run.hardware.strategy})
    for rows, directory in job["scaling"].items():
        scaled = TrainStepConfig.of(lane_config(job["lane"], job["user_rows"], 2, table_rows=int(rows)), "bench")
        results["scaling"][rows] = lanes.train(scaled, "bench", 0, directory, tempfile.mkdtemp()).examples_per_second
    results["plain"] = plain_keras_rate(job["examples"], job["epochs"]) if job["seeds"] else None
    return results


def plain_keras_rate(examples: str, epochs: int) -> float:
    """Examples/s of the plain Keras DCN-v2 (benchmarks/plain_keras.py) at the default config's model and batch."""
    from plain_keras import fit_rate

    from configs import load_config

    config = load_config(None)
    return fit_rate(examples, epochs, config.training.global_batch_size, config.model.embedding_dim,
                    config.model.cross_layers, config.model.deep_layers, config.training.learning_rate)


# -- the comparison -------------------------------------------------------------------------------------------
def run_lane(lane: str, job: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    completed = subprocess.run([sys.executable, __file__, "--lane-job", json.dumps({**job, "lane": lane})],
                               capture_output=True, text=True, env={**env, "PYTHONPATH": str(ROOT)})
    if completed.returncode != 0:
        raise SystemExit(f"the {lane} lane failed:\n{completed.stderr[-4000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lane-job", help=argparse.SUPPRESS)
    parser.add_argument("--examples", help="a preprocess output with blocks (default: synthetic blocks)")
    parser.add_argument("--seeds", type=int, default=3, help="runs per lane (0: the table scaling alone)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--train", type=int, default=43_008, help="synthetic train examples (default make run's)")
    parser.add_argument("--table-rows", type=int, nargs="*", default=[1_000, 4_000_000],
                        help="rows of the one table of the scaling points (synthetic blocks each)")
    args = parser.parse_args()
    if args.lane_job:
        print(json.dumps(lane_job(json.loads(args.lane_job))))
        return
    work = Path(tempfile.mkdtemp(prefix="adrank-backends-"))
    examples = args.examples
    user_rows = 4000
    if examples is None:
        examples = str(work / "default")
        write_blocks(examples, default_shape(user_rows), args.train, 15_000, seed=7, block_examples=512)
    scaling = {}
    for rows in args.table_rows:
        scaling[str(rows)] = str(work / f"rows-{rows}")
        write_blocks(scaling[str(rows)], table_shape(rows), 32_768, 2_048, seed=7, block_examples=512)
    job = {"examples": examples, "seeds": args.seeds, "epochs": args.epochs, "user_rows": user_rows,
           "scaling": scaling}
    results = {lane: run_lane(lane, job) for lane in LANES}
    report(results, args.table_rows)


def report(results: dict, table_rows: list[int]) -> None:
    from components.evaluate.run_statistics import welch_test

    if results["jax"]["runs"]:
        report_runs(results, welch_test)
    smallest = str(min(table_rows))
    print("\ntable scaling (steady examples/s with one table of N rows, dim 32; ratio to the smallest):")
    for lane in LANES:
        base = results[lane]["scaling"][smallest]
        points = ", ".join(f"{int(rows):,} rows {rate:,.0f} ({rate / base:.2f}x)"
                           for rows, rate in sorted(results[lane]["scaling"].items(), key=lambda kv: int(kv[0])))
        print(f"  {lane:<11} {points}")


def report_runs(results: dict, welch_test) -> None:
    print("lane        seed  log-loss   AUC     examples/s   step ex/s (memory)")
    for lane in LANES:
        for run in results[lane]["runs"]:
            step = f"{run['step_examples_per_second']:>11,.0f}" if run["step_examples_per_second"] else "—"
            print(f"{lane:<11} {run['seed']:>4}  {run['logloss']:.5f}  {run['auc']:.4f}  "
                  f"{run['examples_per_second']:>11,.0f}  {step}")
    means = {lane: sum(r["logloss"] for r in results[lane]["runs"]) / len(results[lane]["runs"]) for lane in LANES}
    rates = {lane: sum(r["examples_per_second"] for r in results[lane]["runs"]) / len(results[lane]["runs"])
             for lane in LANES}
    comparison = welch_test([r["logloss"] for r in results["jax"]["runs"]],
                            [r["logloss"] for r in results["tensorflow"]["runs"]], other="tensorflow")
    print(f"\nlog-loss: jax {means['jax']:.5f} vs tensorflow {means['tensorflow']:.5f} "
          f"({means['jax'] / means['tensorflow']:.4f}x); jax {comparison.verdict}")
    print(f"examples/s: jax {rates['jax']:,.0f} vs tensorflow {rates['tensorflow']:,.0f} "
          f"({rates['jax'] / rates['tensorflow']:.2f}x)")
    print("\nplain Keras DCN-v2 (Embedding per feature, fit) vs adrank, same batch, same examples:")
    for lane in LANES:
        plain = results[lane]["plain"]
        print(f"  {lane:<11} plain {plain:,.0f} examples/s, adrank {rates[lane]:,.0f} ({rates[lane] / plain:.2f}x)")


if __name__ == "__main__":
    main()
