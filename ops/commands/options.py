"""Options shared by every command that takes a config: `--config FILE` and repeatable `--set key=value`."""

from __future__ import annotations

import argparse

from configs import AdrankConfig, load_config


def add_config_arguments(parser: argparse.ArgumentParser, required: bool = False) -> None:
    parser.add_argument(
        "--config", required=required, metavar="FILE",
        help="YAML config (default: the embedded configs/local.yaml)" if not required else "YAML config",
    )
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
        help="override a config value, e.g. --set training.epochs=1 or --set targets.0.global_batch_size=1024",
    )


def config_from_args(args: argparse.Namespace) -> AdrankConfig:
    return load_config(args.config, args.overrides)
