"""Preprocess throughput: the full step (parse → join → split → tf.Transform → TFRecords) with 1 and 2
DirectRunner workers, against a floor that only reads, parses and writes TFRecords (no join, no analysis).

    .venv/bin/python benchmarks/preprocess.py [--impressions 1000000] [--workdir /tmp/adrank-bench]

Prints examples/s per variant and ratios. Not a test: it takes several minutes on 2 cores.

    .venv/bin/python benchmarks/preprocess.py --features 1000 [--rows 3000]

instead times the full step on a wide log (`--rows` impressions over 3 days, each with `--features`
categorical columns of up to 50 values) with every feature on a vocabulary, then every feature hashed,
and prints both times and their ratio (the vocabularies' analysis cost).

    .venv/bin/python benchmarks/preprocess.py --grid [--sizes 10000 100000] [--widths 10 100 1000] [--rows 10000]

prints what a DirectRunner run costs as logs grow: records/s and peak memory (the step's own process and its
largest Beam worker) of the full step on synthetic logs of each size (default features), each next to the floor
(read + parse + write, the share of the full time it takes), then of wide logs of `--rows` impressions with each
number of hashed features. Every point runs in its own process, so peak memory is that point's alone.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import apache_beam as beam
import tensorflow as tf

from components.logs.readers import RECORDS, ReadLogRecords
from components.logs.synthetic import IMPRESSIONS_DIR, generate_logs
from components.preprocess.options import beam_pipeline_options
from components.preprocess.parse import MISSING, parse_stream
from components.preprocess.run import impression_parser, preprocess
from configs import load_config
from configs.slices import PreprocessStepConfig


def floor_pipeline(config, logs_dir: str, output_dir: str) -> None:
    """Read + parse impressions + write gzip TFRecords of the raw parsed values: the I/O and parsing floor."""
    pattern = f"{logs_dir}/{IMPRESSIONS_DIR}/*.jsonl"

    def to_example(record: dict) -> bytes:
        feature = {}
        for name, value in record.items():
            if name == MISSING or value is None:
                continue
            values = value if isinstance(value, list) else [value]
            if all(isinstance(v, str) for v in values):
                feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[v.encode() for v in values]))
            elif all(isinstance(v, int) for v in values):
                feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
            else:
                feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=[float(v) for v in values]))
        return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()

    with beam.Pipeline(options=beam_pipeline_options(config)) as pipeline:
        raw = (pipeline | ReadLogRecords(pattern, "jsonl"))[RECORDS]
        valid, _, _ = parse_stream(raw, "impressions", impression_parser(config, pattern))
        _ = valid | beam.Map(to_example) | beam.io.WriteToTFRecord(
            f"{output_dir}/part", file_name_suffix=".tfrecord.gz", num_shards=config.preprocess.output_shards,
            compression_type=beam.io.filesystem.CompressionTypes.GZIP,
        )


def write_wide_logs(logs_dir: Path, rows: int, features: int) -> None:
    """`rows` impressions over 3 days, feature j of row i = v<(i * (j + 1)) % 50>, one engagement per 10 rows."""
    days = ("2026-03-07", "2026-03-08", "2026-03-09")
    logs_dir.mkdir(parents=True, exist_ok=True)
    with open(logs_dir / "impressions.jsonl", "w") as imps, open(logs_dir / "engagements.jsonl", "w") as events:
        for i in range(rows):
            day, second = days[i * len(days) // rows], i % 86_400
            stamp = f"{day}T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z"
            row = {"impression_id": f"imp-{i}", "timestamp": stamp}
            row.update({f"f{j}": f"v{(i * (j + 1)) % 50}" for j in range(features)})
            imps.write(json.dumps(row) + "\n")
            if i % 10 == 0:
                events.write(json.dumps({"impression_id": f"imp-{i}", "event_type": "swipe", "timestamp": stamp}) + "\n")


def wide_features(args, workdir: Path) -> None:
    """Full preprocess of a wide log: all features on vocabularies vs all hashed, side by side."""
    logs_dir = workdir / "wide-logs"
    write_wide_logs(logs_dir, args.rows, args.features)
    seconds = {}
    for encoding in ("vocabulary", "hash"):
        overrides = [
            "logs.source=files", f"logs.impressions={logs_dir}/impressions.jsonl",
            f"logs.engagements={logs_dir}/engagements.jsonl",
            "preprocess.direct_running_mode=in_memory", "preprocess.direct_num_workers=1",
            "preprocess.output_shards=1",
        ]
        config = load_config(overrides=overrides)
        features = [{"name": f"f{j}", "kind": "categorical", "encoding": encoding, "hash_buckets": 64}
                    for j in range(args.features)]
        config = config.model_validate(config.model_dump() | {"features": features})
        out = workdir / f"out-wide-{encoding}"
        shutil.rmtree(out, ignore_errors=True)
        started = time.perf_counter()
        manifest = preprocess(PreprocessStepConfig.of(config), None, str(out))
        seconds[encoding] = time.perf_counter() - started
        examples = sum(s.examples for s in manifest.splits.values())
        print(f"{args.features} {encoding:10s} features: {examples} examples  {seconds[encoding]:7.1f} s", flush=True)
    print(f"vocabulary / hash time: {seconds['vocabulary'] / seconds['hash']:.2f}  (goal <= 2.00)")


def peak_mib() -> tuple[float, float]:
    """(this process, its largest finished child) peak resident memory in MiB (Linux reports KiB)."""
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)


def grid_point(kind: str, size: int, workdir: Path) -> dict:
    """One point of the grid in this process: `synthetic` (size impressions, default features, full step and
    floor) or `wide` (size features on the wide log of `rows` impressions, hashed). Returns its figures."""
    figures: dict = {}
    if kind == "synthetic":
        base = ["logs.synthetic.days=4", f"logs.synthetic.impressions_per_day={size // 4}",
                "logs.synthetic.users=50000", "logs.synthetic.ads=5000", "logs.synthetic.shards_per_stream=4"]
        logs_dir = workdir / "logs"
        generated = generate_logs(PreprocessStepConfig.of(load_config(overrides=base)), logs_dir)
        config = load_config(overrides=base)
        started = time.perf_counter()
        floor_pipeline(config, str(logs_dir), str(workdir / "floor"))
        figures["floor_seconds"] = time.perf_counter() - started
        records = generated.impressions + generated.engagements
        config_slice, logs = PreprocessStepConfig.of(config), str(logs_dir)
    else:
        rows = int(os.environ["ADRANK_BENCH_ROWS"])
        write_wide_logs(workdir / "wide-logs", rows, size)
        overrides = ["logs.source=files", f"logs.impressions={workdir}/wide-logs/impressions.jsonl",
                     f"logs.engagements={workdir}/wide-logs/engagements.jsonl"]
        config = load_config(overrides=overrides)
        features = [{"name": f"f{j}", "kind": "categorical", "encoding": "hash", "hash_buckets": 64}
                    for j in range(size)]
        config = config.model_validate(config.model_dump() | {"features": features})
        records = rows + (rows + 9) // 10  # one engagement per 10 impressions
        config_slice, logs = PreprocessStepConfig.of(config), None
    started = time.perf_counter()
    manifest = preprocess(config_slice, logs, str(workdir / "out"))
    figures["seconds"] = time.perf_counter() - started
    figures["records"] = records
    figures["examples"] = sum(manifest.splits[s].examples for s in ("train", "eval"))
    figures["main_mib"], figures["worker_mib"] = peak_mib()
    return figures


def grid(args) -> None:
    """Each point in a child process (`--point`), its figures printed as they come."""
    cores = len(os.sched_getaffinity(0))
    print(f"DirectRunner (multi_processing, {cores} cores): full preprocess step; peak RSS of the step's process "
          "and of its largest Beam worker", flush=True)
    points = [("synthetic", n) for n in args.sizes] + [("wide", f) for f in args.widths]
    for kind, size in points:
        with tempfile.TemporaryDirectory() as tmp:
            child = subprocess.run(
                [sys.executable, __file__, "--point", kind, str(size), "--workdir", tmp], capture_output=True,
                text=True, env=os.environ | {"ADRANK_BENCH_ROWS": str(args.rows)})
        lines = [line for line in child.stdout.splitlines() if line.startswith("{")]
        if child.returncode or not lines:
            print(f"{kind} {size}: failed (exit {child.returncode}): {child.stderr[-500:]}", flush=True)
            continue
        f = json.loads(lines[-1])
        what = (f"{size:>9,} impressions, default features" if kind == "synthetic"
                else f"{args.rows:>9,} impressions, {size:>5} features")
        floor = (f"  floor {f['records'] / f['floor_seconds']:>8,.0f} records/s ({f['floor_seconds'] / f['seconds']:.0%}"
                 " of the full time)") if "floor_seconds" in f else ""
        print(f"{what}: {f['records'] / f['seconds']:>8,.0f} records/s  {f['seconds']:7.1f} s  "
              f"peak {f['main_mib']:,.0f} MiB step, {f['worker_mib']:,.0f} MiB worker{floor}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grid", action="store_true", help="records/s and peak memory as logs and features grow")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--widths", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--point", nargs=2, metavar=("KIND", "SIZE"), help=argparse.SUPPRESS)
    parser.add_argument("--impressions", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=4)
    parser.add_argument("--features", type=int, default=None, help="time vocabulary vs hashed features instead")
    parser.add_argument("--rows", type=int, default=3000, help="impressions of the wide log (--features, --grid)")
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="adrank-bench-"))
    if args.point:
        print(json.dumps(grid_point(args.point[0], int(args.point[1]), workdir)), flush=True)
        return
    if args.grid:
        grid(args)
        return
    if args.features:
        wide_features(args, workdir)
        return
    per_day = args.impressions // args.days
    base = [f"logs.synthetic.days={args.days}", f"logs.synthetic.impressions_per_day={per_day}",
            "logs.synthetic.users=50000", "logs.synthetic.ads=5000", "logs.synthetic.shards_per_stream=8",
            "preprocess.direct_running_mode=multi_processing"]
    logs_dir = workdir / "logs"
    started = time.perf_counter()
    generated = generate_logs(PreprocessStepConfig.of(load_config(overrides=base)), logs_dir)
    print(f"generated {generated.impressions} impressions, {generated.engagements} events "
          f"in {time.perf_counter() - started:.0f} s")

    rates: dict[str, float] = {}
    for name, workers, run in (
        ("floor (read+parse+write, 2 workers)", 2, "floor"),
        ("full preprocess, 1 worker", 1, "full"),
        ("full preprocess, 2 workers", 2, "full"),
    ):
        config = load_config(overrides=base + [f"preprocess.direct_num_workers={workers}"])
        out = workdir / f"out-{run}-{workers}"
        shutil.rmtree(out, ignore_errors=True)
        started = time.perf_counter()
        if run == "floor":
            floor_pipeline(config, str(logs_dir), str(out))
            examples = generated.impressions
        else:
            manifest = preprocess(PreprocessStepConfig.of(config), str(logs_dir), str(out))
            examples = sum(s.examples for s in manifest.splits.values())
        seconds = time.perf_counter() - started
        rates[name] = examples / seconds
        print(f"{name:40s} {examples:>9d} examples  {seconds:7.1f} s  {rates[name]:9.0f} examples/s", flush=True)

    floor = rates["floor (read+parse+write, 2 workers)"]
    one, two = rates["full preprocess, 1 worker"], rates["full preprocess, 2 workers"]
    print(f"full/floor (2 workers): {two / floor:.2f}   full 2 workers / 1 worker: {two / one:.2f}   "
          f"full 1 worker / floor: {one / floor:.2f}")


if __name__ == "__main__":
    main()
