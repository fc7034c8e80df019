"""What `training.deterministic` costs and what it buys: examples/s and run-to-run log-loss difference, on and off.

On the low-rate preset (`configs/examples/low_rate.yaml`: sparse SGD on the tables, where scatter-adds into
embedding rows are where thread timing can change a sum's order), preprocessed once, the same config and seed is
trained `--repeats` times with `training.deterministic` true and `--repeats` times with it false. Each run is its
own process (op determinism is process-wide in TensorFlow, as it is for a train step on Vertex).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/determinism.py [--repeats 2] [--impressions-per-day N]
                                                                [--work DIR] [--set dotted.key=value ...]

Prints per setting: each run's eval log-loss, the largest difference between two runs of the same seed, mean
examples/s and mean wall time, and the on/off ratio of examples/s side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PRESET = ROOT / "configs" / "examples" / "low_rate.yaml"
IN_PROCESS = ["preprocess.direct_running_mode=in_memory", "preprocess.direct_num_workers=1"]

ONE_RUN = """
import json, sys, tempfile
from components.train.training_run import train
from configs import load_config
from configs.slices import TrainStepConfig
config = load_config(sys.argv[1], overrides=json.loads(sys.argv[2]))
target = config.targets[0].name
with tempfile.TemporaryDirectory() as model_dir:
    summary = train(TrainStepConfig.of(config, target), target, 0, sys.argv[3], model_dir)
task = next(iter(summary.metrics))
print("RESULT " + json.dumps({"logloss": summary.metrics[task].logloss, "examples_per_second":
      summary.examples_per_second, "wall": summary.wall_time_seconds, "deterministic": summary.deterministic}))
"""


def train_once(overrides: list[str], examples: Path) -> dict:
    """One train() in a fresh process; its RESULT line."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", ONE_RUN, str(PRESET), json.dumps(overrides), str(examples)],
                          capture_output=True, text=True, env=env, check=True)
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--impressions-per-day", type=int, help="default: the preset's")
    parser.add_argument("--work", help="keep logs and preprocessed examples here (reused when present)")
    parser.add_argument("--set", action="append", default=[], dest="overrides", metavar="KEY=VALUE")
    args = parser.parse_args()
    from components.contracts.manifest import MANIFEST_FILE
    from components.logs.synthetic import generate_logs
    from components.preprocess.run import preprocess
    from configs import load_config
    from configs.slices import PreprocessStepConfig

    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="adrank-determinism-"))
    work.mkdir(parents=True, exist_ok=True)
    base = [*IN_PROCESS, *args.overrides]
    if args.impressions_per_day:
        base.append(f"logs.synthetic.impressions_per_day={args.impressions_per_day}")
    examples = work / "examples"
    if not (examples / MANIFEST_FILE).exists():
        config = load_config(PRESET, overrides=base)
        logs = generate_logs(PreprocessStepConfig.of(config), work / "logs")
        preprocess(PreprocessStepConfig.of(config), str(logs.directory), str(examples))

    results: dict[bool, list[dict]] = {}
    for deterministic in (True, False):
        results[deterministic] = []
        for repeat in range(args.repeats):
            result = train_once([*base, f"training.deterministic={str(deterministic).lower()}"], examples)
            results[deterministic].append(result)
            print(f"deterministic={deterministic} repeat {repeat + 1}: log-loss {result['logloss']:.8f}, "
                  f"{result['examples_per_second']:,.0f} examples/s, {result['wall']:.1f} s", flush=True)

    print("\n| training.deterministic | eval log-loss per run (same seed) | largest run-to-run difference | "
          "examples/s (mean) | wall s (mean) |")
    print("|---|---|---|---|---|")
    speed = {}
    for deterministic, runs in results.items():
        losses = [r["logloss"] for r in runs]
        speed[deterministic] = sum(r["examples_per_second"] for r in runs) / len(runs)
        wall = sum(r["wall"] for r in runs) / len(runs)
        print(f"| {str(deterministic).lower()} | {' '.join(f'{v:.8f}' for v in losses)} | "
              f"{max(losses) - min(losses):.2e} | {speed[deterministic]:,.0f} | {wall:.1f} |")
    if speed[False] > 0:
        print(f"\nexamples/s deterministic / not: {speed[True] / speed[False]:.3f}")


if __name__ == "__main__":
    main()
