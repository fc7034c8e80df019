"""The Experiment row the Vertex SDK builds for a submitted run: distinct keys per target, run and task, and the run's
parameters. The run is submitted through `adrank submit` to the double (the SDK joins it to the experiment); its
Metadata (the `system.Run` execution, the `system.Metrics` artifacts) is what the compiled spec's inputs and the
steps' own logging code produce; the row is `aiplatform.Experiment(...).get_data_frame()`, the SDK's public call."""

from __future__ import annotations

import re
from pathlib import Path
from unittest import mock

import pytest
from kfp.dsl import Metrics

from components.evaluate.experiment_keys import training_figures
from components.report.write_report import write_report
from configs import config_hash, load_config
from ops.cli import main
from ops.vertex.api_calls import Backoff
from pipelines.fan_in import training_run_items
from pipelines.run_parameters import run_parameters
from tests.components.report.test_report import FakeArtifact, manifest, run
from tests.components.report.test_report import config as report_config
from tests.conftest import vertex_fake
from tests.ops.conftest import VERTEX_CONFIG

PIPELINE_PARAM_PREFIX = "input:"  # how Vertex records a run's pipeline inputs on its system.Run execution


class RunMetadataVertex(vertex_fake.FakeVertex):
    """The double, plus the Metadata a finished run leaves: executions and artifacts in the run's context, and
    context lists filtered by parent (the filters `Experiment.get_data_frame` sends)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.executions: dict[str, list[dict]] = {}  # run context → its executions
        self.artifacts: dict[str, list[dict]] = {}  # run context → its artifacts

    def _routes(self):
        loc = r"projects/([^/]+)/locations/([^/]+)"
        return super()._routes() + [
            ("GET", loc + r"/metadataStores/([^/:]+)/executions", self._list_executions, None),
            ("GET", loc + r"/metadataStores/([^/:]+)/artifacts", self._list_artifacts, None),
        ]

    def _list_contexts(self, project, region, store, query, body):
        text = (query.get("filter") or [""])[0]
        parents = re.findall(r'parent_contexts:"([^"]+)"', text)
        schemas = re.findall(r'schema_title="([^"]+)"', text)
        contexts = [c for c in self.contexts.values()
                    if (not parents or c["name"] in self.context_children.get(parents[0], []))
                    and (not schemas or c["schemaTitle"] in schemas)]
        return 200, {"contexts": contexts}

    def _in_context(self, store: dict[str, list[dict]], query) -> list[dict]:
        text = (query.get("filter") or [""])[0]
        (context,) = re.findall(r'in_context\("([^"]+)"\)', text) or [""]
        schemas = re.findall(r'schema_title="([^"]+)"', text)
        return [node for node in store.get(context, []) if not schemas or node["schemaTitle"] in schemas]

    def _list_executions(self, project, region, store, query, body):
        return 200, {"executions": self._in_context(self.executions, query)}

    def _list_artifacts(self, project, region, store, query, body):
        return 200, {"artifacts": self._in_context(self.artifacts, query)}

    def finish_run(self, job_id: str, metrics_by_task: dict[str, dict[str, float]]) -> None:
        """What Vertex records for a finished run: its inputs (spec defaults, then the submitted values) on the
        system.Run execution, and each task's Metrics artifact in the run's context."""
        job = self.pipeline_jobs[job_id]
        context = job["jobDetail"]["pipelineRunContext"]["name"]
        defaults = {name: spec["defaultValue"] for name, spec in
                    job["pipelineSpec"]["root"].get("inputDefinitions", {}).get("parameters", {}).items()}
        inputs = {**defaults, **job.get("runtimeConfig", {}).get("parameterValues", {})}
        self.executions[context] = [{
            "name": f"{context.rsplit('/contexts/', 1)[0]}/executions/{job_id}", "displayName": job_id,
            "schemaTitle": "system.Run", "state": "COMPLETE",
            "metadata": {PIPELINE_PARAM_PREFIX + name: value for name, value in inputs.items()}}]
        self.artifacts[context] = [{
            "name": f"{context.rsplit('/contexts/', 1)[0]}/artifacts/{job_id}-{index}", "displayName": "metrics",
            "schemaTitle": "system.Metrics", "uri": f"gs://bucket/{task}/metrics", "metadata": metrics}
            for index, (task, metrics) in enumerate(metrics_by_task.items())]


@pytest.fixture
def run_metadata_vertex():
    fake = RunMetadataVertex(project="adrank-prod", region="us-central1")
    with vertex_fake.FakeVertexServer(fake) as endpoint, mock.patch(
        "google.cloud.aiplatform.utils.gcs_utils.create_gcs_bucket_for_pipeline_artifacts_if_it_does_not_exist"
    ), mock.patch("ops.vertex.api_calls.BACKOFF", Backoff(initial_seconds=0.001, maximum_seconds=0.002)):
        yield fake, endpoint


def _metrics_of_the_steps(tmp_path: Path) -> dict[str, dict[str, float]]:
    """Each task's Metrics artifact metadata as the steps' code writes it: two targets' training runs and the
    report's per-target artifacts (the report step's own `write_report`)."""
    by_task: dict[str, dict[str, float]] = {}
    runs = []
    for target, eps in (("cpu", 1000.0), ("cpu-big", 3000.0)):
        for index, logloss in enumerate((0.33, 0.34)):
            summary = run(target, index, logloss + (0.01 if target == "cpu-big" else 0.0), eps)
            runs.append(str(summary.write(tmp_path / f"{target}-{index}")))
            artifact = Metrics(name="metrics", uri="gs://bucket/metrics")
            for key, value in training_figures(target, index, summary).items():
                artifact.log_metric(key, value)
            by_task[f"train-{target}-{index}"] = artifact.metadata
    examples = tmp_path / "examples"
    examples.mkdir()
    manifest().write(examples)
    outputs = {name: FakeArtifact(tmp_path / name) for name in ("html", "md", "json", "metrics", "cpu", "cpu-big")}
    target_artifacts = {name: Metrics(name=name, uri=f"gs://bucket/{name}") for name in ("cpu", "cpu-big")}
    write_report(report_config(), str(examples), runs, outputs["html"], outputs["md"], outputs["json"],
                 outputs["metrics"], target_artifacts)
    for name, artifact in target_artifacts.items():
        by_task[f"report-{name}"] = artifact.metadata
    return by_task


def test_the_sdk_row_has_keys_per_target_run_and_task_and_the_parameters(run_metadata_vertex, tmp_path, capsys):
    from google.cloud import aiplatform

    fake, endpoint = run_metadata_vertex
    args = ["--config", str(VERTEX_CONFIG), "--set", "runs_per_target=1"]
    assert main(["submit", *args, "--api-endpoint", endpoint]) == 0
    (job_id,) = fake.pipeline_jobs
    experiment_context = "projects/adrank-prod/locations/us-central1/metadataStores/default/contexts/adrank-daily"
    assert fake.context_children[experiment_context] == [fake.pipeline_jobs[job_id]["jobDetail"]
                                                         ["pipelineRunContext"]["name"]]
    by_task = _metrics_of_the_steps(tmp_path)
    fake.finish_run(job_id, by_task)

    rows = aiplatform.Experiment("adrank-daily").get_data_frame()
    assert len(rows) == 1
    row = rows.iloc[0].to_dict()
    config = load_config(VERTEX_CONFIG, ["runs_per_target=1"])
    parameters = {key.removeprefix("param."): value for key, value in row.items() if key.startswith("param.")}
    # the window the run read: `adrank submit` passes the time it submitted as the run's `window_end` input
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", parameters.pop("window_end"))
    # the training runs the loop iterated over (a pipeline input: the loop's items, pipelines.fan_in)
    assert parameters.pop("training_runs") == training_run_items([(t.name, 0) for t in config.targets])
    assert parameters == {**run_parameters(config), "window_days": 14.0, "global_batch_size": 8192.0,
                          "runs_per_target": 1.0}  # Struct numbers come back as floats
    assert parameters["config_hash"] == config_hash(config)
    assert parameters["targets"] == ("tpu-v3-8,tpu-v5e-4,tpu-v5e-4-x4,tpu-v5e-4-x16,gpu-a100x4,cpu-ps,cpu,tpu-v6e-4,"
                                     "tpu-v6e-4-x4,tpu-v6e-4-x16,gpu-a100x4-jax,gpu-h100x8-jax,gpu-h100x8-jax-x2")
    metrics = {key.removeprefix("metric."): value for key, value in row.items() if key.startswith("metric.")}
    # every figure of every task is in the row: no key is shared, so none is lost in the merge
    logged = [key for values in by_task.values() for key in values]
    assert len(set(logged)) == len(logged), sorted(logged)
    assert set(metrics) == set(logged)
    assert metrics["cpu/run1/engagement/logloss"] == pytest.approx(0.33)
    assert metrics["cpu-big/run2/engagement/logloss"] == pytest.approx(0.35)
    assert metrics["cpu/engagement/logloss_mean"] == pytest.approx(0.335)
    assert metrics["cpu-big/engagement/logloss_mean"] == pytest.approx(0.345)
    assert metrics["cpu-big/examples_per_second_mean"] == pytest.approx(3000.0)
    assert metrics["cpu/hardware_seen"] == "1 × CPU"


def test_a_recorded_parameter_cannot_be_set_at_submit(run_metadata_vertex, capsys):
    fake, endpoint = run_metadata_vertex
    args = ["--config", str(VERTEX_CONFIG), "--param", "learning_rate=0.1", "--api-endpoint", endpoint]
    assert main(["submit", *args]) == 2
    assert "--param learning_rate: the run records the config's learning_rate" in capsys.readouterr().err
    assert fake.pipeline_jobs == {}


def test_submit_experiment_is_the_one_the_run_joins_itself(run_metadata_vertex):
    fake, endpoint = run_metadata_vertex
    args = ["--config", str(VERTEX_CONFIG), "--set", "runs_per_target=1", "--experiment", "ranking-review"]
    assert main(["submit", *args, "--api-endpoint", endpoint]) == 0
    (job,) = fake.pipeline_jobs.values()
    spec = job["pipelineSpec"]
    dags = [spec["root"], *(c for c in spec["components"].values() if "dag" in c)]  # the exit handler's body too
    (join,) = [task for dag in dags for name, task in dag["dag"]["tasks"].items() if name.startswith("join-experiment")]
    assert join["inputs"]["parameters"]["experiment"]["runtimeValue"]["constant"] == "ranking-review"
    # the labels and the recorded parameters name the same config: the one with this experiment
    recorded = job["pipelineSpec"]["root"]["inputDefinitions"]["parameters"]["config_hash"]["defaultValue"]
    assert job["labels"]["adrank-config"] == recorded == config_hash(
        load_config(VERTEX_CONFIG, ["runs_per_target=1", "vertex.experiment=ranking-review"]))
