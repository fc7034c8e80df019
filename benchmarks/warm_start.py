"""Warm start with a short budget against cold start with the full budget, day by day over drifting synthetic logs.

    synthetic logs with drift (configs/examples/daily.yaml) ─► day 1 … N: preprocess the day's lookback window
    day 1:   cold, full budget                 ─► the first champion of both chains
    day k>1: cold, full budget (--epochs)       ┐ the same day's examples: eval log-loss side by side, paired
             warm from yesterday's warm model,  ┘ difference (warm − cold) with its 95% CI on the raw eval
             short budget (--warm-epochs)         examples, and wall time of each as a ratio

    .venv/bin/python benchmarks/warm_start.py [--days 4] [--epochs 3] [--warm-epochs 1] [--config FILE]
        [--set dotted.key=value ...] [--work DIR]

Prints one row per day and the mean over the warm days. Both chains train the same model with the same seed; only
the start (champion weights or fresh) and the number of epochs differ.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from components.contracts.manifest import Manifest  # noqa: E402
from components.logs.synthetic import generate_logs  # noqa: E402
from components.preprocess.run import preprocess  # noqa: E402
from components.registry.scoring import EvalSplit, ServingModel, paired_logloss  # noqa: E402
from components.train.export import SAVED_MODEL_DIR  # noqa: E402
from components.train.training_run import train  # noqa: E402
from configs import load_config  # noqa: E402
from configs.slices import PreprocessStepConfig, TrainStepConfig  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(ROOT / "configs/examples/daily.yaml"))
    parser.add_argument("--days", type=int, default=4, help="days replayed (the first trains the first champion)")
    parser.add_argument("--epochs", type=int, default=3, help="the cold chain's (full) budget")
    parser.add_argument("--warm-epochs", type=int, default=1, help="the warm chain's (short) budget")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--work", default=None, help="keep logs, examples and models here (default: a temp dir)")
    args = parser.parse_args()

    base = load_config(args.config, args.overrides)
    lookback = base.logs.lookback_days or 3
    needed = lookback + args.days - 1
    config = load_config(args.config, [*args.overrides, f"logs.synthetic.days={max(needed, base.logs.synthetic.days)}",
                                       f"logs.lookback_days={lookback}", "training.warm_start=none"])
    work = Path(args.work or tempfile.mkdtemp(prefix="adrank-warm-start-"))
    logs_dir = work / "logs"
    if not (logs_dir / "ground_truth.json").exists():
        generate_logs(PreprocessStepConfig.of(config), logs_dir)
    cold = load_config(args.config, [*args.overrides, f"logs.lookback_days={lookback}", f"training.epochs={args.epochs}"])
    warm = load_config(args.config, [*args.overrides, f"logs.lookback_days={lookback}",
                                     f"training.epochs={args.warm_epochs}"])
    target = config.targets[0].name
    task = config.tasks[0].name
    print(f"{config.name}: {args.days} days, {lookback}-day lookback, cold {args.epochs} epochs vs warm "
          f"{args.warm_epochs} epoch(s); work dir {work}")
    header = f"{'day':>3} {'window end':>10} {'eval':>6} {'floor':>8} {'cold':>8} {'warm':>8} " \
             f"{'warm−cold [95% CI]':>30} {'cold s':>7} {'warm s':>7} {'time ratio':>10}"
    print(header)
    start = config.logs.synthetic.start_date + dt.timedelta(days=lookback)
    champion = None
    rows = []
    for day in range(args.days):
        window_end = dt.datetime.combine(start + dt.timedelta(days=day), dt.time(), dt.timezone.utc)
        examples_dir = work / f"day{day + 1}" / "examples"
        if not (examples_dir / "manifest.json").exists():
            preprocess(PreprocessStepConfig.of(config), str(logs_dir), str(examples_dir),
                       window_end=f"{window_end:%Y-%m-%dT%H:%M:%SZ}")
        manifest = Manifest.read(examples_dir)
        floor = (manifest.splits["eval"].bayes_logloss or {}).get(task)
        cold_run = _train(cold, target, examples_dir, work / f"day{day + 1}" / "cold", None)
        if champion is None:
            champion = cold_run.model_uri
            print(f"{day + 1:>3} {window_end:%Y-%m-%d} {manifest.splits['eval'].examples:>6} {_f(floor)} "
                  f"{cold_run.metrics[task].logloss:8.5f} {'—':>8} {'(first champion, cold)':>30} "
                  f"{cold_run.wall_time_seconds:7.1f}")
            continue
        warm_run = _train(warm, target, examples_dir, work / f"day{day + 1}" / "warm", champion)
        comparison = paired_logloss(EvalSplit.locate(examples_dir, task), ServingModel(warm_run.model_uri),
                                    ServingModel(cold_run.model_uri))
        low, high = comparison.difference_ci95
        ratio = warm_run.wall_time_seconds / cold_run.wall_time_seconds
        rows.append((comparison.challenger_logloss / comparison.champion_logloss, ratio, comparison.difference))
        print(f"{day + 1:>3} {window_end:%Y-%m-%d} {comparison.examples:>6} {_f(floor)} {comparison.champion_logloss:8.5f} "
              f"{comparison.challenger_logloss:8.5f} {comparison.difference:+9.5f} [{low:+.5f}, {high:+.5f}] "
              f"{cold_run.wall_time_seconds:7.1f} {warm_run.wall_time_seconds:7.1f} {ratio:9.2f}x")
        champion = warm_run.model_uri  # tomorrow's warm start: today's warm model, as a promoted champion
    if rows:
        losses, times, differences = zip(*rows)
        print(f"mean over {len(rows)} warm days: log-loss warm/cold {np.mean(losses):.4f}, "
              f"warm − cold {np.mean(differences):+.5f}, wall time warm/cold {np.mean(times):.2f}x")
    return 0


def _train(config, target: str, examples_dir: Path, model_dir: Path, warm_start_from: str | None):
    started = time.perf_counter()
    run = train(TrainStepConfig.of(config, target), target, 0, str(examples_dir), str(model_dir),
                warm_start_from=warm_start_from)
    assert run.model_uri == str(model_dir / SAVED_MODEL_DIR)
    run.wall_time_seconds = time.perf_counter() - started
    return run


def _f(value: float | None) -> str:
    return f"{value:8.5f}" if value is not None else f"{'—':>8}"


if __name__ == "__main__":
    sys.exit(main())
