"""Preprocess throughput and memory as logs and features grow, each point against the floor of reading and writing
the same logs with pyarrow alone.

    PYTHONPATH=. .venv/bin/python benchmarks/preprocess.py --grid [--sizes 10000 100000 1000000]
        [--widths 10 100 1000] [--wide-sizes ...] [--wide-formats csv jsonl] [--point-timeout 900]
        [--max-rss-mib 10240]
        [--before DIR [--before-sizes 10000 100000] [--before-widths 10 100] [--before-wide-sizes 10000]
        [--before-timeout 300]] [--repeats 1]

For each number of impressions in `--sizes`: synthetic logs with the default features, then wide logs with each
number of hashed categorical features in `--widths` (`write_wide_logs`) at each of `--wide-sizes` (default:
`--sizes`), once per log format of `--wide-formats` (default: CSV with a header, the format of a wide ad log;
`jsonl` too), each format its own row. An empty `--sizes` leaves out the default-features row. Each point writes its logs and times its floor in one child process, then runs the step in another, in
its own process session with a timeout, and prints records/s (impression and engagement records read, over the
step's wall time) and per core, the Beam job's wall time, the peak RSS summed over the step's whole process tree
(DirectRunner's multi_processing workers are child processes) and the workers' time per stage, sampled by Beam's
SDK harness (`benchmarks/stage_timing.py`); next to it the floor: the same log files read with pyarrow's reader of
their format (JSON or CSV) and written as Parquet in one process (`floor_seconds`; neither its time nor its memory is counted in the
step's), and the ratio step / floor in records/s. A point whose processes hold more than `--max-rss-mib` is
stopped (the machine is shared); a point that the slope measured at the smaller sizes of its row predicts past its
timeout is not run, and is printed from that slope, marked EXTRAPOLATED. `--before DIR`: the points of
`--before-sizes` at the default features and of
`--before-wide-sizes` (default: `--before-sizes`) at `--before-widths` are run a second time, each with
`--before-timeout` (default: `--point-timeout`), on the source tree in DIR (a checkout of an earlier commit, e.g.
`git archive <commit> | tar -x -C DIR`), with that tree's code and default config and this file's driver, in the
same invocation, so the before/after ratios come from one machine at one time. `--repeats N`: each point N times,
the trees alternated (after, before, after, ...), every run printed; then per point the median records/s of each
tree, their ratio, each pair's ratio and how many pairs the after tree won (on a shared machine one run of a point
moves by ±20% from the next, so a gain of a few percent needs the pairs, not one run). The slopes use each tree's
median run of a point.

    .venv/bin/python benchmarks/preprocess.py --features 1000 [--rows 3000]

instead times the full step on a wide log (`--rows` impressions over 3 days, each with `--features`
categorical columns of up to 50 values) with every feature on a vocabulary, then every feature hashed,
and prints both times and their ratio (the vocabularies' analysis cost).

    .venv/bin/python benchmarks/preprocess.py --modes [--impressions 1000000]

the full step on synthetic logs with the DirectRunner in_memory (the default) and multi_processing with 2 workers:
seconds, records/s and peak RSS of the process tree.
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
from statistics import median

import numpy as np

from benchmarks.stage_timing import STAGE_TIMING_RUNNER, StageTimingDirectRunner, transform_msecs
from components.logs.synthetic import generate_logs
from components.preprocess.beam_options import beam_pipeline_args
from components.preprocess.run import preprocess
from configs import load_config
from configs.slices import PreprocessStepConfig
from foundation.process_table import resident_bytes

WIDE_DAYS = ("2026-03-07", "2026-03-08", "2026-03-09")
SYNTHETIC = ["logs.synthetic.days=4", "logs.synthetic.users=50000", "logs.synthetic.ads=5000",
             "logs.synthetic.shards_per_stream=4"]


def write_wide_logs(logs_dir: Path, rows: int, features: int, file_format: str = "jsonl") -> None:
    """`rows` impressions over 3 days, feature j of row i = v<(i * (j + 1)) % 50>, one engagement per 10 rows, as
    JSON lines or as CSV files with a header (`file_format`: jsonl | csv)."""
    logs_dir.mkdir(parents=True, exist_ok=True)
    names = [f"f{j}" for j in range(features)]
    values = [f"v{k}" for k in range(50)]
    steps = np.arange(1, features + 1, dtype=np.int64)
    suffix = WIDE_SUFFIX[file_format]
    with open(logs_dir / f"impressions.{suffix}", "w") as imps, open(logs_dir / f"engagements.{suffix}", "w") as events:
        if file_format == "csv":
            imps.write(",".join(["impression_id", "timestamp"] + names) + "\n")
            events.write("impression_id,event_type,timestamp\n")
        for i in range(rows):
            day, second = WIDE_DAYS[i * len(WIDE_DAYS) // rows], i % 86_400
            stamp = f"{day}T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z"
            row_values = [values[k] for k in ((i * steps) % 50).tolist()]
            if file_format == "csv":
                imps.write(",".join([f"imp-{i}", stamp] + row_values) + "\n")
                if i % 10 == 0:
                    events.write(f"imp-{i},swipe,{stamp}\n")
                continue
            row = {"impression_id": f"imp-{i}", "timestamp": stamp}
            row.update(zip(names, row_values))
            imps.write(json.dumps(row) + "\n")
            if i % 10 == 0:
                events.write(json.dumps({"impression_id": f"imp-{i}", "event_type": "swipe", "timestamp": stamp}) + "\n")


WIDE_SUFFIX = {"jsonl": "jsonl", "csv": "csv"}


def wide_config(logs_dir: Path, features: int, encoding: str = "hash", extra: list[str] | None = None,
                file_format: str = "jsonl"):
    """The default config on a wide log: files source (`file_format`), `features` categorical columns of
    `encoding`."""
    suffix = WIDE_SUFFIX[file_format]
    config = load_config(overrides=["logs.source=files", f"logs.format={file_format}",
                                    f"logs.impressions={logs_dir}/impressions.{suffix}",
                                    f"logs.engagements={logs_dir}/engagements.{suffix}",
                                    "logs.max_record_bytes=16000000"] + list(extra or ()))
    columns = [{"name": f"f{j}", "kind": "categorical", "encoding": encoding, "hash_buckets": 64}
               for j in range(features)]
    return config.model_validate(config.model_dump() | {"features": columns})


def floor_seconds(log_files: list[Path], output_dir: Path) -> float:
    """Read every log file with pyarrow's reader of its format (JSON lines or CSV) and write its rows as Parquet,
    in this process: the least a step that reads and writes these logs can cost."""
    import pyarrow.csv as pacsv
    import pyarrow.json as pajson
    import pyarrow.parquet as pq

    output_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    for index, path in enumerate(log_files):
        table = pacsv.read_csv(path) if path.suffix == ".csv" else pajson.read_json(path)
        pq.write_table(table, output_dir / f"part-{index}.parquet")
    return time.perf_counter() - started


def wide_features(args, workdir: Path) -> None:
    """Full preprocess of a wide log: all features on vocabularies vs all hashed, side by side."""
    logs_dir = workdir / "wide-logs"
    write_wide_logs(logs_dir, args.rows, args.features)
    seconds = {}
    for encoding in ("vocabulary", "hash"):
        config = wide_config(logs_dir, args.features, encoding, ["preprocess.output_shards=1"])
        out = workdir / f"out-wide-{encoding}"
        shutil.rmtree(out, ignore_errors=True)
        started = time.perf_counter()
        manifest = preprocess(PreprocessStepConfig.of(config), None, str(out))
        seconds[encoding] = time.perf_counter() - started
        examples = sum(s.examples for s in manifest.splits.values())
        print(f"{args.features} {encoding:10s} features: {examples} examples  {seconds[encoding]:7.1f} s", flush=True)
    print(f"vocabulary / hash time: {seconds['vocabulary'] / seconds['hash']:.2f}  (goal <= 2.00)")



# Preprocess stages, in flow order, and the labels of run.py's graph (under `PreprocessLogs/`, first two levels)
# that belong to each, in this version and the instance-dict one before it (a transform matching none is "other"
# and printed by name, so a renamed transform shows up instead of vanishing).
STAGES = (
    ("read", r"Read(Impressions|Engagements)/(ReadLogChunks|ReadLogRecords)"),
    ("parse", r"Read(Impressions|Engagements)/\w+|(Parse\w+|Plausible\w+|MedianImpressionTime)(/.*)?"),
    ("join/label", r"(AttributeEngagements|ExampleTimes|Deduplicate|HistoryFeatures|SplitByTime)(/.*)?"),
    ("analyze", r"AnalyzeAndTransform/(Analyze|TrainInstances)"),
    ("transform", r"AnalyzeAndTransform/\w+"),
    ("write blocks", r"WriteExamples/Blocks\w+"),
    ("write tf.Examples", r"WriteExamples/\w+|WriteRawEval/\w+"),
    ("counters/checks", r"(CountSplits|UnseenEvalValues|Counters|WriteDeadLetters|WriteTransformFn|Flatten)(/.*)?|"
                        r"\w*DeadLetter\w*|Select\w+|Announce\w+|Done\w+"),
)


def stage_of(transform: str) -> str:
    """The preprocess stage a transform's full name (`PreprocessLogs/AnalyzeAndTransform/Analyze/...`) belongs to;
    the runner's own reads and writes of data between fused stages (`ref_PCollection_...`) are "between stages"."""
    parts = transform.split("/")
    if parts[0].startswith("ref_PCollection"):
        return "between stages"
    if parts[0] == "PreprocessLogs":
        parts = parts[1:]
    name = "/".join(parts[:2])
    return next((stage for stage, pattern in STAGES if re.fullmatch(pattern, name)), "other")


def point_config(kind: str, size: int, width: int, workdir: Path):
    """The config of one grid point and its logs folder (None: the config names the log files): `synthetic` (`size`
    impressions, default features, generated into `workdir/logs`) or `wide` (`size` impressions with `width` hashed
    categorical features in `workdir/wide-logs`, as JSON lines; `wide-csv`: the same as CSV files)."""
    if kind == "synthetic":
        config = load_config(overrides=SYNTHETIC + [f"logs.synthetic.impressions_per_day={size // 4}"])
        return config, workdir / "logs"
    return wide_config(workdir / "wide-logs", width, file_format=WIDE_KINDS[kind]), None


WIDE_KINDS = {"wide": "jsonl", "wide-csv": "csv"}  # grid kind of a wide point → its logs' format


def prepare_point(kind: str, size: int, width: int, workdir: Path) -> dict:
    """Write one grid point's logs into `workdir` and time the floor on them. Runs in a process of its own before
    the step's, so neither the generator's nor pyarrow's memory is counted in the step's peak RSS."""
    config, logs_dir = point_config(kind, size, width, workdir)
    if logs_dir is not None:
        generate_logs(PreprocessStepConfig.of(config), logs_dir)
        files = sorted(logs_dir.glob("*/*.jsonl"))
    else:
        write_wide_logs(workdir / "wide-logs", size, width, WIDE_KINDS[kind])
        files = sorted((workdir / "wide-logs").glob(f"*.{WIDE_SUFFIX[WIDE_KINDS[kind]]}"))
    seconds = floor_seconds(files, workdir / "floor")
    shutil.rmtree(workdir / "floor")
    return {"floor_seconds": seconds, "log_bytes": sum(path.stat().st_size for path in files)}


def grid_point(kind: str, size: int, width: int, workdir: Path) -> dict:
    """The full step of one grid point on the logs `prepare_point` wrote, in this process. Returns its figures: the
    step's wall time, the Beam job's, and the job's sampled worker time per stage."""
    figures: dict = {}
    config, logs_dir = point_config(kind, size, width, workdir)
    logs = None if logs_dir is None else str(logs_dir)
    config_slice = PreprocessStepConfig.of(config)
    figures["running_mode"] = config_slice.preprocess.direct_running_mode
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
    figures["top_transforms"] = {name.removeprefix("PreprocessLogs/"): msecs / 1000 for name, msecs in
                                 sorted(msecs_by_transform.items(), key=lambda kv: -kv[1])[:6]}
    for transform, msecs in msecs_by_transform.items():
        stage = stage_of(transform)
        by_stage[stage] = by_stage.get(stage, 0) + msecs / 1000
        if stage == "other":
            top = "/".join(transform.removeprefix("PreprocessLogs/").split("/")[:2])
            others[top] = others.get(top, 0) + msecs / 1000
    figures["stage_seconds"], figures["other_transforms"] = by_stage, others
    figures["records"] = sum(manifest.counts.get(f"{stream}_read", 0) for stream in ("impressions", "engagements"))
    figures["examples"] = sum(manifest.splits[s].examples for s in ("train", "eval"))
    figures["step_maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures["worker_maxrss_mib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return figures


def prepare(kind: str, size: int, width: int, workdir: str, env: dict, cwd: Path) -> dict | str:
    """`prepare_point` in a child process with this environment: its figures, or why it failed."""
    try:
        done = subprocess.run([sys.executable, __file__, "--prepare", kind, str(size), str(width), "--workdir",
                               workdir], capture_output=True, text=True, env=env, cwd=cwd, timeout=PREPARE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"its logs and floor took more than {PREPARE_TIMEOUT} s"
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        return f"writing its logs or floor failed (exit {done.returncode}): {(done.stdout + done.stderr)[-800:]}"
    return json.loads(lines[-1])


PREPARE_TIMEOUT = 1800


def run_point(kind: str, size: int, width: int, timeout: float, max_rss_mib: float,
              tree: Path | None = None) -> dict | str:
    """Run one grid point in child processes on the source tree `tree` (None: this one): its logs and floor first
    (`prepare_point`), then the step in its own session (so a timeout kills its Beam workers too), sampling the RSS
    of the step's whole process tree twice a second; a tree above `max_rss_mib` is stopped before it pushes a
    shared machine into swap or the OOM killer. Returns its figures plus `peak_tree_mib`, or why it failed."""
    source = tree or Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(source), os.environ.get("PYTHONPATH", "")]))
    with tempfile.TemporaryDirectory(prefix="adrank-grid-") as tmp:
        prepared = prepare(kind, size, width, tmp, env, source)
        if isinstance(prepared, str):
            return prepared
        log = Path(tmp) / "point.log"
        with open(log, "w") as out:
            child = subprocess.Popen(
                [sys.executable, __file__, "--point", kind, str(size), str(width), "--workdir", tmp],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env, cwd=source)
            started, peak, processes = time.monotonic(), 0, 0
            while child.poll() is None:
                if time.monotonic() - started > timeout:
                    os.killpg(child.pid, signal.SIGKILL)
                    child.wait()
                    return f"> {timeout:.0f} s, stopped (peak RSS so far {peak / 2**20:,.0f} MiB)"
                rss, count = resident_bytes(child.pid, descendants=True)
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
    return json.loads(lines[-1]) | prepared | {"peak_tree_mib": peak / 2**20, "processes": processes}


CORES = len(os.sched_getaffinity(0))


def rate(figures: dict) -> float:
    return figures["records"] / figures["seconds"]


def print_point(what: str, f: dict) -> None:
    stages = f["stage_seconds"]
    sampled = sum(stages.values()) or 1.0
    top = max(stages, key=stages.get) if stages else "none"
    floor = f["records"] / f["floor_seconds"]
    print(f"{what}: {rate(f):>8,.0f} records/s ({rate(f) / CORES:,.0f} per core; {f['records']:,} records, "
          f"{f['examples']:,} examples, {f['log_bytes'] / 2**20:,.0f} MiB of logs)  step {f['seconds']:6.1f} s "
          f"(Beam job {f['job_seconds']:6.1f} s, "
          f"{f['running_mode']})  peak RSS {f['peak_tree_mib']:,.0f} MiB over {f['processes']} processes;  floor "
          f"(pyarrow read + write) {f['floor_seconds']:.1f} s = {floor:,.0f} records/s, step/floor "
          f"{rate(f) / floor:.3f}", flush=True)
    shares = "  ".join(f"{stage} {stages.get(stage, 0):.1f} s ({stages.get(stage, 0) / sampled:.0%})"
                       for stage in [s for s, _ in STAGES] + ["between stages", "other"] if stage in stages)
    print(f"    worker time by stage ({sampled:.1f} s sampled in transforms; the rest of the job's wall time is the "
          f"runner scheduling fused stages and moving data between them): {shares}; largest: {top}", flush=True)
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


def print_slope(what: str, measured: dict[int, dict], sizes: list[int]) -> None:
    """The line through the two largest measured points (a fixed cost plus a cost per record), and the sizes not
    measured on it, marked EXTRAPOLATED, never printed as a measurement."""
    if len(measured) < 2:
        return
    (n1, f1), (n2, f2) = sorted(measured.items())[-2:]
    per_record = (f2["seconds"] - f1["seconds"]) / (f2["records"] - f1["records"])
    fixed = f2["seconds"] - per_record * f2["records"]
    mib_per_record = (f2["peak_tree_mib"] - f1["peak_tree_mib"]) / (f2["records"] - f1["records"])
    print(f"{what}: slope between {n1:,} and {n2:,} impressions: {per_record * 1e6:,.1f} s per million records "
          f"(marginal {1 / per_record:,.0f} records/s), fixed cost {fixed:,.1f} s; memory "
          f"{mib_per_record * 1e6:,.0f} MiB per million records", flush=True)
    for n in sizes:
        if n in measured:
            continue
        records = n * f2["records"] / n2
        seconds = fixed + per_record * records
        mib = f2["peak_tree_mib"] + mib_per_record * (records - f2["records"])
        print(f"{n:>9,} impressions, {what}: EXTRAPOLATED (not measured) {records / seconds:>8,.0f} records/s, "
              f"step {seconds / 60:,.1f} min, peak RSS {mib:,.0f} MiB", flush=True)


def print_comparison(what: str, after: list[dict | None], before: list[dict | None]) -> None:
    """after/before records/s of one point: one run each, or (repeated) the medians and every pair's ratio."""
    pairs = [(a, b) for a, b in zip(after, before) if a is not None and b is not None]
    if not pairs:
        return
    rss = median([a["peak_tree_mib"] for a, _ in pairs]) / median([b["peak_tree_mib"] for _, b in pairs])
    if len(pairs) == 1:
        (a, b), = pairs
        print(f"{what}: after/before {rate(a) / rate(b):.1f}x records/s, peak RSS {rss:.2f}x", flush=True)
        return
    ratios = [rate(a) / rate(b) for a, b in pairs]
    after_median, before_median = median([rate(a) for a, _ in pairs]), median([rate(b) for _, b in pairs])
    print(f"{what}: after/before {after_median / before_median:.2f}x records/s (medians of {len(pairs)} alternated "
          f"pairs: {after_median:,.0f} / {before_median:,.0f}); pair ratios "
          f"{', '.join(f'{r:.2f}' for r in ratios)} (median {median(ratios):.2f}); after faster in "
          f"{sum(r > 1 for r in ratios)} of {len(pairs)}; peak RSS {rss:.2f}x", flush=True)


def grid(args) -> None:
    """Each point in a child process (`--point`) with a timeout, its figures printed as they come; with `--before`,
    each point on the earlier tree right after it."""
    print(f"DirectRunner (each tree's default config's running mode), {CORES} cores, load average "
          f"{os.getloadavg()[0]:.1f} at the start: full preprocess step per point; peak RSS summed over the step's "
          f"process tree (its Beam workers included); worker time by stage sampled by the SDK harness (all workers "
          f"added up, so it can exceed the job's wall time)", flush=True)
    rows = [("default features", "synthetic", 0)] * bool(args.sizes) + [
        (f"{width:>5} features, {WIDE_KINDS[kind]}", kind, width) for kind in args.wide_kinds for width in args.widths]
    trees = [("after", None)] + ([("before", Path(args.before).resolve())] if args.before else [])
    wide_sizes = args.sizes if args.wide_sizes is None else args.wide_sizes
    before_wide_sizes = args.before_sizes if args.before_wide_sizes is None else args.before_wide_sizes
    args.before_timeout = args.before_timeout or args.point_timeout
    for label, kind, width in rows:
        measured: dict[str, dict[int, dict]] = {tree: {} for tree, _ in trees}
        sizes = args.sizes if kind == "synthetic" else wide_sizes
        for size in sorted(sizes):
            what = f"{size:>9,} impressions, {label}"
            runs: dict[str, list[dict | None]] = {tree: [] for tree, _ in trees}
            point_trees = []  # (tree, path, timeout) of the trees this point runs on, the same in every repeat
            for tree, path in trees:
                if tree == "before" and (kind != "synthetic" and (size not in before_wide_sizes
                                                             or width not in args.before_widths)
                                         or kind == "synthetic" and size not in args.before_sizes):
                    continue
                timeout = args.before_timeout if tree == "before" else args.point_timeout
                predicted = predicted_seconds(measured[tree], size)
                if predicted is not None and predicted > timeout:
                    print(f"{what} [{tree}]: not run: the measured slope predicts {predicted / 60:,.0f} min, above "
                          f"its timeout {timeout:.0f} s (extrapolated below)", flush=True)
                    continue
                point_trees.append((tree, path, timeout))
            for repeat in range(args.repeats):
                for tree, path, timeout in point_trees:
                    figures = run_point(kind, size, width, timeout, args.max_rss_mib, path)
                    run = f" run {repeat + 1}" if args.repeats > 1 else ""
                    if isinstance(figures, str):
                        print(f"{what} [{tree}{run}]: {figures}", flush=True)
                        runs[tree].append(None)
                        continue
                    print_point(f"{what} [{tree}{run}]", figures)
                    runs[tree].append(figures)
            for tree, _ in trees:
                done = sorted((f for f in runs[tree] if f is not None), key=rate)
                if done:
                    measured[tree][size] = done[(len(done) - 1) // 2]  # the median run (the lower one of an even count)
            if len(trees) == 2:
                print_comparison(what, runs["after"], runs["before"])
        for tree, _ in trees:
            print_slope(f"{label} [{tree}]", measured[tree], sizes)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}", flush=True)


def running_modes(args, workdir: Path) -> None:
    """The full step on the same synthetic logs with each DirectRunner running mode, each point in its own process."""
    print(f"{args.impressions:,} impressions, default features, {CORES} cores", flush=True)
    for mode, workers in (("in_memory", 1), ("multi_processing", 2)):
        env = {**os.environ, "ADRANK_BENCH_MODE": mode, "ADRANK_BENCH_WORKERS": str(workers)}
        with tempfile.TemporaryDirectory(prefix="adrank-mode-", dir=workdir) as tmp:
            prepared = prepare("synthetic", args.impressions, 0, tmp, env, Path(__file__).resolve().parents[1])
            if isinstance(prepared, str):
                print(f"{mode}: {prepared}", flush=True)
                continue
            child = subprocess.Popen([sys.executable, __file__, "--point", "synthetic", str(args.impressions), "0",
                                      "--workdir", tmp], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     start_new_session=True, env=env, text=True)
            peak = 0
            while child.poll() is None:
                peak = max(peak, resident_bytes(child.pid, descendants=True)[0])
                time.sleep(0.5)
            figures = json.loads([line for line in child.stdout.read().splitlines() if line.startswith("{")][-1])
        print(f"{mode:17s} ({workers} worker{'s' if workers > 1 else ''}): step {figures['seconds']:6.1f} s, "
              f"{rate(figures):,.0f} records/s, peak RSS {peak / 2**30:.2f} GiB", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grid", action="store_true", help="records/s and peak memory as logs and features grow")
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--widths", type=int, nargs="*", default=[10, 100, 1000])
    parser.add_argument("--wide-sizes", type=int, nargs="*", default=None,
                        help="impressions of the --widths points (default: --sizes)")
    parser.add_argument("--wide-formats", nargs="*", choices=sorted(WIDE_SUFFIX), default=["csv"],
                        help="log formats of the --widths points (each its own row, its floor read with pyarrow's "
                             "reader of that format)")
    parser.add_argument("--max-rss-mib", type=float, default=10_240, help="stop a grid point whose processes hold more")
    parser.add_argument("--point-timeout", type=float, default=900, help="seconds a grid point may take")
    parser.add_argument("--before", default=None, help="also run grid points on the source tree in this folder")
    parser.add_argument("--before-sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--before-widths", type=int, nargs="*", default=[10, 100])
    parser.add_argument("--before-wide-sizes", type=int, nargs="*", default=None,
                        help="sizes of the --before-widths points on the earlier tree (default: --before-sizes)")
    parser.add_argument("--before-timeout", type=float, default=None,
                        help="seconds a point on the earlier tree may take (default: --point-timeout)")
    parser.add_argument("--prepare", nargs=3, metavar=("KIND", "SIZE", "WIDTH"), help=argparse.SUPPRESS)
    parser.add_argument("--point", nargs=3, metavar=("KIND", "SIZE", "WIDTH"), help=argparse.SUPPRESS)
    parser.add_argument("--modes", action="store_true", help="in_memory vs multi_processing on synthetic logs")
    parser.add_argument("--impressions", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=None, help="time vocabulary vs hashed features instead")
    parser.add_argument("--rows", type=int, default=3000, help="impressions of the wide log of --features")
    parser.add_argument("--repeats", type=int, default=1,
                        help="run each grid point this many times, the trees alternated (medians and pair ratios)")
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")
    args.wide_kinds = [kind for kind, file_format in WIDE_KINDS.items() if file_format in args.wide_formats]
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="adrank-bench-"))
    if args.prepare:
        print(json.dumps(prepare_point(args.prepare[0], int(args.prepare[1]), int(args.prepare[2]), workdir)),
              flush=True)
    elif args.point:
        if "ADRANK_BENCH_MODE" in os.environ:  # --modes: this point with the given running mode
            SYNTHETIC.extend([f"preprocess.direct_running_mode={os.environ['ADRANK_BENCH_MODE']}",
                              f"preprocess.direct_num_workers={os.environ['ADRANK_BENCH_WORKERS']}"])
        print(json.dumps(grid_point(args.point[0], int(args.point[1]), int(args.point[2]), workdir)), flush=True)
    elif args.grid:
        grid(args)
    elif args.features:
        wide_features(args, workdir)
    elif args.modes:
        running_modes(args, workdir)
    else:
        parser.print_help()


if __name__ == "__main__":
    main()
