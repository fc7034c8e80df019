"""`adrank run-spec`: execute a compiled Vertex pipeline spec on this machine (ops.spec_executor)."""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run-spec", help="run a compiled Vertex pipeline spec here, as Vertex would (docs/spec_executor.md)")
    parser.add_argument("spec", metavar="PIPELINE.yaml", help="what `adrank compile --backend vertex` wrote")
    parser.add_argument("--root", required=True, metavar="DIR",
                        help="local stand-in for Cloud Storage: gs://BUCKET/x and /gcs/BUCKET/x are DIR/BUCKET/x")
    parser.add_argument("--pipeline-root", metavar="gs://...", help="default: the spec's defaultPipelineRoot")
    parser.add_argument("--project", required=True, help="what {{$.pipeline_google_cloud_project_id}} becomes")
    parser.add_argument("--location", default="us-central1")
    parser.add_argument("--create-time", type=_utc, default=None, metavar="RFC3339",
                        help="the job's create time (default: now); a scheduled run's fire time")
    parser.add_argument("--schedule-time", type=_utc, default=None, metavar="RFC3339")
    parser.add_argument("--direct-running-mode", default="multi_processing",
                        choices=("in_memory", "multi_threading", "multi_processing"),
                        help="the DirectRunner mode standing in for Dataflow")
    parser.add_argument("--direct-num-workers", type=int, default=0, help="0: one per core")
    parser.add_argument("--cache", choices=("on", "off", "default"), default="default",
                        help="Vertex's execution cache across runs under --root: on for every task, off for none, "
                             "default: each task's compiled caching option (as `adrank submit --cache`)")
    parser.add_argument("--max-backoff", type=_seconds, default=60.0, metavar="SECONDS",
                        help="the longest wait before a retry here, whatever the task's retry policy asks (60)")
    parser.add_argument("--check", action="store_true",
                        help="resolve every task (inputs, placeholders, payloads, Dataflow options), run none")
    parser.set_defaults(handler=_run_spec)


def _utc(text: str) -> dt.datetime:
    moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text}: needs a UTC offset, e.g. 2026-03-01T03:00:00Z")
    return moment


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text}: not a number of seconds") from None
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{text}: must be between 0 and 3600 seconds")
    return value


def _run_spec(args: argparse.Namespace) -> int:
    from ops.errors import CommandError
    from ops.spec_executor.pipeline_spec import UnsupportedSpec
    from ops.spec_executor.runner import RUN_RECORD, JobBusy, RunSpecOptions, run_spec

    options = RunSpecOptions(
        root=Path(args.root), project=args.project, location=args.location, pipeline_root=args.pipeline_root,
        schedule_time=args.schedule_time, direct_running_mode=args.direct_running_mode,
        direct_num_workers=args.direct_num_workers, check_only=args.check, cache=args.cache,
        max_backoff_seconds=args.max_backoff,
    )
    if args.create_time is not None:
        options.create_time = args.create_time
    try:
        run = run_spec(Path(args.spec), options)
    except (UnsupportedSpec, JobBusy) as error:
        raise CommandError(str(error)) from None
    record = Path(run.root) / "spec-runs" / run.job_name / RUN_RECORD
    print(f"{run.job_name}: {run.status}; record: {record}")
    if run.status in ("succeeded", "checked"):
        return 0
    raise CommandError(f"{run.job_name} {run.status}: " + "; ".join(
        f"{t.task} {t.state}" for t in run.tasks if t.state in ("failed", "skipped")))
