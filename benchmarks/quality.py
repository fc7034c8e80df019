"""Eval log-loss of adrank's trainer vs a straightforward Keras DCN-v2 on the same preprocessed data.

Data sets, each preprocessed once per data settings: the synthetic default (`configs/local.yaml`), the
install-shaped low-rate preset (`configs/examples/low_rate.yaml`: ~0.2% positives, Zipf ids with a long tail
seen once, strong per-id effects, a base rate moving between days) and a click log in TalkingData's shape
(`components/logs/click_log.py`, `configs/examples/click_log.yaml`), and the low-rate preset on logs whose clicks
depend on history (`configs/examples/history_low_rate.yaml`: user propensity that drifts, ad fatigue); and with
history features over the ip, the ip-app and the app-channel pairs (`configs/examples/click_log_history.yaml`) the
click-log stand-in (`click_log_history`) and an install log shaped like the real one they were tried on
(`install_log`: id effects 2.5x the stand-in's, a quarter more rows repeating an earlier click within minutes,
which rarely install; docs/history_features.md). A data set
whose config has `kind: history` features is measured twice on the same logs and split: adrank without them
(the examples the plain model reads) and adrank with them. On each, adrank's `train()` with the
config's settings and the plain model (`benchmarks/plain_keras.py`: per-feature `keras.layers.Embedding` with
Keras defaults, dense Adam, `model.fit`) at the same hyperparameters (embedding size, crosses, deep layers,
batch, learning rate, epochs) and the same input order train once per seed; the plain model is evaluated after
every epoch, and its results are kept next to the examples so experiments on adrank train it once.

    .venv/bin/python benchmarks/quality.py [--seeds 3]
        [--datasets synthetic,low_rate,click_log,history_low_rate,click_log_history,install_log]
        [--clicks-per-day N] [--work DIR] [--set dotted.key=value ...] [--adrank-set dotted.key=value ...]
        [--history-variants without,with]

`--set` changes both models (data size, shared hyperparameters); `--adrank-set` only adrank (an experiment).
Prints per seed and on average log-loss, AUC and calibration (mean prediction / positive rate) side by side,
the eval log-loss after each epoch, the adrank/plain log-loss ratio, and whether the plain-model bar is met: ratio
<= 0.98, AUC not lower, calibration off by at most 10% more than the plain model's; whether the quality goal is:
ratio <= 1.01 (<= 0.95 with history features), calibration within 10% of 1 or no further off than the plain
model's; what each run's calibration step did (kept or skipped, log-loss without and with it on the held-out
examples that decided it and on the eval split); for a data set measured with and without history features, adrank
with / without them per seed with the paired p, or the finding that they cost log-loss on the held-out days
(`components.report.history_finding`); and last a Markdown table, one row per data set (and per
with/without history features): ratio, AUC and calibration of both models, and the quality goal.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from plain_keras import plain_keras_dcn  # noqa: E402  (benchmarks/ is on sys.path as the script's folder)

from components.contracts.manifest import MANIFEST_FILE, Manifest  # noqa: E402
from components.evaluate import metrics  # noqa: E402
from components.evaluate.run_statistics import paired_change  # noqa: E402
from components.logs.click_log import ClickLogSpec, write_click_log  # noqa: E402
from components.logs.synthetic import generate_logs, read_ground_truth  # noqa: E402
from components.preprocess.run import preprocess  # noqa: E402
from components.report.history_finding import history_cost_finding  # noqa: E402
from components.train.input import InputOptions, make_dataset  # noqa: E402
from components.train.step_plan import epochs_for_split, planned_train_examples  # noqa: E402
from components.train.training_run import train  # noqa: E402
from configs import AdrankConfig, load_config  # noqa: E402
from configs.features import history_features, model_inputs  # noqa: E402
from configs.slices import PreprocessStepConfig, TrainStepConfig  # noqa: E402
from foundation.canonical_json import canonical_json  # noqa: E402

# data set → (CSV name, config, generator spec): the click-log stand-in (defaults), the same log with history features
# over the ip, the ip-app and the app-channel pairs, and an install log shaped like the real one those features were
# tried on (components/logs/click_log.py: id effects 2.5x the stand-in's spread, a quarter more rows that repeat an
# earlier click within minutes and rarely install)
CLICK_LOGS = {
    "click_log": ("click_log", "configs/examples/click_log.yaml", ClickLogSpec()),
    "click_log_history": ("click_log", "configs/examples/click_log_history.yaml", ClickLogSpec()),
    "install_log": ("install_log", "configs/examples/click_log_history.yaml",
                    ClickLogSpec(effect_scale=2.5, repeat_share=0.25)),
}
IN_PROCESS = ["preprocess.direct_running_mode=in_memory", "preprocess.direct_num_workers=1"]
TARGET_LOGLOSS_RATIO = 0.98  # the plain-model bar
GOAL_RATIO, HISTORY_GOAL_RATIO = 1.01, 0.95  # the quality goals (quality_goal)


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
    examples: str, manifest: Manifest, config: AdrankConfig, seed: int, epochs: int
) -> list[dict]:
    """Scores after each epoch of the plain model, at adrank's hyperparameters (embedding size, crosses, deep
    layers, batch, learning rate) and fed by the same input pipeline (same buffer, same seed → same order)."""
    keras.utils.set_random_seed(seed)
    task = manifest.tasks[0]
    model = plain_keras_dcn(manifest, config.model.embedding_dim, cross_layers=config.model.cross_layers,
                            deep_layers=tuple(config.model.deep_layers), learning_rate=config.training.learning_rate)
    options = InputOptions(batch_size=config.training.global_batch_size, training=True, seed=seed,
                           shuffle_buffer=config.training.shuffle_buffer, drop_remainder=False)
    data = make_dataset(examples, manifest, "train", options)
    eval_features, eval_labels = eval_arrays(examples, manifest, task)
    predict = tf.function(lambda features: model(features, training=False)[task])
    per_epoch = []
    for _ in range(epochs):
        model.fit(data, epochs=1, verbose=0)
        probabilities = np.concatenate([predict(f).numpy().reshape(-1) for f in eval_features])
        per_epoch.append(scores(eval_labels, probabilities))
    return per_epoch


def trained_epochs(manifest: Manifest, config: AdrankConfig) -> int:
    """The epochs `train()` runs on `manifest`'s train split: `training.epochs`, raised on a small split by
    `training.min_train_steps` (components.train.step_plan). The plain model trains as many by default, so the two
    compare at the same steps (before, the plain model kept the configured epochs: 28 steps against adrank's 98 on
    a 10,000-row log, a model that had barely left the base rate)."""
    return epochs_for_split(planned_train_examples(manifest, config.training), config.training)


def cached_plain(examples: str, manifest: Manifest, config: AdrankConfig, seed: int, epochs: int) -> list[dict]:
    """`train_plain`, kept next to the examples per (plain settings, seed, epochs): experiments that change
    adrank only train the plain model once."""
    settings = config.model_dump(mode="json", include={"model", "training"}) | {"seed": seed, "epochs": epochs}
    digest = hashlib.sha256(canonical_json(settings).encode()).hexdigest()[:10]
    path = Path(examples).parent / f"plain-{digest}.json"
    if path.exists():
        return json.loads(path.read_text())
    per_epoch = train_plain(examples, manifest, config, seed, epochs)
    path.write_text(json.dumps(per_epoch))
    return per_epoch


def train_adrank(config: AdrankConfig, examples: str, run_index: int) -> tuple[dict, list[float | None], float]:
    """Scores of `train()` with the config's defaults, its per-epoch eval log-loss, its effective LR."""
    with tempfile.TemporaryDirectory() as model_dir:
        target = config.targets[0].name
        summary = train(TrainStepConfig.of(config, target), target, run_index, examples, model_dir)
    task = next(iter(summary.metrics))
    result = summary.metrics[task]
    curve = [p.eval_logloss for p in summary.curve if getattr(p, "epoch", None) is not None]
    measured = {"logloss": result.logloss, "auc": result.auc, "calibration": result.calibration,
                "calibration_step": calibration_step(summary, task)}
    return measured, curve, summary.learning_rate


def calibration_step(summary, task: str) -> str | None:
    """What the run's calibration step did, on the held-out examples that decided it and on the eval split;
    None when training.calibration is none."""
    metrics = summary.metrics[task]
    if task in summary.calibration_skipped:  # the reason names the held-out log-loss without and with the step
        return f"skipped: {summary.calibration_skipped[task].split(': serving')[0]}"
    if metrics.uncalibrated_logloss is None:
        return None
    eval_part = f"eval log-loss {metrics.uncalibrated_logloss:.6f} -> {metrics.logloss:.6f}"
    check = summary.calibrators[task].check if task in summary.calibrators else None
    held_out = (f"held-out log-loss {check.logloss_without:.6f} -> {check.logloss_with:.6f} "
                f"({check.positives} positives)" if check is not None else "no held-out check")
    return f"kept: {held_out}; {eval_part}"


def features_kept(config: AdrankConfig, history: bool) -> AdrankConfig:
    """`config` as is, or without its `kind: history` features and without the burn-in days that only feed them
    (`split.history_burn_in_days`): the plain model and adrank without history train on every day before eval."""
    if history:
        return config
    values = config.model_dump()
    values["features"] = [f for f in values["features"] if f["kind"] != "history"]
    values["split"]["history_burn_in_days"] = 0
    return AdrankConfig.model_validate(values)


def has_history_features(config: AdrankConfig) -> bool:
    return bool(history_features(config.features))


def prepared(
    name: str, work: Path, overrides: list[str], adrank_overrides: list[str], clicks_per_day: int,
    history: bool = False, positive_rate: float | None = None,
) -> tuple[AdrankConfig, AdrankConfig, str]:
    """(plain model's config, adrank's config, examples dir), preprocessing once per data set and per data
    settings (kept under `work`, in a folder named by a digest of the sections that shape the examples);
    `history`: keep the config's `kind: history` features (else they are left out)."""
    if name == "synthetic":
        base, logs_overrides = None, []
    elif name == "low_rate":
        base, logs_overrides = ROOT / "configs/examples/low_rate.yaml", []
    elif name == "history_low_rate":
        base, logs_overrides = ROOT / "configs/examples/history_low_rate.yaml", []
    elif name in CLICK_LOGS:
        csv_path = work / click_log_file(name, clicks_per_day, positive_rate)
        base, logs_overrides = ROOT / CLICK_LOGS[name][1], [f"logs.impressions={csv_path}"]
    else:
        raise SystemExit(f"error: unknown data set '{name}' (synthetic, low_rate, history_low_rate, "
                         f"{', '.join(CLICK_LOGS)})")
    shared = [*IN_PROCESS, *logs_overrides, *overrides]
    config = features_kept(load_config(base, overrides=shared), history)
    adrank_config = features_kept(load_config(base, overrides=[*shared, *adrank_overrides]), history)
    if examples_shape(adrank_config) != examples_shape(config):
        raise SystemExit("error: --adrank-set may change training and model settings only, not the examples")
    digest = hashlib.sha256(examples_shape(config).encode()).hexdigest()[:10]
    examples = work / f"{name}-{digest}" / "examples"
    if not (examples / MANIFEST_FILE).exists():
        started = time.perf_counter()
        logs_dir = None
        if config.logs.source == "synthetic":
            logs_dir = str(generate_logs(PreprocessStepConfig.of(config), examples.parent / "logs").directory)
        elif not (csv_path := work / click_log_file(name, clicks_per_day, positive_rate)).exists():
            spec = replace(CLICK_LOGS[name][2], clicks_per_day=clicks_per_day)
            write_click_log(csv_path, spec if positive_rate is None else replace(spec, positive_rate=positive_rate))
        preprocess(PreprocessStepConfig.of(config), logs_dir, str(examples))
        print(f"[{name}] preprocessed in {time.perf_counter() - started:.0f} s", flush=True)
    return config, adrank_config, str(examples)


def click_log_file(name: str, clicks_per_day: int, positive_rate: float | None) -> str:
    """The generated click log's file name: its generator, its size and, when not the generator's own, its rate."""
    rate = "" if positive_rate is None else f"_rate{positive_rate:g}"
    return f"{CLICK_LOGS[name][0]}_{clicks_per_day}{rate}.csv"


def examples_shape(config: AdrankConfig) -> str:
    """The config sections that decide the preprocessed examples, and the model inputs the features become
    (a history feature's inputs and their normalizations), as canonical JSON."""
    sections = config.model_dump(mode="json", include={"seed", "logs", "tasks", "split", "features", "preprocess"})
    if not sections["split"]["history_burn_in_days"]:  # examples preprocessed before the field existed stay valid
        del sections["split"]["history_burn_in_days"]
    sections["model_inputs"] = [feature.model_dump(mode="json") for feature in model_inputs(config.features)]
    return canonical_json(sections)


def describe(values: list[float]) -> str:
    return f"{np.mean(values):.5f} ± {np.std(values, ddof=1) if len(values) > 1 else 0.0:.5f}"


def history_effects_worth(logs_dir: Path, config: AdrankConfig, task: str) -> str | None:
    """On the eval days of history-shaped synthetic logs, what knowing each history effect exactly is worth: the
    Bayes floor (one intercept refitted) against the floor without the effect (ground_truth.json), as a share of
    the floor. No model can gain more from history features than these; None for logs without history effects."""
    truth = read_ground_truth(logs_dir)
    eval_days = truth["days"][-config.split.eval_days:] if truth else []
    records = [day["tasks"].get(task, {}) for day in eval_days]
    if not records or any("bayes_logloss_without" not in record for record in records):
        return None
    weights = [day["examples"] for day in eval_days]

    def mean(values):
        return sum(v * w for v, w in zip(values, weights, strict=True)) / sum(weights)

    floor = mean([record["bayes_logloss_refitted"] for record in records])
    effects = ", ".join(
        f"without {effect} {without:.5f} (+{without / floor - 1:.1%})"
        for effect in records[0]["bayes_logloss_without"]
        for without in [mean([record["bayes_logloss_without"][effect] for record in records])])
    return (f"history effects on the eval days (ground truth, one intercept refitted): Bayes floor {floor:.5f}; "
            f"{effects}: the most that knowing each exactly is worth")


def compare(name: str, plain_config: AdrankConfig, config: AdrankConfig, examples: str, seeds: int,
            plain_epochs: int | None, plain_examples: str | None = None) -> dict:
    """adrank on `examples` vs the plain model on `plain_examples` (default: the same examples): printed, and
    the means returned for the closing table."""
    manifest = Manifest.read(examples)
    plain_examples = plain_examples or examples
    plain_manifest = Manifest.read(plain_examples)
    resolved_epochs = trained_epochs(manifest, config)
    epochs = plain_epochs or trained_epochs(plain_manifest, plain_config)
    adrank, adrank_curves, plain_curves = [], [], []
    started = time.perf_counter()
    for run_index in range(seeds):
        result, curve, learning_rate = train_adrank(config, examples, run_index)
        adrank.append(result)
        adrank_curves.append(curve)
        plain_curves.append(cached_plain(plain_examples, plain_manifest, plain_config, config.seed + run_index, epochs))
    plain = [curve[-1] for curve in plain_curves]
    split = manifest.splits
    task = manifest.tasks[0]
    print(f"\n== {name}: {split['train'].examples:,} train / {split['eval'].examples:,} eval examples, "
          f"positive rate {split['eval'].label_rates[task]:.4f}, constant-rate log-loss "
          f"{manifest.constant_ctr_logloss(task):.5f}, {seeds} seeds, {time.perf_counter() - started:.0f} s")
    shift = split["eval"].label_rates[task] / split["train"].label_rates[task] if split["train"].label_rates[task] else 1.0
    print(f"eval/train positive rate {shift:.2f}: a model calibrated on the train split predicts ~{1 / shift:.2f} "
          f"of the eval rate (base-rate shift between days)")
    if (worth := history_effects_worth(Path(examples).parent / "logs", config, task)) is not None:
        print(worth)
    print(f"adrank: {config.model.kind} dim {config.model.embedding_dim} deep {config.model.deep_layers}, "
          f"batch {config.training.global_batch_size}, {resolved_epochs} epochs, effective lr {learning_rate:g}, "
          f"tables: {config.training.embedding_optimizer}, shuffle buffer {config.training.shuffle_buffer:,}")
    plain_model, plain_training = plain_config.model, plain_config.training
    print(f"plain:  dcn-v2 dim {plain_model.embedding_dim} {plain_model.cross_layers} crosses deep "
          f"{plain_model.deep_layers}, batch {plain_training.global_batch_size}, {epochs} epochs, "
          f"Adam {plain_training.learning_rate:g}, keras.layers.Embedding per feature, same input order")
    print(f"{'model':>8} {'log-loss mean ± std':>22} {'AUC':>7} {'calibration':>12}")
    for label, runs in (("adrank", adrank), ("plain", plain)):
        print(f"{label:>8} {describe([r['logloss'] for r in runs]):>22} {np.mean([r['auc'] for r in runs]):7.4f} "
              f"{np.mean([r['calibration'] for r in runs]):12.3f}")
    if all(adrank_curves):
        print("adrank eval log-loss per epoch:", " ".join(f"{np.mean(v):.5f}" for v in zip(*adrank_curves)))
    plain_by_epoch = [np.mean([c[e]["logloss"] for c in plain_curves]) for e in range(epochs)]
    print(" plain eval log-loss per epoch:", " ".join(f"{v:.5f}" for v in plain_by_epoch))
    print(f"{'seed':>6} {'adrank':>9} {'plain':>9} {'ratio':>6} {'AUC a/p':>15} {'calibration a/p':>16}")
    for run_index, (a, p) in enumerate(zip(adrank, plain)):
        print(f"{config.seed + run_index:>6} {a['logloss']:9.6f} {p['logloss']:9.6f} {a['logloss'] / p['logloss']:6.3f} "
              f"{a['auc']:7.4f}/{p['auc']:.4f} {a['calibration']:8.3f}/{p['calibration']:.3f}")
    ratio = np.mean([r["logloss"] for r in adrank]) / np.mean([r["logloss"] for r in plain])
    best_ratio = np.mean([r["logloss"] for r in adrank]) / min(plain_by_epoch)
    for run_index, result in enumerate(adrank):
        if result["calibration_step"]:
            print(f"calibration step, seed {config.seed + run_index}: {result['calibration_step']}")
    print(f"ratio adrank/plain log-loss: {ratio:.3f} (vs plain's best epoch: {best_ratio:.3f})")
    print(target_verdict(adrank, plain, ratio))
    goal = quality_goal(adrank, plain, ratio, history="with history features" in name)
    print(goal)
    return {
        "goal": goal.split(":")[0], "ratio": float(ratio), "ratios": [a["logloss"] / p["logloss"] for a, p in zip(adrank, plain)],
        "loglosses": [r["logloss"] for r in adrank], "task": task,
        "logloss": float(np.mean([r["logloss"] for r in adrank])), "plain_logloss": float(np.mean([r["logloss"] for r in plain])),
        "auc": float(np.mean([r["auc"] for r in adrank])), "plain_auc": float(np.mean([r["auc"] for r in plain])),
        "calibration": float(np.mean([r["calibration"] for r in adrank])),
        "plain_calibration": float(np.mean([r["calibration"] for r in plain])),
    }


def quality_goal(adrank: list[dict], plain: list[dict], ratio: float, history: bool) -> str:
    """The quality goals for one data set: log-loss ratio <= 1.01 (<= 0.95 for adrank with history features on
    history-shaped logs), and calibration within 10% of 1 or no further off than the plain model's."""
    bound = HISTORY_GOAL_RATIO if history else GOAL_RATIO
    off_a = abs(np.mean([r["calibration"] for r in adrank]) - 1)
    off_p = abs(np.mean([r["calibration"] for r in plain]) - 1)
    checks = {
        f"log-loss ratio {ratio:.3f} <= {bound}": ratio <= bound,
        f"calibration off by {off_a:.1%} <= 10% or <= plain's {off_p:.1%}": off_a <= 0.10 or off_a <= off_p,
    }
    return "quality goal " + ("met" if all(checks.values()) else "missed") + ": " + "; ".join(
        f"{check} {'yes' if ok else 'NO'}" for check, ok in checks.items()
    )


def target_verdict(adrank: list[dict], plain: list[dict], ratio: float) -> str:
    """The plain-model bar for one invocation: mean log-loss ratio <= 0.98, mean AUC not lower, and calibration
    within 10% of the plain model's (|mean prediction / rate - 1| at most 0.10 above the plain model's)."""
    auc_a, auc_p = np.mean([r["auc"] for r in adrank]), np.mean([r["auc"] for r in plain])
    off_a = np.mean([abs(r["calibration"] - 1) for r in adrank])
    off_p = np.mean([abs(r["calibration"] - 1) for r in plain])
    checks = {
        f"log-loss ratio {ratio:.3f} <= {TARGET_LOGLOSS_RATIO}": ratio <= TARGET_LOGLOSS_RATIO,
        f"AUC {auc_a:.4f} >= plain {auc_p:.4f}": auc_a >= auc_p,
        f"calibration off by {off_a:.1%} <= plain's {off_p:.1%} + 10%": off_a <= off_p + 0.10,
    }
    met = all(checks.values())
    return "target " + ("MET" if met else "NOT met") + ": " + "; ".join(
        f"{check} {'yes' if ok else 'NO'}" for check, ok in checks.items()
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--datasets", default="synthetic,low_rate,click_log")
    parser.add_argument("--clicks-per-day", type=int, default=ClickLogSpec.clicks_per_day)
    parser.add_argument("--positive-rate", type=float,
                        help="the click logs' share of positives (default: each generator's own, e.g. 0.002)")
    parser.add_argument("--plain-epochs", type=int, help="default: the epochs adrank trains on that data set "
                        "(training.epochs, raised on a small split by training.min_train_steps)")
    parser.add_argument("--history-variants", default="without,with",
                        help="for a data set with kind: history features, which adrank variants to train: "
                        "without,with (default), without or with")
    parser.add_argument("--work", help="keep generated logs and preprocessed examples here (reused when present)")
    parser.add_argument("--set", action="append", default=[], dest="overrides", metavar="KEY=VALUE",
                        help="config override for both models on every data set, e.g. training.epochs=3")
    parser.add_argument("--adrank-set", action="append", default=[], dest="adrank_overrides", metavar="KEY=VALUE",
                        help="config override for adrank only (an experiment against the unchanged plain model), "
                        "e.g. model.output_bias=zero")
    args = parser.parse_args()
    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="adrank-quality-"))
    work.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in args.datasets.split(","):
        plain_config, config, examples = prepared(name, work, args.overrides, args.adrank_overrides,
                                                  args.clicks_per_day, positive_rate=args.positive_rate)
        with_history = prepared(name, work, args.overrides, args.adrank_overrides, args.clicks_per_day, history=True,
                                positive_rate=args.positive_rate)
        variants = args.history_variants.split(",") if has_history_features(with_history[1]) else ["without"]
        if "without" in variants:
            label = f"{name}, without history features" if has_history_features(with_history[1]) else name
            results[label] = compare(label, plain_config, config, examples, args.seeds, args.plain_epochs)
        if "with" in variants:
            label = f"{name}, with history features"
            results[label] = compare(label, plain_config, with_history[1], with_history[2], args.seeds,
                                     args.plain_epochs, plain_examples=examples)
        if {"without", "with"} <= set(variants):
            without, with_ = results[f"{name}, without history features"], results[f"{name}, with history features"]
            names = [f.name for f in history_features(with_history[1].features)]
            finding = history_cost_finding(names, with_["loglosses"], without["loglosses"], with_["task"])
            change = paired_change(without["loglosses"], with_["loglosses"])
            print(f"\n[{name}] history features: " + (finding or f"no cost beyond noise ({' '.join(names)}: "
                  f"{with_['logloss'] / without['logloss']:.3f}× adrank without them, per seed "
                  f"{' '.join(f'{a / b:.3f}' for a, b in zip(with_['loglosses'], without['loglosses']))}; paired "
                  f"t-test p = {'n/a' if change.p_value is None else f'{change.p_value:.3f}'})"))
    print("\nratios adrank/plain:", json.dumps({k: round(v["ratio"], 3) for k, v in results.items()}))
    print("\n| data set | adrank / plain log-loss (per seed) | adrank log-loss | plain log-loss | AUC adrank / plain | "
          "calibration adrank / plain | quality goal |\n|---|---|---|---|---|---|---|")
    for label, r in results.items():
        print(f"| {label} | **{r['ratio']:.3f}** ({' '.join(f'{x:.3f}' for x in r['ratios'])}) | {r['logloss']:.6f} | "
              f"{r['plain_logloss']:.6f} | {r['auc']:.4f} / {r['plain_auc']:.4f} | {r['calibration']:.3f} / "
              f"{r['plain_calibration']:.3f} | {r['goal'].removeprefix('quality goal ')} |")


if __name__ == "__main__":
    main()
