"""`adrank runs list|show|compare`: review pipeline runs (local run directories, or Vertex AI)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ops.commands.options import add_config_arguments, add_endpoint_argument


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("runs", help="review pipeline runs and their metrics")
    actions = parser.add_subparsers(dest="runs_command", required=True, metavar="ACTION")

    listing = actions.add_parser("list", help="list runs: id, date, config, status, best log-loss")
    _add_backend_arguments(listing)
    listing.add_argument("--limit", type=_positive, default=20, metavar="N",
                         help="with --backend vertex: the N newest runs (default 20)")
    listing.set_defaults(handler=_list)

    show = actions.add_parser("show", help="one run: status, failed step, per-target results, report path")
    _add_backend_arguments(show)
    show.add_argument("run", help="run id, a unique prefix of one, or 'latest'")
    show.set_defaults(handler=_show)

    compare = actions.add_parser("compare", help="per-target deltas of log-loss and throughput (B − A)")
    compare.add_argument("--runs-dir", default="runs", metavar="DIR")
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.set_defaults(handler=_compare)


def _add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=("local", "vertex"), default="local")
    parser.add_argument("--runs-dir", default="runs", metavar="DIR", help="local runs directory (default: runs)")
    add_config_arguments(parser)
    add_endpoint_argument(parser)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a count >= 1, got {text!r}")
    return int(text)


def _list(args: argparse.Namespace) -> int:
    if args.backend == "vertex":
        return _vertex(args, "list")
    from ops.errors import CommandError
    from ops.local_run.past_runs import RunNotFound, format_runs_table

    try:
        print(format_runs_table(Path(args.runs_dir)))
    except RunNotFound as error:
        raise CommandError(str(error)) from None
    return 0


def _show(args: argparse.Namespace) -> int:
    if args.backend == "vertex":
        return _vertex(args, "show")
    from ops.local_run.past_runs import format_run

    print(format_run(_find(args.runs_dir, args.run)))
    return 0


def _compare(args: argparse.Namespace) -> int:
    from ops.errors import CommandError
    from ops.local_run.past_runs import RunNotFound, format_comparison

    try:
        print(format_comparison(_find(args.runs_dir, args.run_a), _find(args.runs_dir, args.run_b)))
    except RunNotFound as error:
        raise CommandError(str(error)) from None
    return 0


def checked_run_id(run: str) -> str:
    """`run` if it can only name a directory inside the runs directory, else a CommandError."""
    from ops.errors import CommandError
    from ops.local_run.directories import is_run_id

    if not is_run_id(run):
        raise CommandError(f"run id {run!r}: a run id is a directory name under the runs directory "
                           "(letters, digits, '.', '_' and '-'; no '/' or '..'), see `adrank runs list`")
    return run


def find_local_run(runs_dir: str | Path, run: str) -> Path:
    """The run directory for an id, unique prefix or 'latest', always inside `runs_dir`."""
    from ops.errors import CommandError
    from ops.local_run.past_runs import RunNotFound, find_run

    root = Path(runs_dir)
    if root.exists() and not root.is_dir():
        raise CommandError(f"--runs-dir {root}: not a directory")
    try:
        found = find_run(root, checked_run_id(run))
    except RunNotFound as error:
        raise CommandError(str(error)) from None
    if not found.resolve().is_relative_to(root.resolve()):
        raise CommandError(f"run {run!r} resolves to {found.resolve()}, outside the runs directory {root}")
    return found


def _find(runs_dir: str, run: str) -> Path:
    return find_local_run(runs_dir, run)


def _vertex(args: argparse.Namespace, action: str) -> int:
    from ops.commands.options import config_from_args
    from ops.errors import CommandError
    from ops.vertex import runs as vertex_runs
    from ops.vertex.session import VertexSetupError, session_for

    try:
        config = config_from_args(args)
        session = session_for(config, getattr(args, "api_endpoint", None))
        if action == "list":
            print(vertex_runs.format_runs_table(vertex_runs.list_runs(config, session, limit=args.limit)))
        else:
            run = vertex_runs.get_run(args.run, session)
            if run.schedule_name:  # say which of the config's schedules started it, by display name
                from ops.vertex.schedules import config_schedules

                run = vertex_runs.name_schedule(run, config_schedules(config, session))
            print(vertex_runs.format_run(run, session))
    except VertexSetupError as error:
        raise CommandError(str(error)) from None
    return 0
