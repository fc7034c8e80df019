"""Eval log-loss against embedding table size: `hash` vs `learned_hash` vs the full vocabulary.

On the low-rate preset (`configs/examples/low_rate.yaml`: ~0.2% installs, Zipf users and ads with a long tail),
the logs are generated once; then the id features (`--features`, default user_id and ad_id) are encoded

    vocabulary    every train id its own row (the reference: rows = distinct train ids + 1 OOV row)
    hash          hash_buckets = fraction x distinct train ids                (random collisions)
    learned_hash  the same rows; half for the most frequent ids, the tail grouped by label history

for each `--fractions` (default 1%, 5%, 20% of the feature's distinct train ids), each variant preprocessed once
and trained `--seeds` times (seeds config.seed + 0, 1, ...). With `--work DIR` the logs and preprocessed
variants are kept and reused, and so is each variant's measurement once all its seeds have trained
(`DIR/compression.json`): a long run split over several calls (e.g. `--seeds 0` to preprocess only, then calls
stopped by a time limit) prints the whole table at the end. Prints, per variant, table rows, log-loss mean ± std,
its ratio to the full vocabulary, AUC and calibration, next to the constant-rate log-loss and the Bayes floor.

    .venv/bin/python benchmarks/table_compression.py [--seeds 3] [--fractions 0.01,0.05,0.2] [--features user_id,ad_id]
                                               [--impressions-per-day N] [--work DIR] [--set dotted.key=value ...]
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
from configs import AdrankConfig, load_config  # noqa: E402
from configs.slices import PreprocessStepConfig, TrainStepConfig  # noqa: E402

PRESET = ROOT / "configs" / "examples" / "low_rate.yaml"
IN_PROCESS = ["preprocess.direct_running_mode=in_memory", "preprocess.direct_num_workers=1"]


def feature_index(config: AdrankConfig, name: str) -> int:
    for index, feature in enumerate(config.features):
        if feature.name == name:
            return index
    raise SystemExit(f"error: no feature named {name!r} in {PRESET.name}")


def encoded(
    base: list[str], config: AdrankConfig, features: list[str], encoding: str, rows: dict[str, int]
) -> list[str]:
    """Overrides that encode each of `features` with `encoding` (hash_buckets from `rows` for the hashes)."""
    overrides = list(base)
    for name in features:
        if encoding == "vocabulary":
            spec = f"{{name: {name}, kind: categorical, encoding: vocabulary, oov_buckets: 1}}"
        else:
            spec = f"{{name: {name}, kind: categorical, encoding: {encoding}, hash_buckets: {rows[name]}}}"
        overrides.append(f"features.{feature_index(config, name)}={spec}")
    return overrides


def prepared(overrides: list[str], logs_dir: str, examples: Path) -> tuple[AdrankConfig, Manifest, float]:
    config = load_config(PRESET, overrides=overrides)
    started = time.perf_counter()
    if not (examples / MANIFEST_FILE).exists():
        preprocess(PreprocessStepConfig.of(config), logs_dir, str(examples))
    return config, Manifest.read(examples), time.perf_counter() - started


def trained(config: AdrankConfig, examples: Path, seeds: int) -> list[dict]:
    results = []
    for run_index in range(seeds):
        with tempfile.TemporaryDirectory() as model_dir:
            target = config.targets[0].name
            summary = train(TrainStepConfig.of(config, target), target, run_index, str(examples), model_dir)
        metrics = summary.metrics[next(iter(summary.metrics))]
        results.append({"seed": summary.seed, "logloss": metrics.logloss, "auc": metrics.auc,
                        "calibration": metrics.calibration, "seconds": summary.wall_time_seconds})
    return results


def describe(values: list[float]) -> str:
    return f"{np.mean(values):.6f} ± {np.std(values, ddof=1) if len(values) > 1 else 0.0:.6f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="0: preprocess the variants only (kept under --work)")
    parser.add_argument("--fractions", default="0.01,0.05,0.2", help="table rows as a share of distinct train ids")
    parser.add_argument("--features", default="user_id,ad_id", help="the id features compressed")
    parser.add_argument("--impressions-per-day", type=int, help="default: the preset's")
    parser.add_argument("--work", help="keep logs and preprocessed variants here (reused when present)")
    parser.add_argument("--set", action="append", default=[], dest="overrides", metavar="KEY=VALUE",
                        help="config override for every variant, e.g. training.epochs=3")
    args = parser.parse_args()
    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="adrank-compression-"))
    work.mkdir(parents=True, exist_ok=True)
    features = args.features.split(",")
    fractions = [float(value) for value in args.fractions.split(",")]
    base = [*IN_PROCESS, *args.overrides]
    if args.impressions_per_day:
        base.append(f"logs.synthetic.impressions_per_day={args.impressions_per_day}")
    preset = load_config(PRESET, overrides=base)

    logs_dir = work / "logs"
    if not (logs_dir / "ground_truth.json").exists():
        generate_logs(PreprocessStepConfig.of(preset), logs_dir)
    started = time.perf_counter()
    config, manifest, seconds = prepared(encoded(base, preset, features, "vocabulary", {}), str(logs_dir),
                                         work / "vocabulary")
    sizes = {f.name: f.table_rows for f in manifest.features}
    distinct = {name: sizes[name] - 1 for name in features}  # minus the one OOV row
    print(f"preprocessed the full vocabulary in {seconds:.0f} s; distinct train ids: "
          + ", ".join(f"{name} {count:,}" for name, count in distinct.items()), flush=True)
    variants = [("vocabulary", 1.0, config, manifest, work / "vocabulary")]
    for fraction in fractions:
        rows = {name: max(2, round(fraction * count)) for name, count in distinct.items()}
        for encoding in ("hash", "learned_hash"):
            directory = work / f"{encoding}_{fraction:g}"
            variant_config, variant_manifest, seconds = prepared(
                encoded(base, preset, features, encoding, rows), str(logs_dir), directory
            )
            print(f"preprocessed {encoding} at {fraction:.0%} in {seconds:.0f} s", flush=True)
            variants.append((encoding, fraction, variant_config, variant_manifest, directory))

    if args.seeds == 0:
        print(f"--seeds 0: preprocessed only; the variants stay under {work} for a later call with --work")
        return
    measured_path = work / "compression.json"
    measured = json.loads(measured_path.read_text())["results"] if measured_path.exists() else []
    results = []
    for encoding, fraction, variant_config, variant_manifest, directory in variants:
        earlier = [r for r in measured if (r["encoding"], r["fraction"]) == (encoding, fraction)
                   and len(r["runs"]) == args.seeds]
        if earlier:  # measured by an earlier call with this --work (a long run split in several calls)
            results.append(earlier[0])
            print(f"measured earlier: {encoding} at {fraction:.0%}", flush=True)
            continue
        runs = trained(variant_config, directory, args.seeds)
        rows = {f.name: f.table_rows for f in variant_manifest.features if f.name in features}
        results.append({"encoding": encoding, "fraction": fraction, "rows": rows, "runs": runs})
        print(f"trained {encoding} at {fraction:.0%}: {describe([r['logloss'] for r in runs])}", flush=True)
        measured = [r for r in measured if (r["encoding"], r["fraction"]) != (encoding, fraction)] + [results[-1]]
        measured_path.write_text(json.dumps({"distinct": distinct, "results": measured}, indent=2))

    split, task = manifest.splits, manifest.tasks[0]
    bayes = (split["eval"].bayes_logloss or {}).get(task)
    reference = np.mean([r["logloss"] for r in results[0]["runs"]])
    print(f"\n== low-rate preset: {split['train'].examples:,} train / {split['eval'].examples:,} eval examples, "
          f"eval positive rate {split['eval'].label_rates[task]:.4%} ({split['eval'].positives.get(task, 0)} "
          f"positives), {args.seeds} seeds, {time.perf_counter() - started:.0f} s")
    print(f"constant-rate log-loss {manifest.constant_ctr_logloss(task):.6f}"
          + (f", Bayes floor {bayes:.6f}" if bayes is not None else ""))
    print(f"| encoding | table size | rows ({', '.join(features)}) | log-loss mean ± std | vs vocabulary | AUC "
          "| calibration |")
    print("|" + "---|" * 7)
    for result in results:
        losses = [r["logloss"] for r in result["runs"]]
        size = "all ids" if result["encoding"] == "vocabulary" else f"{result['fraction']:.0%}"
        print(f"| {result['encoding']} | {size} | {', '.join(f'{v:,}' for v in result['rows'].values())} | "
              f"{describe(losses)} | {np.mean(losses) / reference:.4f} | "
              f"{np.mean([r['auc'] for r in result['runs']]):.4f} | "
              f"{np.mean([r['calibration'] for r in result['runs']]):.3f} |")
    print(f"\nper-run figures: {measured_path}")


if __name__ == "__main__":
    main()
