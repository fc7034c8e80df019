"""The hidden `--api-endpoint` option: point the Vertex client at another server (the tests' local one)."""

from __future__ import annotations

import argparse


def add_endpoint_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--api-endpoint", default=None, help=argparse.SUPPRESS)
