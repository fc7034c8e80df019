"""The calibration step fitted on the latest train day, with and without its day-ahead backtest, on logs whose base
rate drifts from day to day and on logs whose base rate holds still: mean prediction / eval rate and eval log-loss.

Per data seed and preset, the low-rate preset's logs are generated and preprocessed once (`--days` days, the last
one eval, `split.calibration_days: 1`) and adrank trains once with `training.calibration: intercept` on
`latest_train_days` and the backtest none. That one run gives, on the same eval examples, the model's own output
(`none`) and the output of the step as the held-out check alone keeps it (`step`); `backtested` is what the
trainer now serves: the step where `components.train.run_evaluation.backtested` (the trainer's own rule) keeps it,
the model's own output where it rejects it.

    .venv/bin/python benchmarks/calibration_drift.py [--seeds 7,8,9] [--days 6] [--presets drifting,stationary]
                                                      [--work DIR] [--set dotted.key=value ...]

Presets: `drifting` is `configs/examples/low_rate.yaml` as shipped (the base log-odds walks with std 0.25 a day);
`stationary` the same with `logs.synthetic.drift.base_rate_step=0` (ids still drift and arrive).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from components.logs.synthetic import generate_logs  # noqa: E402
from components.preprocess.manifest import MANIFEST_FILE, Manifest  # noqa: E402
from components.preprocess.run import preprocess  # noqa: E402
from components.train.run_evaluation import backtested  # noqa: E402
from components.train.training_run import train  # noqa: E402
from configs import load_config  # noqa: E402
from configs.slices import PreprocessStepConfig, TrainStepConfig  # noqa: E402

PRESET = ROOT / "configs" / "examples" / "low_rate.yaml"
IN_PROCESS = ["preprocess.direct_running_mode=in_memory", "preprocess.direct_num_workers=1"]
PRESETS = {"drifting": [], "stationary": ["logs.synthetic.drift.base_rate_step=0"]}
STEP = ["training.calibration=intercept", "training.calibration_data=latest_train_days",
        "training.calibration_backtest=none"]


def one_seed(preset: str, seed: int, args: argparse.Namespace, work: Path) -> dict:
    overrides = [*IN_PROCESS, "split.calibration_days=1", f"logs.synthetic.days={args.days}", f"seed={seed}",
                 *PRESETS[preset], *STEP, *args.overrides]
    config = load_config(PRESET, overrides=overrides)
    examples = work / f"{preset}-{seed}" / "examples"
    if not (examples / MANIFEST_FILE).exists():
        logs = generate_logs(PreprocessStepConfig.of(config), examples.parent / "logs")
        preprocess(PreprocessStepConfig.of(config), str(logs.directory), str(examples))
    manifest = Manifest.read(examples)
    task = manifest.tasks[0]
    target = config.targets[0].name
    with tempfile.TemporaryDirectory() as model_dir:
        summary = train(TrainStepConfig.of(config, target), target, 0, str(examples), model_dir)
    metrics, calibrator = summary.metrics[task], summary.calibrators.get(task)
    none = (metrics.uncalibrated_calibration, metrics.uncalibrated_logloss) if calibrator else (
        metrics.calibration, metrics.logloss)
    step = (metrics.calibration, metrics.logloss)
    decision, reason = "no step (held-out check)", summary.calibration_skipped.get(task, "")
    backtested_figures = none
    if calibrator is not None:
        with_backtest = load_config(PRESET, overrides=[*overrides, "training.calibration_backtest=day_ahead"])
        kept, reason = backtested(calibrator, manifest, task, with_backtest.training)
        decision = "kept" if kept is not None else "rejected"
        backtested_figures = step if kept is not None else none
        reason = kept.backtest.describe() if kept is not None and kept.backtest else (reason or "no backtest")
    days = manifest.splits["train"].days
    return {
        "preset": preset, "seed": seed, "task": task,
        "day_rates": [d.positives.get(task, 0) / d.examples for d in days],
        "day_positives": [d.positives.get(task, 0) for d in days],
        "eval_rate": manifest.splits["eval"].label_rates[task],
        "intercept": calibrator.intercept if calibrator else None,
        "none": none, "step": step, "backtested": backtested_figures, "decision": decision, "reason": reason,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="7,8,9")
    parser.add_argument("--days", type=int, default=6, help="days of logs: the last is eval, the rest train")
    parser.add_argument("--presets", default="drifting,stationary")
    parser.add_argument("--work", help="keep logs and preprocessed examples here (reused when present)")
    parser.add_argument("--set", action="append", default=[], dest="overrides", metavar="KEY=VALUE")
    args = parser.parse_args()
    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="adrank-calibration-drift-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    rows = []
    for preset in args.presets.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            row = one_seed(preset, seed, args, work)
            rows.append(row)
            rates = " ".join(f"{r:.3%}" for r in row["day_rates"])
            print(f"{preset} seed {seed}: train day rates {rates} (positives {row['day_positives']}), eval "
                  f"{row['eval_rate']:.3%}; step intercept {row['intercept']}; backtest: {row['decision']}: "
                  f"{row['reason']}", flush=True)

    print(f"\n== low-rate preset, {args.days} days (last eval), intercept on the latest train day; "
          f"{time.perf_counter() - started:.0f} s")
    print("| logs | seed | eval rate / last train day's | none: calibration, log-loss | step (held-out check only) "
          "| step with day-ahead backtest | backtest |")
    print("|" + "---|" * 7)
    for row in rows:
        shift = row["eval_rate"] / row["day_rates"][-1] if row["day_rates"][-1] else float("nan")
        cells = [f"{c:.3f}, {ll:.6f}" for c, ll in (row["none"], row["step"], row["backtested"])]
        print(f"| {row['preset']} | {row['seed']} | {shift:.3f} | {' | '.join(cells)} | {row['decision']} |")
    for preset in args.presets.split(","):
        chosen = [r for r in rows if r["preset"] == preset]
        ratio = {name: float(np.mean([r[name][1] / r["none"][1] for r in chosen])) for name in ("step", "backtested")}
        miss = {name: float(np.mean([abs(r[name][0] - 1) for r in chosen])) for name in ("none", "step", "backtested")}
        print(f"{preset}: log-loss vs none, mean over seeds: step {ratio['step']:.4f}, backtested "
              f"{ratio['backtested']:.4f}; mean |calibration − 1|: none {miss['none']:.3f}, step {miss['step']:.3f}, "
              f"backtested {miss['backtested']:.3f}")


if __name__ == "__main__":
    main()
