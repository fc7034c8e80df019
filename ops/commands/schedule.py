"""`adrank schedule create|update|pause|resume|delete|list`: daily retraining on Vertex AI.

A schedule runs the retraining pipeline (`retraining.target` trained once → report → promote), never the benchmark;
`create` and `update` print what one of its runs is expected to cost."""

from __future__ import annotations

import argparse
import datetime as dt
import tempfile
from pathlib import Path

from components.display_tables import Table, text_table
from ops.commands.options import add_config_arguments, add_endpoint_argument, config_from_args

ACTIONS = {
    "create": "schedule the retraining pipeline daily (updates the schedule when one with the same display name "
              "exists)",
    "update": "update the config's schedule (cron, limits, window, pipeline)",
    "pause": "pause the config's schedule",
    "resume": "resume the config's schedule",
    "delete": "delete the config's schedule",
    "list": "list the schedules in the config's project and region",
    "add-to-experiment": "add the runs the config's schedules started to the Vertex Experiment (runs of templates "
                         "compiled with vertex.experiment join it themselves)",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("schedule", help="schedule daily retraining on Vertex AI")
    actions = parser.add_subparsers(dest="schedule_command", required=True, metavar="ACTION")
    for action, help_text in ACTIONS.items():
        sub = actions.add_parser(action, help=help_text)
        add_config_arguments(sub, required=True)
        add_endpoint_argument(sub)
        if action in ("create", "update"):
            sub.add_argument("--max-runs", type=_max_runs, metavar="N|none",
                             help="stop after N runs; 'none' clears the limit (default: vertex.schedule.max_runs)")
            sub.add_argument("--end-time", type=_end_time, metavar="TIME|none",
                             help="no runs after this RFC 3339 time, e.g. 2026-12-31T00:00:00Z; 'none' clears it "
                             "(default: vertex.schedule.end_time)")
            sub.add_argument("--start-now-if-past", action="store_true",
                             help="a vertex.schedule.start_time already past starts the schedule now instead of "
                             "failing (never with catch-up runs)")
        if action == "resume":
            sub.add_argument("--catch-up", action="store_true", help="also start the runs missed while paused")
        if action == "list":
            sub.add_argument("--all", action="store_true", help="every schedule, not only this pipeline's")
        if action == "add-to-experiment":
            sub.add_argument("--experiment", metavar="NAME", help="default: vertex.experiment")
        sub.set_defaults(handler=_run)


def _max_runs(text: str) -> str:
    """`--max-runs` as a config override value: a positive count, or 'null' to clear the limit."""
    if text.lower() == "none":
        return "null"
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a run count >= 1 or 'none', got {text!r}")
    return text


def _end_time(text: str) -> str:
    """`--end-time` as a config override value: an RFC 3339 time (validated with the config), or 'null'."""
    return "null" if text.lower() == "none" else text


def _limit_overrides(args: argparse.Namespace) -> list[str]:
    """`--max-runs` / `--end-time` as `--set` overrides of vertex.schedule, so the config validates them."""
    overrides = []
    if getattr(args, "max_runs", None) is not None:
        overrides.append(f"vertex.schedule.max_runs={args.max_runs}")
    if getattr(args, "end_time", None) is not None:
        overrides.append(f"vertex.schedule.end_time={args.end_time}")
    return overrides


def _clearing(args: argparse.Namespace) -> frozenset[str]:
    """The Schedule fields `--max-runs none` / `--end-time none` ask to clear."""
    asked = {"max_run_count": getattr(args, "max_runs", None), "end_time": getattr(args, "end_time", None)}
    return frozenset(field for field, value in asked.items() if value == "null")


def _limits(schedule) -> str:
    runs = f"at most {schedule.max_runs} runs" if schedule.max_runs else "no run limit"
    end = f"until {schedule.end_time.isoformat()}" if schedule.end_time else "no end time"
    return f"{runs}, {end}"


def _start(start) -> str:
    if start.keep_existing:
        return "start time unchanged"
    return f"first run after {start.value.isoformat()}" if start.value else "no start time (runs from its creation)"


def _run(args: argparse.Namespace) -> int:
    from ops.errors import CommandError
    from ops.vertex import schedules
    from ops.vertex.session import VertexSetupError, require_service_account, session_for, vertex_section
    from pipelines.run_cost import estimate_run_cost

    args.overrides = [*args.overrides, *_limit_overrides(args)]
    config = config_from_args(args)
    if args.schedule_command in ("create", "update"):
        config.retraining_target()  # a config without a production target fails here, before any request
    try:
        if args.schedule_command in ("create", "update"):
            from ops.vertex.preflight import check_config

            check_config(config)  # before any request: what Vertex would refuse fails here, naming the field
        session = session_for(config, args.api_endpoint)
        display_name = schedules.schedule_display_name(config)
        action = args.schedule_command
        if action in ("create", "update"):
            require_service_account(config)
            existing = schedules.find_schedules(display_name, session)
            if action == "update" and not existing:
                raise CommandError(f"no schedule named '{display_name}' to update; use 'adrank schedule create'")
            now = dt.datetime.now(dt.timezone.utc)
            # refuse a past start time before compiling; create_or_update checks again against what it finds
            schedules.resolve_start_time(config, now, existing[0] if len(existing) == 1 else None,
                                         args.start_now_if_past)
            with tempfile.TemporaryDirectory(prefix="adrank-schedule-") as directory:
                from ops.pipeline_compiler import compile_pipeline

                template = compile_pipeline(config, "vertex", Path(directory) / f"{config.name}.yaml", "retraining")
                done, schedule_name, start, kept = schedules.create_or_update(
                    config, template, session, now=now, start_now_if_past=args.start_now_if_past,
                    clearing=_clearing(args))
            timing = vertex_section(config).schedule
            print(f"{done} schedule {display_name} ({schedule_name}): {timing.vertex_cron}, "
                  f"max {timing.max_concurrent_runs} concurrent run(s), {_limits(timing)}, {_start(start)}")
            if start.note:
                print(start.note)
            for note in kept:
                print(note)
            print("\n".join(estimate_run_cost(config, "retraining").describe()))
            if schedules.experiment_note(config):
                print(schedules.experiment_note(config))
        elif action == "pause":
            print(f"paused {schedules.pause(display_name, session).resource_name}")
        elif action == "resume":
            print(f"resumed {schedules.resume(display_name, session, catch_up=args.catch_up).resource_name}")
        elif action == "delete":
            print(f"deleted {schedules.delete(display_name, session)}")
        elif action == "add-to-experiment":
            print(_experiment_sync(config, session, args.experiment))
        else:
            rows = schedules.list_schedules(session, "" if args.all else display_name)
            print(_table(rows))
    except (VertexSetupError, schedules.ScheduleNotFound, schedules.ScheduleTimeError, ValueError) as error:
        raise CommandError(str(error)) from None
    return 0


def _experiment_sync(config, session, experiment: str | None) -> str:
    from ops.commands.submit import check_experiment
    from ops.vertex.experiments import add_scheduled_runs

    if experiment:
        check_experiment(experiment, config.name)
    sync = add_scheduled_runs(config, session, experiment)
    lines = [f"experiment {sync.experiment}: {len(sync.added)} scheduled run(s) in it "
             "(runs already in it are left as they are)"]
    lines += [f"  {job}" for job in sync.added]
    if sync.without_context:
        lines.append("not yet (Vertex has not given them a run context; run this again later): "
                     + ", ".join(sync.without_context))
    lines.append(f"console: {sync.console_url}")
    return "\n".join(lines)


def _table(rows) -> str:
    if not rows:
        return "no schedules"
    return text_table(Table(["DISPLAY NAME", "STATE", "CRON", "NEXT RUN", "LAST RUN"],
                            [[str(v) for v in (r.display_name, r.state, r.cron, r.next_run_time, r.last_run)]
                             for r in rows]))
