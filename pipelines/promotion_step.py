"""The step after the report: register the best run's model and promote it if it is good enough.

Locally it promotes into `promotion.local_registry`; on Vertex into the Model Registry. The rule
(see `components.registry.promotion`) is the same.
"""

from kfp import dsl
from kfp.dsl import Artifact, Input, Output

from configs.slices import PromoteStepConfig


def promote_step(promote_config_json: str, backend: str, summary_json: Input[Artifact], promotion: Output[Artifact]):
    from components.registry.task import promote_best_run
    from configs.slices import PromoteStepConfig

    decision = promote_best_run(PromoteStepConfig.model_validate_json(promote_config_json), backend, summary_json.path)
    decision.write(promotion.path)
    promotion.metadata.update({"version": decision.version, "is_default": decision.is_default,
                               "logloss": decision.logloss, "reason": decision.reason})


def add_promotion(report: dsl.PipelineTask, config, backend: str, component) -> None:
    """Append the promotion step after `report` when `promotion.enabled`; `component` makes the KFP component."""
    if not config.promotion.enabled:
        return
    promote_op = component(promote_step)
    promote_op(promote_config_json=PromoteStepConfig.of(config).to_json(), backend=backend,
               summary_json=report.outputs["summary_json"]) \
        .set_display_name("promote model")
