"""Fan-in without `dsl.Collected`: a report component with one input per upstream training task.

`dsl.Collected` does not run under `kfp.local` on this kfp, so the DAG is fanned out with a static
Python loop and fanned in by a component whose signature has one `Input[Artifact]` per training run,
named after its target and run (`summary_cpu_run_1`), and one `Output[Metrics]` per target
(`metrics_cpu`). The signature depends on the config, so `report_component_source` writes it as text:
deterministic (same targets and runs → same source), reviewable in the compiled spec, where KFP embeds
it verbatim, and the same for kfp.local and Vertex. It is compiled in memory and registered with
`linecache` under a pseudo file name (KFP reads a lightweight component's source with
`inspect.getsource`); nothing is written to disk. The body only calls `components.report.task.write_report`.
"""

from __future__ import annotations

import hashlib
import linecache
from typing import Callable

_HEADER = (
    "from kfp.dsl import HTML, Artifact, ClassificationMetrics, Dataset, Input, Markdown, Metrics, Output\n\n\n"
)


def _identifier(target: str) -> str:
    return target.replace("-", "_")  # target names are [a-z][a-z0-9-]*, so this is one-to-one


def summary_input_name(target: str, run_index: int) -> str:
    """The report input fed by `train · <target> · run <run_index + 1>`."""
    return f"summary_{_identifier(target)}_run_{run_index + 1}"


def target_metrics_name(target: str) -> str:
    return f"metrics_{_identifier(target)}"


def report_component_source(runs: list[tuple[str, int]], targets: list[str]) -> str:
    """The report step's source for the training runs `(target, run_index)`, in DAG order."""
    summaries = [summary_input_name(target, run_index) for target, run_index in runs]
    if len(set(summaries)) != len(summaries):
        raise ValueError(f"two training runs map to one report input: {summaries}")
    per_target = [target_metrics_name(t) for t in targets]
    parameters = (
        ["report_config_json: str", "examples: Input[Dataset]"]
        + [f"{name}: Input[Artifact]" for name in summaries]
        + ["report_html: Output[HTML]", "report_markdown: Output[Markdown]",
           "summary_json: Output[Artifact]", "metrics: Output[Metrics]",
           "best_roc: Output[ClassificationMetrics]"]
        + [f"{name}: Output[Metrics]" for name in per_target]
    )
    target_pairs = ", ".join(f"({t!r}, {n})" for t, n in zip(targets, per_target))
    return (
        _HEADER
        + "def report(\n" + "".join(f"    {p},\n" for p in parameters) + "):\n"
        + "    from components.report.task import write_report\n"
        + "    from configs.slices import ReportStepConfig\n\n"
        + "    write_report(\n"
        + "        ReportStepConfig.model_validate_json(report_config_json),\n"
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


def report_function(runs: list[tuple[str, int]], targets: list[str]) -> Callable:
    """The report step's Python function (see `report_component_source`)."""
    return _define_function(report_component_source(runs, targets), "report")


def _define_function(source: str, name: str) -> Callable:
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    filename = f"<adrank generated component {name} {digest}>"
    # mtime None: linecache.checkcache keeps the entry (there is no file to compare with)
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    namespace: dict = {"__name__": f"adrank_generated_{name}_{digest}"}
    # dont_inherit: not this module's `from __future__ import annotations`; KFP needs real annotation types
    code = compile(source, filename, "exec", dont_inherit=True)
    exec(code, namespace)  # noqa: S102 - source built above from target names the config schema restricts
    return namespace[name]
