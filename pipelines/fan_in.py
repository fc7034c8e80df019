"""Fan-in without `dsl.Collected`: a report component with one input per upstream training task.

`dsl.Collected` does not run under `kfp.local` on this kfp, so the DAG is fanned out with a static
Python loop and fanned in by a component whose signature has one `Input[Artifact]` per training run
(and one `Output[Metrics]` per target). The signature depends on the config, so its source is written
out and imported: KFP reads a lightweight component's source with `inspect.getsource`, which needs a
real file. The generated body only unpacks its arguments and calls `components.report.task.write_report`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import tempfile
from pathlib import Path
from typing import Callable

_HEADER = (
    "from kfp.dsl import HTML, Artifact, ClassificationMetrics, Dataset, Input, Markdown, Metrics, Output\n\n\n"
)


def summary_input_name(index: int) -> str:
    return f"run_{index:03d}"


def target_metrics_name(target: str) -> str:
    return "metrics_" + target.replace("-", "_")


def report_function(runs: int, targets: list[str]) -> Callable:
    """The report step's Python function for `runs` training runs and the given targets."""
    summaries = [summary_input_name(i) for i in range(runs)]
    per_target = [target_metrics_name(t) for t in targets]
    parameters = (
        ["config_json: str", "examples: Input[Dataset]"]
        + [f"{name}: Input[Artifact]" for name in summaries]
        + ["report_html: Output[HTML]", "report_markdown: Output[Markdown]",
           "summary_json: Output[Artifact]", "metrics: Output[Metrics]",
           "best_roc: Output[ClassificationMetrics]"]
        + [f"{name}: Output[Metrics]" for name in per_target]
    )
    target_pairs = ", ".join(f"({t!r}, {n})" for t, n in zip(targets, per_target))
    source = (
        _HEADER
        + "def report(\n" + "".join(f"    {p},\n" for p in parameters) + "):\n"
        + "    from components.report.task import write_report\n"
        + "    from configs import config_from_json\n\n"
        + "    write_report(\n"
        + "        config_from_json(config_json),\n"
        + "        examples.path,\n"
        + f"        [{', '.join(s + '.path' for s in summaries)}],\n"
        + "        report_html=report_html,\n"
        + "        report_markdown=report_markdown,\n"
        + "        summary_json=summary_json,\n"
        + "        metrics=metrics,\n"
        + "        best_roc=best_roc,\n"
        + f"        target_metrics=dict([{target_pairs}]),\n"
        + "    )\n"
    )
    return _import_function(source, "report")


def _import_function(source: str, name: str) -> Callable:
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    directory = Path(tempfile.gettempdir()) / "adrank-generated-components"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}_{digest}.py"
    if not path.exists() or path.read_text() != source:
        path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"adrank_generated_{name}_{digest}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)
