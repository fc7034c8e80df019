"""Eval log-loss of adrank's trainer vs a straightforward Keras DCN-v2 on the same preprocessed data.

Two data sets, each preprocessed once: (a) the synthetic default (`configs/local.yaml`) and (b) a click log
in TalkingData's shape (`components/logs/click_log.py`, `configs/examples/click_log.yaml`). On each, adrank's
`train()` with the config's defaults and the plain model (per-feature `keras.layers.Embedding` with Keras
defaults, 2 cross layers, a 64-64 MLP, Adam 1e-3, batch 512, `model.fit`) train once per seed; the plain
model trains as many epochs as adrank (`--plain-epochs` to change) and is evaluated after every epoch.

    .venv/bin/python benchmarks/quality.py [--seeds 3] [--datasets synthetic,click_log] [--clicks-per-day N]
                                           [--work DIR] [--set dotted.key=value ...]

Prints log-loss mean ± std, AUC and calibration (mean prediction / positive rate) per model, the eval
log-loss after each epoch, and the adrank/plain log-loss ratio (≤ 1.00: adrank is at least as good).
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

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from components.evaluate import metrics  # noqa: E402
from components.logs.click_log import ClickLogSpec, write_click_log  # noqa: E402
from components.logs.synthetic import generate_logs  # noqa: E402
from components.preprocess.manifest import MANIFEST_FILE, Manifest  # noqa: E402
from components.preprocess.run import preprocess  # noqa: E402
from components.train.input import InputOptions, make_dataset  # noqa: E402
from components.train.task import train  # noqa: E402
from plain_keras import plain_keras_dcn  # noqa: E402  (benchmarks/ is on sys.path as the script's folder)
from configs import AdrankConfig, load_config  # noqa: E402

IN_PROCESS = ["preprocess.direct_running_mode=in_memory", "preprocess.direct_num_workers=1"]
PLAIN_BATCH = 512
PLAIN_LEARNING_RATE = 1e-3


def scores(labels: np.ndarray, probabilities: np.ndarray) -> dict[str, float]:
    return {
        "logloss": metrics.logloss(labels, probabilities),
        "auc": metrics.auc(labels, probabilities),
        "calibration": metrics.calibration(labels, probabilities),
    }


def eval_arrays(examples: str, manifest: Manifest, task: str):
    data = make_dataset(examples, manifest, "eval", InputOptions(batch_size=4096, training=False, drop_remainder=False))
    features, labels = [], []
    for batch_features, batch_labels in data:
        features.append(batch_features)
        labels.append(batch_labels[task].numpy().reshape(-1))
    return features, np.concatenate(labels)


def train_plain(
    examples: str, manifest: Manifest, embedding_dim: int, seed: int, epochs: int, shuffle_buffer: int
) -> list[dict]:
    """Scores after each epoch of the plain model (input shuffled like adrank's: the same buffer)."""
    keras.utils.set_random_seed(seed)
    task = manifest.tasks[0]
    model = plain_keras_dcn(manifest, embedding_dim, learning_rate=PLAIN_LEARNING_RATE)  # 2 crosses, 64-64 MLP
    options = InputOptions(batch_size=PLAIN_BATCH, training=True, seed=seed, shuffle_buffer=shuffle_buffer,
                           drop_remainder=False)
    data = make_dataset(examples, manifest, "train", options)
    eval_features, eval_labels = eval_arrays(examples, manifest, task)
    predict = tf.function(lambda features: model(features, training=False)[task])
    per_epoch = []
    for _ in range(epochs):
        model.fit(data, epochs=1, verbose=0)
        probabilities = np.concatenate([predict(f).numpy().reshape(-1) for f in eval_features])
        per_epoch.append(scores(eval_labels, probabilities))
    return per_epoch


def train_adrank(config: AdrankConfig, examples: str, run_index: int) -> tuple[dict, list[float | None], float]:
    """Scores of `train()` with the config's defaults, its per-epoch eval log-loss, its effective LR."""
    with tempfile.TemporaryDirectory() as model_dir:
        summary = train(config, config.targets[0].name, run_index, examples, model_dir)
    task = next(iter(summary.metrics))
    result = summary.metrics[task]
    curve = [p.eval_logloss for p in summary.curve if getattr(p, "epoch", None) is not None]
    return {"logloss": result.logloss, "auc": result.auc, "calibration": result.calibration}, curve, summary.learning_rate


def prepared(name: str, work: Path, overrides: list[str], clicks_per_day: int) -> tuple[AdrankConfig, str]:
    """(config, examples dir), preprocessing once per data set and size (kept under `work`)."""
    if name == "synthetic":
        base, logs_overrides = None, []
    elif name == "click_log":
        csv_path = work / f"click_log_{clicks_per_day}.csv"
        base, logs_overrides = ROOT / "configs/examples/click_log.yaml", [f"logs.impressions={csv_path}"]
    else:
        raise SystemExit(f"error: unknown data set '{name}' (synthetic, click_log)")
    config = load_config(base, overrides=[*IN_PROCESS, *logs_overrides, *overrides])
    examples = work / (f"{name}_{clicks_per_day}" if name == "click_log" else name) / "examples"
    if not (examples / MANIFEST_FILE).exists():
        started = time.perf_counter()
        logs_dir = None
        if name == "synthetic":
            logs_dir = str(generate_logs(config, examples.parent / "logs").directory)
        else:
            write_click_log(work / f"click_log_{clicks_per_day}.csv", ClickLogSpec(clicks_per_day=clicks_per_day))
        preprocess(config, logs_dir, str(examples))
        print(f"[{name}] preprocessed in {time.perf_counter() - started:.0f} s", flush=True)
    return config, str(examples)


def describe(values: list[float]) -> str:
    return f"{np.mean(values):.5f} ± {np.std(values, ddof=1) if len(values) > 1 else 0.0:.5f}"


def compare(name: str, config: AdrankConfig, examples: str, seeds: int, plain_epochs: int | None) -> float:
    manifest = Manifest.read(examples)
    resolved_epochs = config.training.epochs
    epochs = plain_epochs or resolved_epochs
    adrank, adrank_curves, plain_curves = [], [], []
    started = time.perf_counter()
    for run_index in range(seeds):
        result, curve, learning_rate = train_adrank(config, examples, run_index)
        adrank.append(result)
        adrank_curves.append(curve)
        plain_curves.append(train_plain(
            examples, manifest, config.model.embedding_dim, config.seed + run_index, epochs,
            config.training.shuffle_buffer,
        ))
    plain = [curve[-1] for curve in plain_curves]
    split = manifest.splits
    task = manifest.tasks[0]
    print(f"\n== {name}: {split['train'].examples:,} train / {split['eval'].examples:,} eval examples, "
          f"positive rate {split['eval'].label_rates[task]:.4f}, constant-rate log-loss "
          f"{manifest.constant_ctr_logloss(task):.5f}, {seeds} seeds, {time.perf_counter() - started:.0f} s")
    print(f"adrank: {config.model.kind} dim {config.model.embedding_dim} deep {config.model.deep_layers}, "
          f"batch {config.training.global_batch_size}, {resolved_epochs} epochs, effective lr {learning_rate:g}, "
          f"tables: {config.training.embedding_optimizer}, shuffle buffer {config.training.shuffle_buffer:,}")
    print(f"plain:  dcn-v2 dim {config.model.embedding_dim} deep [64, 64], batch {PLAIN_BATCH}, {epochs} epochs, "
          f"lr {PLAIN_LEARNING_RATE:g}")
    print(f"{'model':>8} {'log-loss mean ± std':>22} {'AUC':>7} {'calibration':>12}")
    for label, runs in (("adrank", adrank), ("plain", plain)):
        print(f"{label:>8} {describe([r['logloss'] for r in runs]):>22} {np.mean([r['auc'] for r in runs]):7.4f} "
              f"{np.mean([r['calibration'] for r in runs]):12.3f}")
    if all(adrank_curves):
        print("adrank eval log-loss per epoch:", " ".join(f"{np.mean(v):.5f}" for v in zip(*adrank_curves)))
    plain_by_epoch = [np.mean([c[e]["logloss"] for c in plain_curves]) for e in range(epochs)]
    print(" plain eval log-loss per epoch:", " ".join(f"{v:.5f}" for v in plain_by_epoch))
    ratio = np.mean([r["logloss"] for r in adrank]) / np.mean([r["logloss"] for r in plain])
    best_ratio = np.mean([r["logloss"] for r in adrank]) / min(plain_by_epoch)
    print(f"ratio adrank/plain log-loss: {ratio:.3f} (vs plain's best epoch: {best_ratio:.3f})")
    return float(ratio)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--datasets", default="synthetic,click_log")
    parser.add_argument("--clicks-per-day", type=int, default=ClickLogSpec.clicks_per_day)
    parser.add_argument("--plain-epochs", type=int, help="default: adrank's epochs on that data set")
    parser.add_argument("--work", help="keep generated logs and preprocessed examples here (reused when present)")
    parser.add_argument("--set", action="append", default=[], dest="overrides", metavar="KEY=VALUE",
                        help="config override for adrank on every data set, e.g. training.epochs=3")
    args = parser.parse_args()
    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="adrank-quality-"))
    work.mkdir(parents=True, exist_ok=True)
    ratios = {}
    for name in args.datasets.split(","):
        config, examples = prepared(name, work, args.overrides, args.clicks_per_day)
        ratios[name] = compare(name, config, examples, args.seeds, args.plain_epochs)
    print("\nratios adrank/plain:", json.dumps({k: round(v, 3) for k, v in ratios.items()}))


if __name__ == "__main__":
    main()
