"""`adrank report RUN`: the path of a local run's HTML report (or open it in a browser)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help="path of a run's HTML report, or --open it")
    parser.add_argument("run", nargs="?", default="latest", help="run id, unique prefix, or 'latest' (default)")
    parser.add_argument("--runs-dir", default="runs", metavar="DIR")
    parser.add_argument("--open", action="store_true", help="open the report in the default browser")
    parser.add_argument("--markdown", action="store_true", help="print the Markdown summary instead")
    parser.set_defaults(handler=_report)


def _report(args: argparse.Namespace) -> int:
    from ops.commands.runs import find_local_run
    from ops.errors import CommandError

    run_dir = find_local_run(args.runs_dir, args.run)
    html = (run_dir / "report.html").resolve()
    if not html.exists():
        raise CommandError(f"run {run_dir.name} has no report (status: see `adrank runs show {run_dir.name}`)")
    if args.markdown:
        print((run_dir / "report.md").read_text())
        return 0
    if args.open:
        import webbrowser

        webbrowser.open(html.as_uri())
    print(html)
    return 0
