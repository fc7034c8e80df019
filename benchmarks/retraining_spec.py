"""What Vertex's execution cache saves a team when a day of the scheduled retraining pipeline is run again: the
compiled retraining spec of configs/vertex.yaml (production target `cpu` here) executed by `adrank run-spec` for one
scheduled day, then again under a new job id, later that day and with no schedule time (a manual re-run of a failed
day: its window is resolved from its create time, rounded down to the same midnight), on one Cloud Storage stand-in
root. The flow of tests/pipelines/test_retraining_spec_run.py.

    .venv/bin/python benchmarks/retraining_spec.py [--impressions-per-day N] [--set dotted.key=value ...]

Prints each task's state and seconds in both runs, each run's wall time, and the re-run's time as a ratio to the
first run's.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ops.cli import main as adrank  # noqa: E402  (the repository root is put on sys.path above)
from ops.spec_executor.runner import RunSpecOptions, run_spec  # noqa: E402

SCHEDULED = dt.datetime(2026, 3, 4, 3, 0, tzinfo=dt.timezone.utc)
OVERRIDES = [
    "logs.source=synthetic", "logs.synthetic.days=3", "logs.synthetic.users=2000", "logs.synthetic.ads=300",
    "logs.synthetic.advertisers=30", "logs.synthetic.start_date=2026-03-01", "preprocess.output_shards=2",
    "training.epochs=1",
    "targets=[{name: cpu, kind: cpu, price_per_hour: 0.76, vertex: {machine: {machine_type: n1-standard-16}}}]",
    "retraining.target=cpu", "vertex.notify_emails=[ranking-oncall@example.com]",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impressions-per-day", type=int, default=5000)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="adrank-retraining-spec-bench-"))
    spec = workdir / "retraining.yaml"
    overrides = [*OVERRIDES, f"logs.synthetic.impressions_per_day={args.impressions_per_day}", *args.overrides]
    sets = [arg for override in overrides for arg in ("--set", override)]
    if adrank(["compile", "--pipeline", "retraining", "--config", str(ROOT / "configs" / "vertex.yaml"),
               "--backend", "vertex", "--allow-image-tags", "--output", str(spec), *sets]) != 0:
        return 1

    runs, walls = [], []
    for label, create_time, schedule_time in (("scheduled run", SCHEDULED, SCHEDULED),
                                              ("manual re-run, same day", SCHEDULED + dt.timedelta(hours=14), None)):
        options = RunSpecOptions(root=workdir / "gcs", project="adrank-prod", location="us-central1",
                                 pipeline_root="gs://adrank-prod-pipelines/root", create_time=create_time,
                                 schedule_time=schedule_time, direct_num_workers=0)
        started = time.perf_counter()
        run = run_spec(spec, options, report=lambda line: None)
        walls.append(time.perf_counter() - started)
        runs.append(run)
        print(f"{label}: {run.job_name} {run.status} in {walls[-1]:.1f} s")
        if run.status != "succeeded":
            return 1

    print(f"\n{'task':<28}{'first run':>20}{'re-run':>20}")
    second = {task.task: task for task in runs[1].tasks}
    for task in runs[0].tasks:
        again = second[task.task]
        print(f"{task.display_name:<28}{task.state:>10} {task.seconds:7.1f} s{again.state:>10} {again.seconds:7.1f} s")
    print(f"\nre-run / first run wall time: {walls[1] / walls[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
