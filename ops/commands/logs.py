"""`adrank logs generate`: write synthetic impression and engagement logs."""

from __future__ import annotations

import argparse

from ops.commands.options import add_config_arguments, config_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("logs", help="work with ad-engagement logs")
    actions = parser.add_subparsers(dest="logs_command", required=True, metavar="ACTION")
    generate = actions.add_parser("generate", help="write synthetic impression and engagement-event logs")
    add_config_arguments(generate)
    generate.add_argument("--output", required=True, metavar="DIR", help="directory to write the logs into")
    generate.set_defaults(handler=_generate)


def _generate(args: argparse.Namespace) -> int:
    from components.logs.synthetic import generate_logs
    from configs.slices import PreprocessStepConfig

    logs = generate_logs(PreprocessStepConfig.of(config_from_args(args)), args.output)
    print(f"impressions: {logs.impressions} ({logs.impressions_glob})")
    print(f"engagement events: {logs.engagements} ({logs.engagements_glob})")
    if logs.malformed_lines:
        print(f"malformed lines injected: {logs.malformed_lines}")
    print(f"ground truth: {logs.directory / 'ground_truth.json'}")
    return 0
