"""Options shared by the commands: `--config FILE` and repeatable `--set key=value` for every command that takes a
config; the hidden `--api-endpoint` for the ones that talk to Vertex AI."""

from __future__ import annotations

import argparse
from pathlib import Path

from configs import AdrankConfig, load_config, with_overrides


def add_config_arguments(parser: argparse.ArgumentParser, required: bool = False) -> None:
    parser.add_argument(
        "--config", required=required, metavar="FILE",
        help="YAML config (default: the embedded configs/local.yaml)" if not required else "YAML config",
    )
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
        help="override a config value, e.g. --set training.epochs=1 or --set targets.0.global_batch_size=1024",
    )


def add_pipeline_argument(parser: argparse.ArgumentParser, default: str) -> None:
    """`--pipeline benchmark|retraining`: which of the two pipelines of the one DAG definition."""
    parser.add_argument(
        "--pipeline", choices=("benchmark", "retraining"), default=default,
        help="benchmark: every target × runs_per_target → report; retraining: retraining.target trained once → "
        f"report → promote (default: {default})",
    )


def add_quiet_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quiet", action="store_true",
        help="no progress (steps starting and ending, their progress, still-running notes), e.g. for CI: the log "
        "level WARNING, so warnings, errors and the final summary still show. Same as `adrank --quiet`; "
        "ADRANK_QUIET=1 does the same",
    )


def quiet_from_args(args: argparse.Namespace) -> bool | None:
    """True with --quiet (the command's or `adrank --quiet`); None leaves it to `ADRANK_QUIET`."""
    return True if args.quiet else None


def add_endpoint_argument(parser: argparse.ArgumentParser) -> None:
    """The hidden `--api-endpoint URL`: point the Vertex client at another server (the tests' local double)."""
    parser.add_argument("--api-endpoint", default=None, help=argparse.SUPPRESS)


def config_from_args(args: argparse.Namespace) -> AdrankConfig:
    return load_config(args.config, args.overrides)


def config_for_local_run(args: argparse.Namespace, default_runs_dir: str = "runs") -> AdrankConfig:
    """The config of `adrank run`, loaded once: with a `--runs-dir` other than the default, a registry left at its
    default moves to `<runs dir>/registry` (`PromotionConfig.registry_overrides`), so runs and their registry stay
    together."""
    config = config_from_args(args)
    runs_dir = Path(args.runs_dir)
    if runs_dir == Path(default_runs_dir):
        return config
    return with_overrides(config, config.promotion.registry_overrides(runs_dir / "registry"), args.config or "--set")
