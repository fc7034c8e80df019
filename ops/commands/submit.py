"""`adrank submit`: compile the DAG for Vertex and run it as a PipelineJob (optionally wait for the end)."""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import tempfile
from pathlib import Path

import yaml

from foundation.log_lines import fields
from ops.commands.options import add_config_arguments, add_endpoint_argument, add_pipeline_argument, config_from_args

log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("submit", help="run the pipeline on Vertex AI Pipelines")
    add_config_arguments(parser, required=True)
    add_pipeline_argument(parser, default="benchmark")
    parser.add_argument("--wait", action="store_true", help="follow the run, print task states, fail if it fails")
    parser.add_argument("--experiment", metavar="NAME", help="Vertex Experiment to associate the run with "
                        "(default: vertex.experiment)")
    parser.add_argument("--cache", choices=("on", "off", "default"), default="default",
                        help="step caching: on/off for every step, default: each step's own setting")
    parser.add_argument("--param", dest="parameters", action="append", default=[], metavar="NAME=VALUE",
                        help="a pipeline parameter value (YAML-typed)")
    parser.add_argument("--force", action="store_true",
                        help="submit even when a run of the same pipeline and day is queued, running or succeeded "
                        "(each submit is a paid run)")
    parser.add_argument("--poll-seconds", type=float, default=30.0, help="with --wait: seconds between polls")
    parser.add_argument("--timeout-minutes", type=float, default=None, help="with --wait: give up after this long")
    add_endpoint_argument(parser)
    parser.set_defaults(handler=_submit)


def parse_parameters(items: list[str]) -> dict[str, object]:
    from ops.errors import CommandError
    from pipelines.fan_in import TRAINING_RUNS
    from pipelines.run_parameters import RECORDED_ONLY

    parameters = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise CommandError(f"--param {item!r}: expected NAME=VALUE")
        if name in RECORDED_ONLY:
            raise CommandError(f"--param {name}: the run records the config's {name}; no step reads the parameter, "
                               "so change the config (--set) instead")
        if name == TRAINING_RUNS:
            raise CommandError(f"--param {name}: the runs are compiled from the config's targets and "
                               "runs_per_target, which the report reads too; change the config (--set) instead")
        parameters[name] = yaml.safe_load(text)
    return parameters


def _submit(args: argparse.Namespace) -> int:
    from components.lineage.run_day import day_stamp, window_day
    from ops.errors import CommandError
    from ops.pipeline_compiler import compile_pipeline
    from ops.vertex.jobs import runs_of_day, submit_pipeline
    from ops.vertex.preflight import check_config
    from ops.vertex.session import VertexSetupError, console_url, require_service_account, session_for
    from pipelines.run_cost import estimate_run_cost

    config = config_from_args(args)
    try:
        require_service_account(config)
        check_config(config)  # before any request: what Vertex would refuse fails here, naming the field
        if args.experiment:
            check_experiment(args.experiment, config.name)
            # the run's config is the one with this experiment: its 'join experiment' step joins the experiment the
            # SDK adds it to, and its labels, job id and recorded config hash all name that config
            config = with_experiment(config, args.experiment)
        parameters = with_window_end(parse_parameters(args.parameters), dt.datetime.now(dt.timezone.utc))
        day = window_day(str(parameters["window_end"]))
        session = session_for(config, args.api_endpoint)
        earlier = runs_of_day(config, args.pipeline, day_stamp(day))
        if earlier and not args.force:
            runs = "; ".join(f"{job} {state.removeprefix('PIPELINE_STATE_')} ({console_url(session, job)})"
                             for job, state in earlier)
            raise CommandError(f"the {args.pipeline} pipeline already has a run of day {day} (window ending "
                               f"{parameters['window_end']}): {runs}; each submit is a paid run: pass --force to "
                               "submit it again (a day whose run failed or was cancelled is submitted without it)")
        with tempfile.TemporaryDirectory(prefix="adrank-submit-") as directory:
            template = compile_pipeline(config, "vertex", Path(directory) / f"{config.name}.yaml", args.pipeline)
            job, submission = submit_pipeline(
                config, template, session, experiment=args.experiment, cache=args.cache, parameters=parameters,
                kind=args.pipeline, day=day_stamp(day),
            )
    except (VertexSetupError, ValueError) as error:
        raise CommandError(str(error)) from None
    print(f"submitted {submission.job_id} (the {args.pipeline} pipeline; window ends {parameters['window_end']}, "
          f"day {day})")
    print(f"  labels: {', '.join(f'{k}={v}' for k, v in sorted(submission.labels.items()))}")
    if submission.experiment:
        print(f"  experiment: {submission.experiment}")
    print(f"  console: {submission.console_url}")
    print("\n".join(estimate_run_cost(config, args.pipeline).describe()))
    for warning in submission.warnings:
        log.warning(warning)
    if not args.wait:
        return 0
    return _wait(job, submission, args)


def with_window_end(parameters: dict[str, object], now: dt.datetime) -> dict[str, object]:
    """The pipeline parameters with `window_end`, a UTC midnight (components.lineage.run_day): a run nobody
    scheduled reads the whole `logs.lookback_days` days before the day it was submitted (a scheduled run: before
    its scheduled time's day). `--param window_end=...` re-runs a day: any time of that day gives preprocess the
    same inputs, so Vertex's cache reuses them."""
    from components.lineage.run_day import resolved_window_end
    from foundation.utc_time import format_utc_seconds

    given = parameters.get("window_end")
    if isinstance(given, dt.datetime):  # YAML reads an unquoted RFC 3339 time as a datetime
        given = format_utc_seconds(given if given.tzinfo else given.replace(tzinfo=dt.timezone.utc))
    elif isinstance(given, dt.date):
        given = f"{given.isoformat()}T00:00:00Z"
    try:
        end = resolved_window_end(str(given) if given else "", "", now)
    except ValueError as error:
        raise ValueError(f"--param window_end: {error}") from None
    return {**parameters, "window_end": end}


def with_experiment(config, experiment: str):
    """`config` with `vertex.experiment` set to `--experiment`."""
    from ops.vertex.session import vertex_section

    return config.model_copy(update={"vertex": vertex_section(config).model_copy(update={"experiment": experiment})})


def check_experiment(experiment: str, pipeline_name: str) -> None:
    """`--experiment` obeys the same Vertex limits as `vertex.experiment` (configs.vertex_names)."""
    from configs.vertex_names import experiment_name_problem, experiment_run_problem
    from ops.errors import CommandError

    problem = experiment_name_problem(experiment) or experiment_run_problem(experiment, pipeline_name)
    if problem:
        raise CommandError(f"--experiment: {problem}")


def _wait(job, submission, args: argparse.Namespace) -> int:
    """Follow the run to its end. Every way it can end is one line, never a traceback: success (0), a failed,
    cancelled or timed-out run (1, on stderr), an API error while polling (2, via CommandError), Ctrl-C (130)."""
    from ops.errors import CommandError, VertexApiError
    from ops.vertex.jobs import wait_for_pipeline

    timeout = args.timeout_minutes * 60 if args.timeout_minutes else None
    follow = f"the run goes on on Vertex: {submission.console_url}"
    try:
        result = wait_for_pipeline(job, poll_seconds=args.poll_seconds, timeout_seconds=timeout)
    except VertexApiError as error:
        raise CommandError(f"{submission.job_id}: stopped waiting: {error}; {follow}") from None
    except KeyboardInterrupt:
        log.warning(f"{submission.job_id}: stopped waiting (interrupted); {follow}")
        return 130
    if result.succeeded:
        print(f"{submission.job_id}: succeeded")
        return 0
    log.error(f"{submission.job_id}: {wait_outcome(result)}; console: {submission.console_url}",
              extra=fields(command="submit"))
    return 1


def wait_outcome(result) -> str:
    """One line for a run that did not succeed: its state, the failed tasks and Vertex's error message."""
    error = " ".join(result.error.split())
    if result.state == "PIPELINE_STATE_FAILED":
        failed = ", ".join(result.failed_tasks) or "no task reported FAILED"
        return f"{result.state} (failed tasks: {failed})" + (f": {error}" if error else "")
    if result.state == "PIPELINE_STATE_CANCELLED":
        return f"{result.state} (cancelled before it finished)" + (f": {error}" if error else "")
    return f"{result.state}: {error}" if error else result.state
