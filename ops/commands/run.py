"""`adrank run`: run the whole DAG on this machine (kfp.local, Beam DirectRunner, CPU)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ops.commands.options import add_config_arguments, config_for_local_run


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("run", help="run the whole DAG locally (kfp.local)")
    add_config_arguments(parser)
    parser.add_argument("--runs-dir", default="runs", metavar="DIR", help="where run directories go (default: runs)")
    parser.add_argument("--run-id", default=None, help="run directory name (default: <UTC time>-<config name>)")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from configs.loader import embedded_config_path
    from ops.errors import CommandError
    from ops.local_run import LocalRunFailed, RunIdError, run_locally

    config = config_for_local_run(args)
    source = args.config or str(embedded_config_path())
    try:
        record = run_locally(config, Path(args.runs_dir), source, args.run_id)
    except RunIdError as error:
        raise CommandError(str(error)) from None
    except LocalRunFailed as failure:
        raise CommandError(
            f"run {failure.record.id} failed at step '{failure.record.failed_step}': {failure.record.failure_reason}\n"
            f"  logs: {Path(args.runs_dir) / failure.record.id / 'pipeline.log'}"
        ) from None
    run_dir = Path(args.runs_dir) / record.id
    print(f"run {record.id} succeeded; best log-loss {record.best_logloss:.5f} ({record.best_target})")
    print(f"report: {(run_dir / 'report.html').resolve()}")
    return 0
