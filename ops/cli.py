"""`adrank`: the command line. Each subcommand lives in `ops.commands.<name>` and registers itself here.

`CommandError` is re-exported for callers that import it from here."""

from __future__ import annotations

import argparse
import importlib
import sys

from configs.errors import ConfigError
from ops.errors import CommandError

COMMANDS = ("logs", "run", "retrain", "run_spec", "compile", "submit", "schedule", "runs", "report", "images")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="adrank",
        description="Train ad-ranking models on TPU, GPU and CPU through one Kubeflow pipeline.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"ops.commands.{name}")
        except ModuleNotFoundError as error:
            if error.name == f"ops.commands.{name}":
                continue  # command not built yet
            raise
        module.register(subparsers)
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
