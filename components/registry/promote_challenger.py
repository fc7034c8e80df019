"""The promotion step's plain function: score the challenger and the champion on today's eval examples, register
the challenger, and apply the promotion rule (`components.registry.promotion_rule`). On Vertex a day already
decided is not decided again (`components.registry.vertex`)."""

from __future__ import annotations

import logging

from components.contracts.manifest import Manifest
from components.contracts.promotion_decision import PromotionDecision
from components.lineage.run_day import day_stamp, window_day
from components.progress import progress
from components.registry.local import LocalModelRegistry
from components.registry.promotion_rule import Candidate, Verdict, judge, read_candidate, relative, rule_in_words
from components.registry.scoring import (
    ChallengerUnscorable,
    EvalSplit,
    LabelCounts,
    ModelUnscorable,
    ServingModel,
    mean_logloss,
    paired_logloss,
)
from configs.promotion import PromotionConfig
from configs.slices import PromoteStepConfig
from foundation import gcs_mount

logger = logging.getLogger(__name__)


class SameDayJudge:
    """Judges a champion model directory against the challenger, both scored on the same raw eval examples,
    streamed (`components.registry.scoring`). After a call, `challenger_logloss` is the challenger's figure on
    those examples (measured in the same pass as the champion's when there is one). `positives`: the eval
    positives of the primary task, which the rule weighs (`promotion.min_eval_positives`)."""

    def __init__(self, split: EvalSplit, challenger_model_dir: str, promotion: PromotionConfig, positives: int):
        self.split = split
        self.promotion = promotion
        self.positives = positives
        try:
            self.challenger = ServingModel(challenger_model_dir)
        except ModelUnscorable as error:  # the model this run exported: a failure of the run, not of the champion
            raise RuntimeError(f"the challenger cannot be scored: {error}") from error
        self._challenger_logloss: float | None = None

    @property
    def challenger_logloss(self) -> float:
        if self._challenger_logloss is None:
            self._challenger_logloss = self._alone()
        return self._challenger_logloss

    def _alone(self) -> float:
        try:
            return mean_logloss(self.split, self.challenger)
        except ModelUnscorable as error:
            raise RuntimeError(f"the challenger cannot be scored: {error}") from error

    def __call__(self, champion_model_dir: str | None) -> Verdict:
        if champion_model_dir is None:
            self._challenger_logloss = self._alone()
            return judge(None, None, self.promotion)
        try:
            comparison = paired_logloss(self.split, self.challenger, ServingModel(champion_model_dir),
                                        self.promotion.bootstrap_resamples)
        except ChallengerUnscorable as error:
            raise RuntimeError(f"the challenger cannot be scored: {error}") from error
        except ModelUnscorable as error:
            self._challenger_logloss = self._alone()
            return judge(None, str(error), self.promotion)
        self._challenger_logloss = comparison.challenger_logloss
        return judge(comparison, None, self.promotion, self.positives, self.split.task)


def decision_record(model: str, version: str | None, verdict: Verdict, candidate: Candidate, counts: LabelCounts,
                    task: str, champion_version: str | None, promotion: PromotionConfig,
                    challenger_logloss: float | None, day: str | None = None,
                    model_resource_name: str | None = None, decided_by: str | None = None) -> PromotionDecision:
    """The record of one decision, with the tolerance, the difference and its interval in nats and relative to
    the champion's log-loss on the same examples, and the eval positives of every task."""
    comparison = verdict.comparison
    champion_logloss = comparison.champion_logloss if comparison else None
    tolerance_relative = promotion.logloss_tolerance_relative
    relative_difference, relative_ci95 = None, None
    if comparison is not None and champion_logloss is not None:
        if promotion.tolerance_form == "absolute" and verdict.tolerance is not None:
            tolerance_relative = relative(verdict.tolerance, champion_logloss)
        relative_difference = relative(comparison.difference, champion_logloss)
        low, high = (relative(bound, champion_logloss) for bound in comparison.difference_ci95)
        relative_ci95 = (low, high) if low is not None and high is not None else None
    return PromotionDecision(
        model=model, version=version, registered=version is not None, promoted=verdict.promoted,
        reason=verdict.reason, rule=rule_in_words(promotion), tolerance=verdict.tolerance,
        tolerance_relative=tolerance_relative, tolerance_form=promotion.tolerance_form,
        challenger_target=candidate.target, challenger_run_index=candidate.run_index,
        challenger_model_uri=candidate.model_uri, challenger_logloss=challenger_logloss,
        champion_version=champion_version, champion_status=verdict.champion_status,
        champion_logloss=champion_logloss,
        difference=comparison.difference if comparison else None,
        difference_ci95=comparison.difference_ci95 if comparison else None,
        relative_difference=relative_difference, relative_difference_ci95=relative_ci95,
        eval_examples=counts.examples, eval_positives=counts.positives, primary_task=task,
        eval_positives_by_task=counts.positives_by_task or {task: counts.positives},
        min_eval_positives=promotion.min_eval_positives,
        interval_method=getattr(comparison, "interval_method", None) or None,
        eval_examples_cap=promotion.max_eval_examples, day=day, model_resource_name=model_resource_name,
        decided_by=decided_by or None,
    )


def one_class_reason(counts: LabelCounts, task: str) -> str | None:
    if counts.examples and 0 < counts.positives < counts.examples:
        return None
    kind = "no positives" if counts.positives == 0 else "no negatives"
    return (f"the eval split has {kind} for task '{task}' ({counts.examples:,} examples): its log-loss says "
            "nothing about ranking, so the model is not registered")


def warn_if_unscorable(decision: PromotionDecision) -> None:
    """A champion that could not be scored is said loudly: a WARNING record, which `adrank run` shows also when
    quiet."""
    if decision.champion_status != "unscorable":
        return
    message = f"model {decision.model}, champion version {decision.champion_version or '?'}: {decision.reason}"
    logger.warning(message)


def run_day(manifest: Manifest) -> str | None:
    """The last day of the window the run read (YYYY-MM-DD), from the examples' manifest; None for a run that read
    every day (no window)."""
    return window_day(manifest.window.end).isoformat() if manifest.window is not None else None


def log_decision(decision: PromotionDecision) -> None:
    """The decision on the console (a progress record: the step's log on Vertex), with the evidence it rests on."""
    positives = ", ".join(f"{task} {count:,}" for task, count in decision.eval_positives_by_task.items())
    outcome = "promoted" if decision.promoted else "not promoted"
    if decision.reused:
        outcome += f" (decided earlier for day {decision.day})"
    logger.info(f"promotion: {outcome}, version {decision.version or '— (none registered)'}; eval positives: "
                f"{positives}; {decision.reason}",
                extra=progress(promoted=decision.promoted, version=decision.version, day=decision.day))
    if decision.interval_method:
        logger.info(f"promotion interval: {decision.interval_method}", extra=progress())


def promote_best_run(config: PromoteStepConfig, backend: str, summary_json: str,
                     examples_dir: str, pipeline_job_name: str = "") -> PromotionDecision:
    """`config`: the promotion step's slice of the config (name, the whole config's hash, promotion, vertex).
    `examples_dir`: the preprocess output whose raw eval examples both models are scored on.
    `pipeline_job_name`: the Vertex job running the step (recorded as who decided the day)."""
    decision = _decide(config, backend, summary_json, examples_dir, pipeline_job_name)
    warn_if_unscorable(decision)
    log_decision(decision)
    return decision


def _decide(config: PromoteStepConfig, backend: str, summary_json: str, examples_dir: str,
            pipeline_job_name: str) -> PromotionDecision:
    candidate = read_candidate(summary_json)
    promotion = config.promotion
    split = EvalSplit.locate(examples_dir, candidate.primary_task, promotion.scoring_batch_size,
                             promotion.max_eval_examples)
    manifest = Manifest.read(examples_dir)
    counts = split.label_counts(manifest.tasks)
    task = candidate.primary_task
    day = run_day(manifest)
    model = config.name
    resource_name = None
    job = pipeline_job_name.rsplit("/", 1)[-1] if pipeline_job_name else None
    if backend == "vertex":
        from components.registry.vertex import model_display_name, model_resource_name

        model, resource_name = model_display_name(config), model_resource_name(config)
    refused = one_class_reason(counts, task)
    if refused is not None:
        verdict = Verdict(False, refused, "none")
        return decision_record(model, None, verdict, candidate, counts, task, None, promotion, None, day,
                               resource_name, job)
    same_day = SameDayJudge(split, gcs_mount.container_path(candidate.model_uri), promotion, counts.positives)

    def record(version: str, verdict: Verdict, champion_version: str | None) -> PromotionDecision:
        return decision_record(model, version, verdict, candidate, counts, task, champion_version, promotion,
                               same_day.challenger_logloss, day, resource_name, job)

    if backend == "vertex":
        from components.registry.vertex import JOB_LABEL, register_for_day

        labels = {"adrank-pipeline": config.name, "adrank-config": config.config_hash,
                  "adrank-target": candidate.target}
        if job:
            labels[JOB_LABEL] = job[:63].rstrip("-")
        return register_for_day(config, candidate, labels, same_day, day_stamp(day) if day else None, record)
    registry = LocalModelRegistry(promotion.local_registry)
    version, verdict, champion_version = registry.register(
        model, candidate, same_day, lambda *args: record(*args).model_dump(mode="json"))
    return record(version, verdict, champion_version)
