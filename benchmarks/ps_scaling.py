"""Synchronous CPU training vs asynchronous parameter-server training (`cpu-ps`) with 1, 2 and 4 workers, on
this machine, side by side in one run.

    .venv/bin/python benchmarks/ps_scaling.py [--examples DIR] [--workers 1,2,4] [--epochs 1]

DIR is a preprocess output (manifest.json; e.g. `runs/<run-id>/artifacts/*/preprocess/examples`); without it
45k synthetic transformed examples are written to a temp dir. Every variant trains the default model once
through `train()`, each in its own process (a `cpu-ps` run starts its own cluster of 1 ps and N worker
processes on 127.0.0.1 and is their chief), for the same number of steps of the same global batch: the same
number of examples, so the eval log-loss is compared after the same amount of data. Prints examples/s as
ratios to the 1-worker `cpu-ps` run and to the synchronous run, the eval log-loss, the input stall and the
machine it ran on (cores, CPU model, load average: every process of every variant shares these cores).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def variant_targets(variant: str) -> str:
    """The `targets` override of a variant: 'sync' or 'ps:N' (N workers, 1 parameter server)."""
    if variant == "sync":
        return "targets=[{name: cpu, kind: cpu}]"
    workers = int(variant.split(":")[1])
    return (f"targets=[{{name: cpu-ps, kind: cpu-ps, local_cluster: {{workers: {workers}, "
            "parameter_servers: 1}}]")


def variant_overrides(variant: str) -> list[str]:
    """The variant's targets, and the default config's `retraining.target` moved to its one target."""
    return [variant_targets(variant), f"retraining.target={'cpu' if variant == 'sync' else 'cpu-ps'}"]


# The synthetic examples (tests/components/train/fixture_data.py) give user_id, the default config's first feature,
# 50 table rows: the config they are trained with says the same, as the trainer checks.
SYNTHETIC_EXAMPLES_CONFIG = ["features.0.hash_buckets=50"]


def train_variant(variant: str, examples: str, model_dir: str, epochs: int, overrides: list[str]) -> None:
    """Child process: one training run of the variant; prints its RunSummary as one JSON line."""
    from components.train.training_run import train
    from configs import load_config
    from configs.slices import TrainStepConfig

    # 4 chunks an epoch: examples/s is timed over the chunks after the first (tracing and start-up excluded)
    config = load_config(None, [*variant_overrides(variant), f"training.epochs={epochs}",
                                "training.checkpoints_per_epoch=4", "runs_per_target=1", *overrides])
    target = config.targets[0].name
    summary = train(TrainStepConfig.of(config, target), target, 0, examples, model_dir)
    print("SUMMARY " + summary.model_dump_json(), flush=True)


def run_variant(variant: str, examples: str, epochs: int, timeout_s: int, overrides: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("TF_CONFIG", None)
    with tempfile.TemporaryDirectory() as model_dir:
        started = time.perf_counter()
        result = subprocess.run(
            [sys.executable, __file__, "--variant", variant, "--examples", examples, "--model-dir", model_dir,
             "--epochs", str(epochs), *(f"--set={override}" for override in overrides)], capture_output=True, text=True, env=env, timeout=timeout_s,
        )
        elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"variant {variant} failed:\n{result.stderr[-4000:]}")
    line = next(line for line in result.stdout.splitlines() if line.startswith("SUMMARY "))
    return {**json.loads(line[len("SUMMARY "):]), "process_seconds": elapsed}


def machine() -> str:
    model = platform.processor() or "unknown CPU"
    try:
        model = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cores} cores available ({model}), {platform.system()} {platform.release()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", help="preprocess output directory (with manifest.json)")
    parser.add_argument("--workers", default="1,2,4", help="cpu-ps worker counts, comma-separated")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--timeout", type=int, default=900, help="seconds per variant")
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", help=argparse.SUPPRESS)
    parser.add_argument("--set", action="append", default=[], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        train_variant(args.variant, args.examples, args.model_dir, args.epochs, args.set)
        return

    examples, overrides = args.examples, []
    if examples is None:
        overrides = SYNTHETIC_EXAMPLES_CONFIG
        sys.path.insert(0, str(ROOT / "tests/components/train"))
        from fixture_data import write_transformed_examples

        examples = tempfile.mkdtemp()
        write_transformed_examples(examples, train=45_000, eval=8192, shards=4)
    workers = [int(w) for w in args.workers.split(",")]
    print(f"machine: {machine()}; load average before: {os.getloadavg()[0]:.1f}")
    results = {}
    for variant in ["sync"] + [f"ps:{w}" for w in workers]:
        results[variant] = run_variant(variant, examples, args.epochs, args.timeout, overrides)
        run = results[variant]
        print(f"  {variant:>5}: {run['examples_per_second']:,.0f} examples/s, log-loss "
              f"{_logloss(run):.5f}, {run['process_seconds']:.0f} s", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")

    one_worker = results[f"ps:{workers[0]}"]["examples_per_second"]
    sync = results["sync"]["examples_per_second"]
    examples_trained = results["sync"]["steps"] * results["sync"]["global_batch_size"]
    print(f"\nevery variant: {examples_trained:,} examples ({results['sync']['steps']} steps of "
          f"{results['sync']['global_batch_size']}), eval log-loss over {_eval_examples(results['sync']):,} examples")
    header = ["variant", "strategy", "workers", "examples/s", f"vs ps {workers[0]} worker", "vs sync",
              "eval log-loss", "input stall", "process s"]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for variant, run in results.items():
        rate = run["examples_per_second"]
        worker_count = "—" if variant == "sync" else variant.split(":")[1]
        stall = run.get("input_stall_fraction")
        print("| " + " | ".join([
            "sync cpu" if variant == "sync" else f"cpu-ps {worker_count}w/1ps", run["hardware"]["strategy"].lstrip("_"),
            worker_count, f"{rate:,.0f}", f"{rate / one_worker:.2f}×" if one_worker else "—",
            f"{rate / sync:.2f}×" if sync else "—", f"{_logloss(run):.5f}",
            f"{stall:.0%}" if stall is not None else "—", f"{run['process_seconds']:.0f}",
        ]) + " |")


def _logloss(run: dict) -> float:
    values = [m["logloss"] for m in run["metrics"].values()]
    return sum(values) / len(values)


def _eval_examples(run: dict) -> int:
    return next(iter(run["metrics"].values()))["examples"]


if __name__ == "__main__":
    main()
