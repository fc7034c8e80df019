"""The calibration step's effect: mean prediction / eval rate and eval log-loss before and after it.

On the low-rate preset (`configs/examples/low_rate.yaml`), preprocessed once, adrank trains `--seeds` times with
`training.calibration` none, intercept and platt (the same seeds for each). A method alone fits on a slice of
the train split held out of training (`training.calibration_holdout_fraction`, default 10%); `METHOD:latest`
fits on the last train day (`training.calibration_data: latest_train_days`, preprocessed with
`split.calibration_days: 1`), which is trained on as well. Each run reports its metrics both before the step
(the model's own output) and after it (what serving returns); `none` trains on the whole split.

    .venv/bin/python benchmarks/calibration.py [--seeds 3] [--methods none,intercept,platt,intercept:latest]
                                               [--impressions-per-day N] [--work DIR] [--set dotted.key=value ...]

Prints per method: calibration before → after, log-loss before → after and its ratio to `none`, AUC, and the
train and eval base rates (a model that learned the train rate lands near train rate / eval rate).
"""

from __future__ import annotations

import argparse
import json
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

from components.contracts.manifest import MANIFEST_FILE, Manifest  # noqa: E402
from components.logs.synthetic import generate_logs  # noqa: E402
from components.preprocess.run import preprocess  # noqa: E402
from components.train.training_run import train  # noqa: E402
from configs import load_config  # noqa: E402
from configs.slices import PreprocessStepConfig, TrainStepConfig  # noqa: E402

PRESET = ROOT / "configs" / "examples" / "low_rate.yaml"
IN_PROCESS = ["preprocess.direct_running_mode=in_memory", "preprocess.direct_num_workers=1"]


def mean(values: list[float]) -> float:
    return float(np.mean(values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--methods", default="none,intercept,platt")
    parser.add_argument("--impressions-per-day", type=int, help="default: the preset's")
    parser.add_argument("--work", help="keep logs and preprocessed examples here (reused when present)")
    parser.add_argument("--set", action="append", default=[], dest="overrides", metavar="KEY=VALUE")
    args = parser.parse_args()
    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="adrank-calibration-"))
    work.mkdir(parents=True, exist_ok=True)
    base = [*IN_PROCESS, "split.calibration_days=1", *args.overrides]
    if args.impressions_per_day:
        base.append(f"logs.synthetic.impressions_per_day={args.impressions_per_day}")
    config = load_config(PRESET, overrides=base)
    examples = work / "examples"
    if not (examples / MANIFEST_FILE).exists():
        logs = generate_logs(PreprocessStepConfig.of(config), work / "logs")
        preprocess(PreprocessStepConfig.of(config), str(logs.directory), str(examples))
    manifest = Manifest.read(examples)
    if "calibration" not in manifest.splits:
        sys.exit(f"{examples} was preprocessed without the calibration split (split.calibration_days); "
                 "use a new --work directory")
    task = manifest.tasks[0]
    started = time.perf_counter()

    results: dict[str, list[dict]] = {}
    for method in args.methods.split(","):
        name, _, data = method.partition(":")
        data = {"": "holdout", "latest": "latest_train_days"}.get(data, data)
        settings = [f"training.calibration={name}", f"training.calibration_data={data}"]
        method_config = load_config(PRESET, overrides=[*base, *settings])
        results[method] = []
        for run_index in range(args.seeds):
            with tempfile.TemporaryDirectory() as model_dir:
                target = method_config.targets[0].name
                summary = train(TrainStepConfig.of(method_config, target), target, run_index, str(examples), model_dir)
            metrics = summary.metrics[task]
            calibrator = summary.calibrators.get(task)
            results[method].append({
                "seed": summary.seed, "logloss": metrics.logloss, "calibration": metrics.calibration,
                "auc": metrics.auc,
                "logloss_before": metrics.uncalibrated_logloss if calibrator else metrics.logloss,
                "calibration_before": metrics.uncalibrated_calibration if calibrator else metrics.calibration,
                "slope": calibrator.slope if calibrator else None,
                "intercept": calibrator.intercept if calibrator else None,
                "holdout_positives": calibrator.positives if calibrator else None,
            })
            print(f"{method} seed {summary.seed}: calibration {results[method][-1]['calibration_before']:.3f} → "
                  f"{metrics.calibration:.3f}, log-loss {results[method][-1]['logloss_before']:.6f} → "
                  f"{metrics.logloss:.6f}", flush=True)

    split = manifest.splits
    train_rate, eval_rate = split["train"].label_rates[task], split["eval"].label_rates[task]
    print(f"\n== low-rate preset: {split['train'].examples:,} train / {split['eval'].examples:,} eval examples; "
          f"train rate {train_rate:.4%}, eval rate {eval_rate:.4%} (shift train/eval {train_rate / eval_rate:.3f}); "
          f"{args.seeds} seeds, {time.perf_counter() - started:.0f} s of training")
    reference = mean([r["logloss"] for r in results.get("none", [])]) if "none" in results else None
    print("| calibration | mean prediction / eval rate, before → after | log-loss before → after | vs none | AUC | "
          "fitted slope, intercept |")
    print("|" + "---|" * 6)
    for method, runs in results.items():
        fitted = "—"
        if runs[0]["slope"] is not None:
            fitted = f"{mean([r['slope'] for r in runs]):.3f}, {mean([r['intercept'] for r in runs]):+.3f}"
        after = mean([r["logloss"] for r in runs])
        versus = f"{after / reference:.4f}" if reference else "—"
        print(f"| {method} | {mean([r['calibration_before'] for r in runs]):.3f} → "
              f"{mean([r['calibration'] for r in runs]):.3f} | {mean([r['logloss_before'] for r in runs]):.6f} → "
              f"{after:.6f} | {versus} | {mean([r['auc'] for r in runs]):.4f} | {fitted} |")
    (work / "calibration.json").write_text(json.dumps(results, indent=2))
    print(f"\nper-run figures: {work / 'calibration.json'}")


if __name__ == "__main__":
    main()
