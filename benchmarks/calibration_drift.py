"""The calibration step fitted on the latest train day, with and without its day-ahead backtest, on logs whose base
rate drifts from day to day and on logs whose base rate holds still: mean prediction / eval rate and eval log-loss.

Per data seed and preset, the low-rate preset's logs are generated and preprocessed once (`--days` days, the last
one eval, `split.calibration_days: 1`) and adrank trains once with `training.calibration: intercept` on
`latest_train_days` and the backtest recorded only (`training.calibration_backtest: report`, the default). That
one run's exported model gives, on the same eval examples, the output of the step as the held-out check alone
keeps it (`step`, served as fitted) and, through the step's map inverted, the model's own output (`none`);
`backtested` is what the trainer serves with `training.calibration_backtest: enforce` (the step after
`components.train.run_evaluation.backtested`, the trainer's own rule: the move to the latest day's rate taken out
where the day-ahead backtest says it did not carry over, `move removed`); `drop` is serving the model's own output
in those seeds instead (a design measured worse: it drops the step's correction of the model's own bias too).

    .venv/bin/python benchmarks/calibration_drift.py [--seeds 7,8,9] [--days 6] [--presets drifting,stationary]
                                                      [--work DIR] [--set dotted.key=value ...]

Presets: `drifting` is `configs/examples/low_rate.yaml` as shipped (the base log-odds walks with std 0.25 a day,
id effects drift, new users and ads arrive); `ids_drift` the same with `logs.synthetic.drift.base_rate_step=0`
(the ids' drift and arrivals still move the observed rate); `stationary` with every drift off (the days differ by
sampling noise only).
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

from components.contracts.calibrator import Calibrator  # noqa: E402
from components.contracts.manifest import MANIFEST_FILE, Manifest  # noqa: E402
from components.evaluate.metrics import logloss  # noqa: E402
from components.logs.synthetic import generate_logs  # noqa: E402
from components.preprocess.run import preprocess  # noqa: E402
from components.train.run_evaluation import backtested  # noqa: E402
from components.train.training_run import train  # noqa: E402
from configs import load_config  # noqa: E402
from configs.slices import PreprocessStepConfig, TrainStepConfig  # noqa: E402

PRESET = ROOT / "configs" / "examples" / "low_rate.yaml"
IN_PROCESS = ["preprocess.direct_running_mode=in_memory", "preprocess.direct_num_workers=1"]
PRESETS = {
    "drifting": [],
    "ids_drift": ["logs.synthetic.drift.base_rate_step=0"],
    "stationary": ["logs.synthetic.drift.base_rate_step=0", "logs.synthetic.drift.effect_drift=0",
                   "logs.synthetic.drift.new_users_per_day=0", "logs.synthetic.drift.new_ads_per_day=0"],
}
STEP = ["training.calibration=intercept", "training.calibration_data=latest_train_days",
        "training.calibration_backtest=report"]


def eval_predictions(model_dir: Path, examples: Path, manifest: Manifest, task: str) -> tuple[np.ndarray, np.ndarray]:
    """(labels, served probabilities) of the eval split, through the exported model's serving signature."""
    import tensorflow as tf

    from components.train.input import InputOptions, make_dataset

    serve = tf.saved_model.load(str(model_dir / "saved_model")).signatures["serving_transformed"]
    labels, served = [], []
    for features, batch_labels in make_dataset(examples, manifest, "eval",
                                               InputOptions(4096, training=False, drop_remainder=False)):
        served.append(serve(**features)[task].numpy().reshape(-1))
        labels.append(batch_labels[task].numpy().reshape(-1))
    return np.concatenate(labels).astype(np.float64), np.concatenate(served).astype(np.float64)


def own_output(served: np.ndarray, calibrator: Calibrator) -> np.ndarray:
    """The model's own probabilities from what a step served: the step's map inverted."""
    z = np.log(np.clip(served, 1e-12, 1)) - np.log1p(-np.clip(served, 0, 1 - 1e-12))
    return 1.0 / (1.0 + np.exp(-(z - calibrator.intercept) / calibrator.slope))


def figures(labels: np.ndarray, probabilities: np.ndarray) -> tuple[float, float]:
    return float(probabilities.mean() / labels.mean()), logloss(labels, probabilities)


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
        labels, served = eval_predictions(Path(model_dir), examples, manifest, task)
    calibrator = summary.calibrators.get(task)
    own = served if calibrator is None else own_output(served, calibrator)
    decision, line = "no step (held-out check)", summary.calibration_skipped.get(task, "")
    backtested_step = None
    if calibrator is not None:
        with_backtest = load_config(PRESET, overrides=[*overrides, "training.calibration_backtest=enforce"])
        backtested_step = backtested(calibrator, manifest, task, with_backtest.training)
        decision = ("no backtest" if backtested_step.backtest is None else "move kept"
                    if backtested_step.latest_move_removed is None else "move removed")
        line = backtested_step.backtest_line() or "no backtest"
    days = manifest.splits["train"].days
    return {
        "preset": preset, "seed": seed, "task": task,
        "day_rates": [d.positives.get(task, 0) / d.examples for d in days],
        "day_positives": [d.positives.get(task, 0) for d in days],
        "eval_rate": float(labels.mean()), "intercept": calibrator.intercept if calibrator else None,
        "none": figures(labels, own), "step": figures(labels, served),
        "backtested": figures(labels, own if backtested_step is None else backtested_step.apply(own)),
        "decision": decision, "reason": line,
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
          "| step after the day-ahead backtest | backtest |")
    print("|" + "---|" * 7)
    for row in rows:
        row["drop"] = row["none"] if row["decision"] == "move removed" else row["step"]
        shift = row["eval_rate"] / row["day_rates"][-1] if row["day_rates"][-1] else float("nan")
        cells = [f"{c:.3f}, {ll:.6f}" for c, ll in (row["none"], row["step"], row["backtested"])]
        print(f"| {row['preset']} | {row['seed']} | {shift:.3f} | {' | '.join(cells)} | {row['decision']} |")
    variants = ("step", "backtested", "drop")
    for preset in args.presets.split(","):
        chosen = [r for r in rows if r["preset"] == preset]
        ratio = {name: float(np.mean([r[name][1] / r["none"][1] for r in chosen])) for name in variants}
        miss = {name: float(np.mean([abs(r[name][0] - 1) for r in chosen])) for name in ("none", *variants)}
        print(f"{preset}, {len(chosen)} seeds: eval log-loss / none's, mean: "
              + ", ".join(f"{name} {ratio[name]:.4f}" for name in variants)
              + "; mean |calibration − 1|: " + ", ".join(f"{name} {value:.3f}" for name, value in miss.items()))


if __name__ == "__main__":
    main()
