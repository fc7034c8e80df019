"""`adrank`: the command line. Each subcommand lives in `ops.commands.<name>` and registers itself here.

The command modules import only argparse-level code at the top; what a command needs to do its work
(TensorFlow, Beam, KFP, aiplatform) is imported inside its handler, so `adrank --help` stays fast.

Logging: `-v` / `--quiet` before the command (or a command's own `--quiet`) set the console's level
(`ops.console_log`); what a command writes to stdout is its output (tables, JSON, paths), the rest are records."""

from __future__ import annotations

import argparse
import logging
import sys

from configs.errors import ConfigError
from foundation.log_lines import fields
from ops.commands import compile as compile_command
from ops.commands import images, logs, report, retrain, run, run_spec, runs, schedule, submit
from ops.console_log import console_level, console_logging
from ops.errors import CommandError

log = logging.getLogger(__name__)

COMMANDS = (logs, run, retrain, run_spec, compile_command, submit, schedule, runs, report, images)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="adrank",
        description="Train ad-ranking models on TPU, GPU and CPU through one Kubeflow pipeline.",
    )
    verbosity = parser.add_mutually_exclusive_group()
    verbosity.add_argument("-v", "--verbose", action="store_true",
                           help="debug records too, and other libraries' info records")
    verbosity.add_argument("--quiet", dest="quiet_all", action="store_true",
                           help="warnings and errors only, no progress (ADRANK_QUIET=1 does the same)")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.quiet_all and hasattr(args, "quiet"):
        args.quiet = True  # `adrank --quiet run` is `adrank run --quiet`
    level = console_level(args.verbose, args.quiet_all or bool(getattr(args, "quiet", False)))
    with console_logging(level):
        try:
            return int(args.handler(args) or 0)
        except (ConfigError, CommandError) as error:
            log.error(str(error), extra=fields(command=args.command))
            return 2
        except OSError as error:  # a path the user gave cannot be read or written (permissions, missing parent, ...)
            where = f": {error.filename}" if error.filename else ""
            log.error(f"{error.strerror or error}{where}", extra=fields(command=args.command))
            return 2


if __name__ == "__main__":
    sys.exit(main())
