"""The registry steps around training: before it, the champion to warm-start from; after the report, promotion.

`champion_step` (only with `training.warm_start: champion`) finds the current default model in the registry.
`promote_step` scores the challenger (the report's best exported run) and the champion on this run's eval
examples, registers the challenger and applies the promotion rule (`components.registry.promotion`), locally into
`promotion.local_registry`, on Vertex into the Model Registry. Its decision record is an artifact, its figures a
Metrics artifact (a Vertex Experiment charts them across days) and its report section HTML and Markdown artifacts.
"""

from kfp import dsl
from kfp.dsl import HTML, Artifact, Dataset, Input, Markdown, Metrics, Output

from configs.slices import PromoteStepConfig


def promote_step(promote_config_json: str, backend: str, summary_json: Input[Artifact], examples: Input[Dataset],
                 promotion: Output[Artifact], promotion_metrics: Output[Metrics], promotion_html: Output[HTML],
                 promotion_markdown: Output[Markdown]):
    from components.registry.task import promote_best_run
    from components.report.promotion import promotion_html as render_html
    from components.report.promotion import promotion_markdown as render_markdown
    from configs.slices import PromoteStepConfig

    decision = promote_best_run(PromoteStepConfig.model_validate_json(promote_config_json), backend, summary_json.path,
                                examples.path)
    decision.write(promotion.path)
    promotion.metadata.update({"version": decision.version or "", "promoted": decision.promoted,
                               "reason": decision.reason})
    for name, value in decision.metrics().items():
        promotion_metrics.log_metric(name, value)
    with open(promotion_html.path, "w") as stream:
        stream.write("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
                     + render_html(decision) + "</body></html>\n")
    with open(promotion_markdown.path, "w") as stream:
        stream.write(render_markdown(decision))


def champion_step(promote_config_json: str, backend: str) -> str:
    """The current default model's directory ("" when the registry has none): what training warm-starts from."""
    from components.registry.champion import champion_model_dir
    from configs.slices import PromoteStepConfig

    return champion_model_dir(PromoteStepConfig.model_validate_json(promote_config_json), backend)


def add_champion(config, backend: str, component) -> dsl.PipelineTask | None:
    """The champion lookup before training when `training.warm_start: champion`, else None."""
    if config.training.warm_start != "champion":
        return None
    champion_op = component(champion_step)
    task = champion_op(promote_config_json=PromoteStepConfig.of(config).to_json(), backend=backend)
    task.set_display_name("find champion")
    task.set_caching_options(False)  # the registry's default changes from one run to the next
    return task


def add_promotion(report: dsl.PipelineTask, examples, config, backend: str, component) -> None:
    """Append the promotion step after `report` when `promotion.enabled`; `component` makes the KFP component."""
    if not config.promotion.enabled:
        return
    promote_op = component(promote_step)
    task = promote_op(promote_config_json=PromoteStepConfig.of(config).to_json(), backend=backend,
                      summary_json=report.outputs["summary_json"], examples=examples)
    task.set_display_name("promote model")
    task.set_caching_options(False)  # it reads and writes the registry: never reuse yesterday's decision
