"""`adrank`: the command line. Each subcommand lives in `ops.commands.<name>` and registers itself here.

The command modules import only argparse-level code at the top; what a command needs to do its work
(TensorFlow, Beam, KFP, aiplatform) is imported inside its handler, so `adrank --help` stays fast."""

from __future__ import annotations

import argparse
import sys

from configs.errors import ConfigError
from ops.commands import compile as compile_command
from ops.commands import images, logs, report, retrain, run, run_spec, runs, schedule, submit
from ops.errors import CommandError

COMMANDS = (logs, run, retrain, run_spec, compile_command, submit, schedule, runs, report, images)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="adrank",
        description="Train ad-ranking models on TPU, GPU and CPU through one Kubeflow pipeline.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except (ConfigError, CommandError) as error:
        print(f"adrank {args.command}: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # a path the user gave cannot be read or written (permissions, missing parent, ...)
        where = f": {error.filename}" if error.filename else ""
        print(f"adrank {args.command}: error: {error.strerror or error}{where}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
