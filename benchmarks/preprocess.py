"""Preprocess throughput: the full step (parse → join → split → tf.Transform → TFRecords) with 1 and 2
DirectRunner workers, against a floor that only reads, parses and writes TFRecords (no join, no analysis).

    .venv/bin/python benchmarks/preprocess.py [--impressions 1000000] [--workdir /tmp/adrank-bench]

Prints examples/s per variant and ratios. Not a test: it takes several minutes on 2 cores.

    .venv/bin/python benchmarks/preprocess.py --features 1000 [--rows 3000]

instead times the full step on a wide log (`--rows` impressions over 3 days, each with `--features`
categorical columns of up to 50 values) with every feature on a vocabulary, then every feature hashed,
and prints both times and their ratio (the vocabularies' analysis cost).

    .venv/bin/python benchmarks/preprocess.py --grid [--sizes 10000 100000 1000000] [--widths 10 100 1000]
        [--rows 10000] [--point-timeout 900] [--max-rss-mib 10240]

prints what a DirectRunner run (the default config's running mode and workers) costs as logs grow: for synthetic
logs of each size (default features), then for wide logs of `--rows` impressions with each number of hashed
features, records/s of the full step, the Beam job's wall time, the peak RSS summed over the step's whole process
tree (DirectRunner's multi_processing workers are child processes) and the workers' time per preprocess stage
(read, parse, join/label, analyze, transform, write tf.Examples, write blocks, counters/checks), sampled by Beam's
SDK harness (`benchmarks/stage_timing.py`). Every point runs in its own process session with a timeout, printing
as it finishes, so a slow point loses no other; a point whose processes hold more than `--max-rss-mib` is stopped
(the machine is shared). A size that the slope measured on the smaller sizes predicts to run past the timeout
is not run; its time and memory are printed from that slope, marked EXTRAPOLATED.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import apache_beam as beam
import tensorflow as tf

from benchmarks.stage_timing import STAGE_TIMING_RUNNER, StageTimingDirectRunner, transform_msecs
from components.logs.readers import RECORDS, ReadLogRecords
from components.logs.synthetic import IMPRESSIONS_DIR, generate_logs
from components.preprocess.options import beam_pipeline_args, beam_pipeline_options
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


def tree_rss(root: int) -> tuple[int, int]:
    """(resident bytes summed over `root` and all its descendants, number of processes) from /proc: DirectRunner's
    multi_processing mode starts its SDK workers as child processes, so the step's own RSS is not its cost."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # exited while we looked
            continue
        parent = int(stat[stat.rindex(")") + 2:].split()[1])
        parents.setdefault(parent, []).append(int(entry))
    total, count, todo = 0, 0, [root]
    while todo:
        pid = todo.pop()
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_BYTES
            count += 1
        except OSError:
            pass
        todo += parents.get(pid, [])
    return total, count


PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")

# Preprocess stages, in flow order, and the top-level Beam labels of run.py's graph that belong to each (a
# transform matching none is "other" and printed by name, so a renamed transform shows up instead of vanishing).
STAGES = (
    ("read", r"Read(Impressions|Engagements|BigQuery)"),
    ("parse", r"Parse\w+|PlausibleTimes\w+|MedianImpressionTime"),
    ("join/label", r"Join|Deduplicate|HistoryFeatures|Time|Latest|EvalStart|SplitByTime|LatestTrainDays|\w+Instances"),
    ("analyze", r"Analyze"),
    ("transform", r"Transform(Train|Eval|Calibration)"),
    ("write tf.Examples", r"Encode\w+|Serialized\w+|ShuffleTrain|Write(Train|Eval|Calibration|RawEval)"),
    ("write blocks", r"Blocks\w+"),
    ("counters/checks", r"Count\w+|Name\w+|Flatten\w+Counts|Counters|UnseenEvalValues|\w*DeadLetter\w*|Select\w+|"
                        r"Announce\w+|Done\w+|WriteTransformFn"),
)


def stage_of(transform: str) -> str:
    """The preprocess stage a transform's full name (`Analyze/ApplySavedModel[Phase0]/...`) belongs to; the
    runner's own reads and writes of data between fused stages (`ref_PCollection_...`) are "between stages"."""
    top = transform.split("/", 1)[0]
    if top.startswith("ref_PCollection"):
        return "between stages"
    return next((stage for stage, pattern in STAGES if re.fullmatch(pattern, top)), "other")


def grid_point(kind: str, size: int, rows: int, workdir: Path) -> dict:
    """One point of the grid in this process: `synthetic` (`size` impressions, default features) or `wide`
    (`rows` impressions with `size` hashed categorical features). Returns its figures: the step's wall time, the
    Beam job's, and the job's sampled worker time per stage."""
    figures: dict = {}
    if kind == "synthetic":
        base = ["logs.synthetic.days=4", f"logs.synthetic.impressions_per_day={size // 4}",
                "logs.synthetic.users=50000", "logs.synthetic.ads=5000", "logs.synthetic.shards_per_stream=4"]
        logs_dir = workdir / "logs"
        started = time.perf_counter()
        generate_logs(PreprocessStepConfig.of(load_config(overrides=base)), logs_dir)
        figures["generate_seconds"] = time.perf_counter() - started
        config_slice, logs = PreprocessStepConfig.of(load_config(overrides=base)), str(logs_dir)
    else:
        write_wide_logs(workdir / "wide-logs", rows, size)
        overrides = ["logs.source=files", f"logs.impressions={workdir}/wide-logs/impressions.jsonl",
                     f"logs.engagements={workdir}/wide-logs/engagements.jsonl"]
        config = load_config(overrides=overrides)
        features = [{"name": f"f{j}", "kind": "categorical", "encoding": "hash", "hash_buckets": 64}
                    for j in range(size)]
        config = config.model_validate(config.model_dump() | {"features": features})
        config_slice, logs = PreprocessStepConfig.of(config), None
    # the step's own Beam argv, with a DirectRunner that keeps the job's result (its monitoring infos)
    beam_args = [f"--runner={STAGE_TIMING_RUNNER}" if arg.startswith("--runner=") else arg
                 for arg in beam_pipeline_args(config_slice)]
    started = time.perf_counter()
    manifest = preprocess(config_slice, logs, str(workdir / "out"), beam_args=beam_args)
    figures["seconds"] = time.perf_counter() - started
    figures["job_seconds"] = StageTimingDirectRunner.job_seconds[-1]
    by_stage: dict[str, float] = {}
    others: dict[str, float] = {}
    msecs_by_transform = transform_msecs(StageTimingDirectRunner.results[-1])
    figures["top_transforms"] = {name: msecs / 1000 for name, msecs in
                                 sorted(msecs_by_transform.items(), key=lambda kv: -kv[1])[:8]}
    for transform, msecs in msecs_by_transform.items():
        stage = stage_of(transform)
        by_stage[stage] = by_stage.get(stage, 0) + msecs / 1000
        if stage == "other":
            top = transform.split("/", 1)[0]
            others[top] = others.get(top, 0) + msecs / 1000
    figures["stage_seconds"], figures["other_transforms"] = by_stage, others
    figures["records"] = sum(manifest.counts.get(f"{stream}_read", 0) for stream in ("impressions", "engagements"))
    figures["examples"] = sum(manifest.splits[s].examples for s in ("train", "eval"))
    figures["step_maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures["worker_maxrss_mib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return figures


def run_point(kind: str, size: int, rows: int, timeout: float, max_rss_mib: float) -> dict | str:
    """Run one grid point in a child process (its own session, so a timeout kills its Beam workers too), sampling
    the RSS of its whole process tree twice a second; a tree above `max_rss_mib` is stopped before it pushes a
    shared machine into swap or the OOM killer. Returns its figures plus `peak_tree_mib`, or why it failed."""
    with tempfile.TemporaryDirectory(prefix="adrank-grid-") as tmp:
        log = Path(tmp) / "point.log"
        with open(log, "w") as out:
            child = subprocess.Popen(
                [sys.executable, __file__, "--point", kind, str(size), "--rows", str(rows), "--workdir", tmp],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            started, peak, processes = time.monotonic(), 0, 0
            while child.poll() is None:
                if time.monotonic() - started > timeout:
                    os.killpg(child.pid, signal.SIGKILL)
                    child.wait()
                    return f"timed out after {timeout:.0f} s (peak RSS so far {peak / 2**20:,.0f} MiB)"
                rss, count = tree_rss(child.pid)
                peak, processes = max(peak, rss), max(processes, count)
                if rss > max_rss_mib * 2**20:
                    os.killpg(child.pid, signal.SIGKILL)
                    child.wait()
                    return (f"stopped after {time.monotonic() - started:.0f} s: its processes held {rss / 2**20:,.0f} "
                            f"MiB, above --max-rss-mib {max_rss_mib:,.0f}")
                time.sleep(0.5)
        text = log.read_text()
    lines = [line for line in text.splitlines() if line.startswith("{")]
    if child.returncode or not lines:
        return f"failed (exit {child.returncode}): {text[-800:]}"
    return json.loads(lines[-1]) | {"peak_tree_mib": peak / 2**20, "processes": processes}


def print_point(what: str, f: dict) -> None:
    stages = f["stage_seconds"]
    sampled = sum(stages.values()) or 1.0
    top = max(stages, key=stages.get)
    print(f"{what}: {f['records'] / f['seconds']:>8,.0f} records/s ({f['records']:,} records, {f['examples']:,} "
          f"examples)  step {f['seconds']:6.1f} s (Beam job {f['job_seconds']:6.1f} s)  peak RSS {f['peak_tree_mib']:,.0f}"
          f" MiB over {f['processes']} processes (largest: step {f['step_maxrss_mib']:,.0f}, worker "
          f"{f['worker_maxrss_mib']:,.0f})", flush=True)
    shares = "  ".join(f"{stage} {stages.get(stage, 0):.1f} s ({stages.get(stage, 0) / sampled:.0%})"
                       for stage in [s for s, _ in STAGES] + ["between stages", "other"] if stage in stages)
    print(f"    worker time by stage ({sampled:.1f} s sampled in transforms; the rest of the job's wall time is the "
          f"runner scheduling fused stages and moving data to and from its workers): {shares}; largest: {top}",
          flush=True)
    print("    largest transforms: " + ", ".join(f"{name} {s:.1f} s" for name, s in f["top_transforms"].items()),
          flush=True)
    if f["other_transforms"]:
        print("    other: " + ", ".join(f"{name} {s:.1f} s" for name, s in
                                        sorted(f["other_transforms"].items(), key=lambda kv: -kv[1])[:5]), flush=True)


def predicted_seconds(measured: dict[int, dict], impressions: int) -> float | None:
    """The step's seconds at `impressions` on the line through the two largest measured points, None before two."""
    if len(measured) < 2:
        return None
    (_, f1), (n2, f2) = sorted(measured.items())[-2:]
    per_record = (f2["seconds"] - f1["seconds"]) / (f2["records"] - f1["records"])
    return f2["seconds"] + per_record * (impressions * f2["records"] / n2 - f2["records"])


def extrapolate(measured: dict[int, dict], sizes: list[int]) -> None:
    """Seconds and peak RSS at sizes not measured, from the line through the two largest measured points (a fixed
    cost plus a cost per record): marked EXTRAPOLATED, never printed as a measurement."""
    if len(measured) < 2:
        return
    (n1, f1), (n2, f2) = sorted(measured.items())[-2:]
    per_record = (f2["seconds"] - f1["seconds"]) / (f2["records"] - f1["records"])
    fixed = f2["seconds"] - per_record * f2["records"]
    mib_per_record = (f2["peak_tree_mib"] - f1["peak_tree_mib"]) / (f2["records"] - f1["records"])
    records_per_impression = f2["records"] / n2
    print(f"slope between {n1:,} and {n2:,} impressions: {per_record * 1e6:,.0f} s per million records "
          f"(marginal {1 / per_record:,.0f} records/s), fixed cost {fixed:,.0f} s; memory "
          f"{mib_per_record * 1e6:,.0f} MiB per million records", flush=True)
    for n in sizes:
        if n in measured:
            continue
        records = n * records_per_impression
        seconds = fixed + per_record * records
        mib = f2["peak_tree_mib"] + mib_per_record * (records - f2["records"])
        print(f"{n:>9,} impressions, default features: EXTRAPOLATED (not measured) {records / seconds:>8,.0f} "
              f"records/s, step {seconds / 60:,.0f} min, peak RSS {mib:,.0f} MiB", flush=True)


def grid(args) -> None:
    """Each point in a child process (`--point`) with a timeout, its figures printed as they come."""
    cores = len(os.sched_getaffinity(0))
    print(f"DirectRunner (the default config's running mode and workers), {cores} cores, load average "
          f"{os.getloadavg()[0]:.1f} at the start: full preprocess step per point; peak RSS summed over the step's "
          f"process tree (its Beam workers included); worker time by stage sampled by the SDK harness (all workers "
          f"added up, so it can exceed the job's wall time)", flush=True)
    measured: dict[int, dict] = {}
    points = [("synthetic", n) for n in sorted(args.sizes)] + [("wide", f) for f in args.widths]
    for kind, size in points:
        what = (f"{size:>9,} impressions, default features" if kind == "synthetic"
                else f"{args.rows:>9,} impressions, {size:>5} features")
        predicted = predicted_seconds(measured, size) if kind == "synthetic" else None
        if predicted is not None and predicted > args.point_timeout:
            print(f"{what}: not run: the measured slope predicts {predicted / 60:,.0f} min, above --point-timeout "
                  f"{args.point_timeout:.0f} s (extrapolated below)", flush=True)
            continue
        figures = run_point(kind, size, args.rows, args.point_timeout, args.max_rss_mib)
        if isinstance(figures, str):
            print(f"{what}: {figures}", flush=True)
            continue
        print_point(what, figures)
        if kind == "synthetic":
            measured[size] = figures
    print(f"load average at the end: {os.getloadavg()[0]:.1f}", flush=True)
    extrapolate(measured, args.sizes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grid", action="store_true", help="records/s and peak memory as logs and features grow")
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--max-rss-mib", type=float, default=10_240, help="stop a grid point whose processes hold more")
    parser.add_argument("--point-timeout", type=float, default=900, help="seconds a grid point may take")
    parser.add_argument("--widths", type=int, nargs="*", default=[10, 100, 1000])
    parser.add_argument("--point", nargs=2, metavar=("KIND", "SIZE"), help=argparse.SUPPRESS)
    parser.add_argument("--impressions", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=4)
    parser.add_argument("--features", type=int, default=None, help="time vocabulary vs hashed features instead")
    parser.add_argument("--rows", type=int, default=None,
                        help="impressions of the wide log (default 3000 with --features, 10000 with --grid)")
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="adrank-bench-"))
    if args.point:
        print(json.dumps(grid_point(args.point[0], int(args.point[1]), args.rows, workdir)), flush=True)
        return
    if args.grid:
        args.rows = args.rows or 10_000
        grid(args)
        return
    if args.features:
        args.rows = args.rows or 3000
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
