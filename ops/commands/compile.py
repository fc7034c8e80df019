"""`adrank compile`: write the pipeline spec (YAML) of the benchmark or the retraining pipeline for a backend,
and what one run of it is expected to cost on Vertex."""

from __future__ import annotations

import argparse
from pathlib import Path

from ops.commands.options import add_config_arguments, add_pipeline_argument, config_from_args


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("compile", help="compile the DAG into a KFP/Vertex pipeline spec")
    add_config_arguments(parser)
    add_pipeline_argument(parser, default="benchmark")
    parser.add_argument("--backend", choices=("local", "vertex"), default="vertex")
    parser.add_argument("--output", required=True, metavar="FILE.yaml")
    parser.add_argument("--allow-image-tags", action="store_true",
                        help="compile for Vertex although cached steps would run images by tag (no digest recorded "
                             "by `adrank images build`): a re-pushed tag would then reuse the old image's results")
    parser.set_defaults(handler=_compile)


def _compile(args: argparse.Namespace) -> int:
    from ops.errors import CommandError
    from ops.pipeline_compiler import compile_pipeline
    from pipelines.run_cost import estimate_run_cost

    config = config_from_args(args)
    try:
        if args.backend == "vertex":
            from ops.vertex.preflight import check_config

            check_config(config)  # what Vertex would refuse fails here, naming the field
        path = compile_pipeline(config, args.backend, Path(args.output), args.pipeline,
                                allow_image_tags=args.allow_image_tags)
    except ValueError as error:  # a config that validates but cannot become this backend's DAG
        raise CommandError(str(error)) from None
    print(f"compiled the {args.pipeline} pipeline of {config.name} ({args.backend}): {path}")
    if args.backend == "vertex":
        print("\n".join(estimate_run_cost(config, args.pipeline).describe()))
    return 0
