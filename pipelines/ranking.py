"""The one DAG: generate logs (synthetic source) → preprocess → train × (target × run) → report → promote.

Two pipelines come from it: the *benchmark* (every target × `runs_per_target` → report; promotes only with
`benchmark.promote`) and the *retraining* pipeline a schedule runs daily (`retraining.target` trained once, warm
from the champion with `training.warm_start: champion` → report on that run → promote).
`create_pipeline(config, backend, pipeline=...)` builds either for the local engine or for Vertex AI; the compiled
spec depends only on the config, the backend and the pipeline, never on the environment.
"""

import contextlib
import json
from dataclasses import dataclass
from typing import Literal

from kfp import dsl

from components.preprocess.beam_options import compiled_beam_args
from configs import AdrankConfig
from configs.report import ReportConfig, SkippedTarget
from configs.slices import PreprocessStepConfig, PromoteStepConfig, ReportStepConfig, TrainStepConfig
from configs.training import TargetConfig
from pipelines import placement, run_parameters
from pipelines.fan_in import run_label, training_run_items
from pipelines.placement import Backend
from pipelines.steps import (
    champion_step,
    export_step,
    generate_logs_step,
    join_experiment_step,
    model_version_step,
    preprocess_files_step,
    preprocess_step,
    promote_step,
    record_run_step,
    report_step,
    resolve_window_step,
    run_directory_step,
    train_step,
)

TRAIN_DISPLAY_NAME = "train"  # every target's training task; the engine adds the run's label (`cpu · run 1`)
EXPORT_DISPLAY_NAME = "export"  # a JAX target's export task (the serving model, written by TensorFlow)


def train_display_name(target: str, run_index: int) -> str:
    """How the local engine names a training run's task: `train · cpu · run 1`."""
    return f"{TRAIN_DISPLAY_NAME} · {run_label(target, run_index)}"


@dataclass(frozen=True)
class TargetSelection:
    """The targets a DAG trains (`runnable`) and those it leaves out, each with the reason (`skipped`)."""

    runnable: list[TargetConfig]
    skipped: list[SkippedTarget]


def targets_for(config: AdrankConfig, backend: Backend, local_devices: set[str] | None = None) -> TargetSelection:
    """Every target on Vertex. Locally: `cpu` targets and `cpu-ps` targets (the train step starts its own
    parameter-server cluster on 127.0.0.1), `gpu` targets when this machine has a GPU; `tpu` targets never
    (this machine has no TPU). A target that allows a CPU fallback runs on the CPU instead of being skipped.

    `local_devices` is the set of device kinds present ('CPU', 'GPU'); it is probed only when the
    config has a GPU target, so the CPU-only DAG never touches the accelerator stack at build time.
    """
    if backend == "vertex":
        return TargetSelection(list(config.targets), [])
    if local_devices is None:
        local_devices = local_device_kinds() if any(t.kind == "gpu" for t in config.targets) else {"CPU"}
    runnable, skipped = [], []
    for target in config.targets:
        reason = _local_skip_reason(target.kind, local_devices)
        if reason is None or target.allow_cpu_fallback:
            runnable.append(target)
        else:
            skipped.append(SkippedTarget(name=target.name, kind=target.kind, reason=reason))
    return TargetSelection(runnable, skipped)


def _local_skip_reason(kind: str, local_devices: set[str]) -> str | None:
    """Why a target of `kind` cannot train on the local backend of this machine; None when it can."""
    if kind == "tpu":
        return "the local backend has no TPU (its steps run on this machine); compile for Vertex to train it"
    if kind == "gpu" and "GPU" not in local_devices:
        return "this machine has no GPU"
    return None


def local_device_kinds() -> set[str]:
    import tensorflow as tf

    return {"CPU"} | ({"GPU"} if tf.config.list_physical_devices("GPU") else set())


PipelineKind = Literal["benchmark", "retraining"]


@dataclass(frozen=True)
class TrainingPlan:
    """What one pipeline trains: `runs` as (target, run index) in DAG order, over `targets`; `skipped` as in
    `TargetSelection`; `promote`: whether the promotion step follows the report."""

    targets: list[TargetConfig]
    runs: list[tuple[str, int]]
    skipped: list[SkippedTarget]
    promote: bool


def training_plan(config: AdrankConfig, backend: Backend, pipeline: PipelineKind = "benchmark",
                  local_devices: set[str] | None = None) -> TrainingPlan:
    """The benchmark trains every runnable target `runs_per_target` times and promotes only with
    `benchmark.promote`; the retraining pipeline trains `retraining.target` once (the seed of run
    `retraining.run_index`) and promotes (both: when `promotion.enabled`)."""
    if pipeline == "retraining":
        target = config.retraining_target()  # ConfigError naming retraining.target when the config has none
        selection = targets_for(config.model_copy(update={"targets": [target]}), backend, local_devices)
        if selection.skipped:
            (skipped,) = selection.skipped
            raise ValueError(f"retraining.target '{target.name}' ({target.kind}) cannot train on the {backend} "
                             f"backend: {skipped.reason}")
        return TrainingPlan([target], [(target.name, config.retraining.run_index)], [],
                            config.promotion.enabled)
    selection = targets_for(config, backend, local_devices)
    if not selection.runnable:
        raise ValueError(
            f"no target of config '{config.name}' can run on the {backend} backend: "
            + "; ".join(f"{s.name} ({s.kind}): {s.reason}" for s in selection.skipped)
        )
    runs = [(t.name, run_index) for t in selection.runnable for run_index in range(config.runs_per_target)]
    return TrainingPlan(selection.runnable, runs, selection.skipped,
                        config.promotion.enabled and config.benchmark.promote)


def create_pipeline(config: AdrankConfig, backend: Backend, local_devices: set[str] | None = None,
                    window_end: str = "", pipeline: PipelineKind = "benchmark"):
    """The `pipeline` ("benchmark" or "retraining") for `backend`: a `@dsl.pipeline` function whose parameters are
    the run's inputs, with this config's values as defaults.

    Locally its one input is `training_runs`, the list the training loop iterates over; `window_end` (RFC 3339) is
    compiled in: the run reads the `logs.lookback_days` before it, as a scheduled Vertex run reads the days before
    its scheduled time (`adrank retrain` steps it one day at a time). On Vertex the pipeline takes `window_end` as
    its first input instead ("" by default: the run's scheduled time, see `placement.scheduled_time_argument`),
    which `adrank submit` sets to the time it submits; its first step rounds what decides the window down to a UTC
    midnight (`add_window`), so a day's runs share their inputs. Its other inputs are the figures an Experiment row
    compares runs by (`pipelines.run_parameters`): recorded, read by no step.

    On Vertex every task gets the `retry` policy and, with `vertex.notify_emails`, the whole pipeline runs inside
    an exit handler that e-mails its final status (locally neither: a local run prints its failures itself)."""
    if window_end and backend == "vertex":
        raise ValueError("window_end is set by Vertex (the run's scheduled time) or by `adrank submit`; pass it "
                         "only locally")
    plan = training_plan(config, backend, pipeline, local_devices)
    description = (f"adrank {pipeline} pipeline ({backend} backend): "
                   + ("preprocess → train " + ", ".join(f"{t} run {k + 1}" for t, k in plan.runs)
                      + " → report" + (" → promote" if plan.promote else "")))
    runs = training_run_items(plan.runs)

    if backend != "vertex":
        @dsl.pipeline(name=config.name, description=description)
        def ranking(training_runs: list = runs) -> None:
            add_steps(config, backend, plan, pipeline, window_end, training_runs)

        return ranking

    recorded = run_parameters.run_parameters(config)

    @dsl.pipeline(name=config.name, description=description)
    def ranking_on_vertex(
        window_end: str = "",
        training_runs: list = runs,
        config_hash: str = str(recorded["config_hash"]),
        targets: str = str(recorded["targets"]),
        model: str = str(recorded["model"]),
        global_batch_size: int = int(recorded["global_batch_size"]),
        learning_rate: float = float(recorded["learning_rate"]),
        window_days: int = int(recorded["window_days"]),
        runs_per_target: int = int(recorded["runs_per_target"]),
    ) -> None:
        notify = placement.failure_notification(config)
        if notify is not None:
            placement.set_retries([notify], config.retry)
        with dsl.ExitHandler(notify, name="pipeline body") if notify is not None else contextlib.nullcontext():
            placement.set_retries(add_steps(config, backend, plan, pipeline, window_end, training_runs),
                                  config.retry)

    return ranking_on_vertex


def add_steps(config: AdrankConfig, backend: Backend, plan: TrainingPlan, pipeline: PipelineKind, window_end,
              training_runs) -> list[dsl.PipelineTask]:
    """Add every step of the DAG; returns the tasks (the vertex backend sets each one's retry policy).
    `window_end`: the pipeline's input on Vertex, the compiled-in string locally; `training_runs`: the pipeline
    input the training loop iterates over (pipelines.fan_in)."""
    preprocess_config_json = PreprocessStepConfig.of(config).to_parameter()  # compressed when wide
    component = _component_maker(config, backend)
    train_op, export_op = component(train_step), component(export_step)
    tasks = []
    join = add_experiment_join(config, backend, component)
    if join is not None:
        tasks.append(join)
    window = add_window(window_end, backend, component)
    preprocess_args = {
        "preprocess_config_json": preprocess_config_json,
        "window_end": window.outputs["window_end"] if window is not None else window_end,
        # the Beam/Dataflow options are compiled into the DAG where a reviewer can read them (vertex backend)
        "beam_args_json": json.dumps(compiled_beam_args(config)) if backend == "vertex" else "",
    }
    if window is None:
        preprocess_args["scheduled_time"] = placement.scheduled_time_argument(backend)
    else:
        tasks.append(window)
    preprocess_op = component(preprocess_step if config.logs.source == "synthetic" else preprocess_files_step)
    if config.logs.source == "synthetic":
        logs = component(generate_logs_step)(preprocess_config_json=preprocess_config_json)
        tasks.append(logs.set_display_name("generate logs"))
        preprocess = preprocess_op(logs=logs.outputs["logs"], **preprocess_args)
    else:
        preprocess = preprocess_op(**preprocess_args)
    preprocess.set_display_name("preprocess")
    placement.place_preprocess(preprocess, config, backend)
    tasks.append(preprocess)

    champion = add_champion(config, backend, component)
    warm_start = {"warm_start_from": champion.output} if champion is not None else {}
    tasks += [champion] if champion is not None else []

    with dsl.ParallelFor(training_runs, name="training runs") as run:
        directory = add_run_directory(config, window, run, component)
        if directory is not None:
            tasks.append(directory)
        output_directory = directory.output if directory is not None else None

        def train(target: TargetConfig) -> dsl.PipelineTask:
            return add_training(config, backend, (train_op, export_op), target, run, preprocess,
                                output_directory, warm_start, tasks)

        summary = _by_target(run.target, plan.targets, train)
        record = component(record_run_step)(target=run.target, run_index=run.run_index, summary=summary)
        tasks.append(record.set_display_name("record run"))

    report_config = ReportStepConfig.of(config, plan.skipped)
    if pipeline == "retraining":  # the report evaluates the one run; no other target to compare it with
        report_config = report_config.model_copy(update={"targets": plan.targets,
                                                         "report": ReportConfig(baseline_target=None)})
    report = component(report_step)(
        report_config_json=report_config.to_json(), examples=preprocess.outputs["examples"],
        runs=dsl.Collected(record.outputs["run"]),
    ).set_display_name("report")
    placement.place_report(report, backend)
    tasks.append(report)
    if plan.promote:
        tasks += add_promotion(report, preprocess.outputs["examples"], config, backend, component)
    return tasks


def add_training(config: AdrankConfig, backend: Backend, ops: tuple, target: TargetConfig, run, preprocess,
                 output_directory, warm_start: dict, tasks: list) -> dsl.PipelineTask:
    """`target`'s training task in the loop item `run` (appended to `tasks`); for a JAX target its export task
    after it (a TensorFlow step that writes the serving model from the trained weights), whose summary is the
    run's. `ops`: the train and export components. Returns the task whose `summary` output is the run's."""
    train_op, export_op = ops
    task = placement.training_component(train_op, target, config, backend, output_directory)(
        train_config_json=TrainStepConfig.of(config, target.name).to_parameter(),
        target=target.name,
        run_index=run.run_index,
        examples=preprocess.outputs["examples"],
        **warm_start,
    ).set_display_name(TRAIN_DISPLAY_NAME)
    tasks.append(task)
    if target.backend == "tensorflow":
        return task
    export = export_op(target=target.name, run_index=run.run_index, examples=preprocess.outputs["examples"],
                       trained=task.outputs["model"],
                       trained_summary=task.outputs["summary"]).set_display_name(EXPORT_DISPLAY_NAME)
    tasks.append(export)
    return export


def _component_maker(config: AdrankConfig, backend: Backend):
    """A function making each step's KFP component on the config's image for `backend`."""
    image = _base_image(config, backend)

    def component(function):
        return dsl.component(function, base_image=image, install_kfp_package=False)

    return component


def _by_target(target, targets: list[TargetConfig], train):
    """The summary of the training task of the loop item's `target`: one branch per target (`dsl.If`, `dsl.Elif`
    …, the last one `dsl.Else`, as `dsl.OneOf` requires), each with that target's own component (on Vertex its
    CustomJob machines); `dsl.OneOf` hands on the summary of the branch that ran. `train(target)` adds one
    target's training task. A single target needs no branch."""
    if len(targets) == 1:
        return train(targets[0]).outputs["summary"]
    summaries = []
    for position, candidate in enumerate(targets):
        name = f"target {candidate.name}"
        if position == 0:
            branch = dsl.If(target == candidate.name, name=name)
        elif position < len(targets) - 1:
            branch = dsl.Elif(target == candidate.name, name=name)
        else:
            branch = dsl.Else(name=name)
        with branch:
            summaries.append(train(candidate).outputs["summary"])
    return dsl.OneOf(*summaries)


def add_experiment_join(config: AdrankConfig, backend: Backend, component) -> dsl.PipelineTask | None:
    """On Vertex with `vertex.experiment`: a first step that puts the run into the Experiment, so scheduled runs
    join it too (Vertex creates them without one); None otherwise."""
    if backend != "vertex" or config.vertex is None or not config.vertex.experiment:
        return None
    task = component(join_experiment_step)(experiment=config.vertex.experiment,
                                           pipeline_job_name=dsl.PIPELINE_JOB_RESOURCE_NAME_PLACEHOLDER)
    task.set_display_name("join experiment")
    task.set_caching_options(False)  # each run joins for itself
    return task


def add_window(window_end, backend: Backend, component) -> dsl.PipelineTask | None:
    """On Vertex, the run's first step: its window end and day from its `window_end` parameter or its scheduled
    time (components.lineage.run_day), never cached (the time it falls back to changes); None locally, where the
    window end is compiled in (`adrank retrain` steps it a day at a time)."""
    if backend != "vertex":
        return None
    task = component(resolve_window_step)(window_end=window_end,
                                          scheduled_time=placement.scheduled_time_argument(backend))
    task.set_display_name("resolve window")
    task.set_caching_options(False)
    return task


def add_run_directory(config: AdrankConfig, window: dsl.PipelineTask | None, run,
                      component) -> dsl.PipelineTask | None:
    """On Vertex, in the training-runs loop: the run's CustomJob output directory, per target, run index and day
    (`placement.run_output_directory`: its own TensorBoard curves and checkpoints); None locally."""
    if window is None:
        return None
    vertex = placement.require_vertex(config)
    task = component(run_directory_step)(custom_jobs_dir=vertex.custom_job_output_directory, target=run.target,
                                         run_index=run.run_index, day=window.outputs["day"])
    task.set_display_name("run directory")
    return task


def add_champion(config: AdrankConfig, backend: Backend, component) -> dsl.PipelineTask | None:
    """The champion lookup before training when `training.warm_start: champion`, else None; `component` makes
    the KFP component."""
    if config.training.warm_start != "champion":
        return None
    champion_op = component(champion_step)
    task = champion_op(promote_config_json=PromoteStepConfig.of(config).to_json(), backend=backend)
    task.set_display_name("find champion")
    task.set_caching_options(False)  # the registry's default changes from one run to the next
    return task


def add_promotion(report: dsl.PipelineTask, examples, config: AdrankConfig, backend: Backend,
                  component) -> list[dsl.PipelineTask]:
    """Append the promotion step after `report` (and on Vertex the model version step after it); `component` makes
    the KFP component."""
    promote_op = component(promote_step)
    job = {"pipeline_job_name": dsl.PIPELINE_JOB_RESOURCE_NAME_PLACEHOLDER} if backend == "vertex" else {}
    task = promote_op(promote_config_json=PromoteStepConfig.of(config).to_json(), backend=backend,
                      summary_json=report.outputs["summary_json"], examples=examples, **job)
    task.set_display_name("promote model")
    task.set_caching_options(False)  # it reads and writes the registry: never reuse yesterday's decision
    placement.place_promotion(task, backend)
    if backend != "vertex":
        return [task]
    # the registered version as the run's google.VertexModel, labelled and aliased
    version = component(model_version_step)(
        promotion=task.outputs["promotion"], pipeline_job_name=dsl.PIPELINE_JOB_RESOURCE_NAME_PLACEHOLDER)
    version.set_display_name("model version")
    version.set_caching_options(False)
    return [task, version]


def _base_image(config: AdrankConfig, backend: Backend) -> str:
    if backend == "vertex" and config.vertex is not None:
        return config.vertex.images.cpu
    return "adrank-cpu:local"
