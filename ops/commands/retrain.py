"""`adrank retrain`: replay daily retraining for N days locally (window end stepping one day at a time)."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from pathlib import Path

from ops.commands.options import add_config_arguments, add_quiet_argument, quiet_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "retrain", help="replay daily retraining for N days (train, compare with the champion on the same day, "
        "promote) and write a day-series report",
    )
    add_config_arguments(parser)
    parser.add_argument("--days", type=int, default=None, metavar="N", help="days to replay (required unless --resume)")
    parser.add_argument("--first-day", type=_date, default=None, metavar="YYYY-MM-DD",
                        help="the first day's window end (default for synthetic logs: logs.lookback_days after "
                        "logs.synthetic.start_date; required for your own logs)")
    parser.add_argument("--runs-dir", default="runs", metavar="DIR", help="where run directories go (default: runs)")
    parser.add_argument("--replay-id", default=None, help="replay directory name (default: <UTC time>-<config>-replay)")
    parser.add_argument(
        "--resume", default=None, metavar="REPLAY",
        help="continue an interrupted replay with its own config and days: finished days are kept, the first "
        "unfinished day resumes its run (same window), the rest run",
    )
    add_quiet_argument(parser)
    parser.set_defaults(handler=_retrain)


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date YYYY-MM-DD") from None


def _retrain(args: argparse.Namespace) -> int:
    from configs import load_config
    from configs.loader import embedded_config_path
    from ops.errors import CommandError
    from ops.local_run.directories import RunIdError, is_run_id
    from ops.local_run.replay import ReplayError, create_replay_dir, plan_replay, replay, saved_plan
    from ops.local_run.run import LocalRunFailed, LocalRunInterrupted

    if args.replay_id is not None and not is_run_id(args.replay_id):
        raise CommandError(f"--replay-id {args.replay_id!r}: use letters, digits, '_', '-' and '.'")
    runs_dir = Path(args.runs_dir)
    if args.resume is not None:
        given = [option for option, value in (("--config", args.config), ("--set", args.overrides),
                                              ("--days", args.days), ("--first-day", args.first_day),
                                              ("--replay-id", args.replay_id)) if value]
        if given:
            raise CommandError(f"--resume continues the replay with its own config and days: drop {', '.join(given)}")
        if not is_run_id(args.resume):
            raise CommandError(f"--resume {args.resume!r}: a replay id is a directory name under the runs directory")
    elif args.days is None:
        raise CommandError("--days: how many days to replay (or --resume REPLAY to continue one)")
    try:
        if args.resume is not None:
            plan, series_dir, source = saved_plan(runs_dir, args.resume)
            print(f"replay {series_dir.name}: resuming, {len(plan.window_ends)} days, registry "
                  f"{plan.config.promotion.local_registry}")
        else:
            config = load_config(args.config, args.overrides)
            series_dir = create_replay_dir(runs_dir, args.replay_id, config.name)
            try:
                plan = plan_replay(config, args.days, args.first_day, series_dir / "registry")
            except BaseException:
                series_dir.rmdir()
                raise
            if plan.note:
                print(plan.note)
            print(f"replay {series_dir.name}: {args.days} days, registry {plan.config.promotion.local_registry}")
            source = args.config or str(embedded_config_path())
        series = replay(plan, series_dir, runs_dir, source, quiet=quiet_from_args(args),
                        resume=args.resume is not None)
    except (ReplayError, RunIdError) as error:
        raise CommandError(str(error)) from None
    except LocalRunFailed as failure:
        raise CommandError(f"replay stopped: {failure.describe(runs_dir)}\n  continue it (after a fix): adrank retrain "
                           f"--resume {series_dir.name} --runs-dir {os.path.abspath(runs_dir)}") from None
    except LocalRunInterrupted as interruption:
        print(f"adrank retrain: replay stopped: run {interruption.record.id} {interruption.record.failure_reason}; "
              f"the days before it are kept. Continue it: adrank retrain --resume {series_dir.name} --runs-dir "
              f"{os.path.abspath(runs_dir)}", file=sys.stderr)
        return 130
    promoted = sum(day.decision.promoted for day in series.days)
    print(f"replay {series_dir.name} done: {len(series.days)} days, {promoted} promoted")
    print(f"report: {(series_dir / 'replay.html').resolve()}")
    return 0
