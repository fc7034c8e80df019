"""`adrank run`: run the whole DAG on this machine (the compiled spec on ops.spec_executor, Beam DirectRunner, CPU)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ops.commands.options import add_config_arguments, add_quiet_argument, config_for_local_run, quiet_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("run", help="run the whole DAG locally (its compiled spec, on the local engine)")
    add_config_arguments(parser)
    parser.add_argument("--runs-dir", default="runs", metavar="DIR", help="where run directories go (default: runs)")
    parser.add_argument("--run-id", default=None, help="run directory name (default: <UTC time>-<config name>)")
    parser.add_argument(
        "--resume", default=None, metavar="RUN",
        help="run an interrupted or failed run again with its own config: finished steps whose outputs are intact "
        "are reused, an interrupted training run continues from its last checkpoint",
    )
    add_quiet_argument(parser)
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from configs.loader import embedded_config_path
    from ops.errors import CommandError
    from ops.local_run.directories import RunIdError
    from ops.local_run.run import LocalRunFailed, LocalRunInterrupted, run_locally

    if args.resume is not None:
        if args.config or args.overrides or args.run_id:
            raise CommandError("--resume runs the run again with its own config: drop --config, --set and --run-id")
        config, source = _config_of_run(Path(args.runs_dir), args.resume)
    else:
        config = config_for_local_run(args)
        source = args.config or str(embedded_config_path())
    try:
        record = run_locally(config, Path(args.runs_dir), source, args.resume or args.run_id,
                             resume=args.resume is not None, quiet=quiet_from_args(args))
    except LocalRunInterrupted as interruption:
        record = interruption.record
        step = f" during '{record.failed_step}'" if record.failed_step else ""
        print(f"adrank run: run {record.id} {record.failure_reason}{step}; its steps were stopped. "
              f"Continue it: adrank run --resume {record.id} --runs-dir {os.path.abspath(args.runs_dir)}", file=sys.stderr)
        return 130
    except RunIdError as error:
        raise CommandError(str(error)) from None
    except LocalRunFailed as failure:
        raise CommandError(failure.describe(Path(args.runs_dir))) from None
    run_dir = Path(args.runs_dir) / record.id
    print(f"run {record.id} succeeded; best log-loss {record.best_logloss:.5f} ({record.best_target})")
    print(f"report: {(run_dir / 'report.html').resolve()}")
    return 0


def _config_of_run(runs_dir: Path, run_id: str):
    """The config a run ran with (its `config.yaml`) and where it came from (its run record)."""
    from configs import load_config
    from ops.errors import CommandError
    from ops.local_run.directories import is_run_id
    from ops.local_run.record import RunRecord, RunRecordError

    run_dir = runs_dir / run_id
    if not is_run_id(run_id) or not (run_dir / "config.yaml").exists():
        raise CommandError(f"--resume {run_id!r}: no run '{run_id}' with a config.yaml under {runs_dir}")
    try:
        source = RunRecord.read(run_dir).config_source
    except RunRecordError as error:
        raise CommandError(f"run {run_id} cannot resume: {error}") from None
    return load_config(str(run_dir / "config.yaml")), source
