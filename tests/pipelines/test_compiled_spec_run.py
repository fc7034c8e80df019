"""The compiled Vertex spec of configs/vertex.yaml, executed on this machine the way Vertex executes it
(`adrank run-spec`, ops.spec_executor): every task of the YAML runs once, the cpu-ps custom job trains as a
chief/worker/ps cluster from its compiled payload, and a broken spec fails."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import pytest
import yaml

from foundation.process_table import process_running
from ops.cli import main
from ops.spec_executor import custom_job, dataflow
from ops.spec_executor.processes import ProcessTable
from ops.spec_executor.runner import RunSpecOptions, run_spec
from ops.spec_executor.storage import CloudStorageRoot
from tests.support.paths import REPO, VERTEX_CONFIG
from tests.support.tiny_config import tiny_logs

PIPELINE_ROOT = "gs://adrank-prod-pipelines/root"
METADATA_ONLY = {"system.Metrics", "system.ClassificationMetrics"}  # KFP keeps these in metadata, no file
# a Vertex resource named by its metadata (`resourceName`), no file; the executor records its step as a stand-in
RESOURCE_REFERENCES = {"google.VertexModel"}
# Four days of synthetic logs from 2026-03-01; the job is created on the fourth day, so the 14-day lookback
# window before it holds all of them. Tiny tables and one epoch keep every training task to seconds.
CREATE_TIME = dt.datetime(2026, 3, 4, 3, 0, tzinfo=dt.timezone.utc)
TINY = [
    "logs.source=synthetic", *tiny_logs(3000, users=300, ads=60, advertisers=10), "logs.synthetic.start_date=2026-03-01", "features.0.hash_buckets=1000", "preprocess.output_shards=2",
    "model.embedding_dim=8", "model.deep_layers=[32,16]", "model.cross_layers=1", "training.epochs=1",
    "training.global_batch_size=256", "training.shuffle_buffer=1000", "runs_per_target=1",
    # the production cpu-ps machines (chief + workers + parameter servers), 2 workers and 1 ps here
    "targets=[{name: cpu-ps, kind: cpu-ps, price_per_hour: 2.85, vertex: {machine: {machine_type: n1-standard-8}, "
    "workers: {replica_count: 2, machine: {machine_type: n1-standard-8}}, "
    "parameter_servers: {replica_count: 1, machine: {machine_type: n1-highmem-8}}}}, "
    "{name: cpu, kind: cpu, price_per_hour: 0.76, vertex: {machine: {machine_type: n1-standard-16}}}]",
    # the benchmark with its promotion step, without the e-mail exit handler (whose nested DAG and notification the
    # engine's own tests cover)
    "retraining.target=cpu", "benchmark.promote=true", "vertex.notify_emails=[]",
]


CPU_PS_BRANCH = "inputs.parameter_values['pipelinechannel--training_runs-loop-item-subvar-target'] == 'cpu-ps'"


def _compile(output: Path, overrides: list[str]) -> Path:
    args = [arg for override in overrides for arg in ("--set", override)]
    assert main(["compile", "--config", str(VERTEX_CONFIG), "--backend", "vertex", "--allow-image-tags",
                 "--output", str(output), *args]) == 0
    return output


def _options(root: Path, check_only: bool = False) -> RunSpecOptions:
    return RunSpecOptions(root=root, project="adrank-prod", location="us-central1", pipeline_root=PIPELINE_ROOT,
                          create_time=CREATE_TIME, direct_running_mode="in_memory", direct_num_workers=1,
                          check_only=check_only, sleep=lambda seconds: None)  # retries do not wait here


def _edited(spec_path: Path, edit, output: Path) -> Path:
    spec = yaml.safe_load(spec_path.read_text())
    edit(spec)
    output.write_text(yaml.safe_dump(spec, sort_keys=False))
    return output


@pytest.fixture(scope="module")
def tiny_spec(tmp_path_factory) -> Path:
    return _compile(tmp_path_factory.mktemp("spec") / "pipeline.yaml", TINY)


@pytest.fixture(scope="module")
def executed(tiny_spec, tmp_path_factory):
    root = tmp_path_factory.mktemp("gcs")
    had_gcs = Path("/gcs").exists()
    run = run_spec(tiny_spec, _options(root), report=lambda line: print(line, file=sys.stderr))
    return run, CloudStorageRoot(root), had_gcs


@pytest.mark.long  # the whole compiled DAG: benchmarks/retraining_spec.py runs the same engine over it
@pytest.mark.e2e
def test_every_compiled_task_runs_to_the_report_and_promotion(executed):
    run, _, _ = executed
    states = {task.display_name: (task.state, task.reason) for task in run.tasks}
    assert states == {
        "resolve window": ("succeeded", ""), "generate logs": ("succeeded", ""), "preprocess": ("succeeded", ""),
        "run directory · cpu-ps · run 1": ("succeeded", ""), "run directory · cpu · run 1": ("succeeded", ""),
        "train · cpu-ps · run 1": ("succeeded", ""), "train · cpu · run 1": ("succeeded", ""),
        "record run · cpu-ps · run 1": ("succeeded", ""), "record run · cpu · run 1": ("succeeded", ""),
        "report": ("succeeded", ""), "promote model": ("succeeded", ""),
        # the training-runs loop, each item's branch group, the branch its target chose and the one it did not
        "training runs": ("succeeded", ""),
        "condition-branches-2 · cpu-ps · run 1": ("succeeded", ""),
        "condition-branches-2 · cpu · run 1": ("succeeded", ""),
        "target cpu-ps · cpu-ps · run 1": ("succeeded", ""), "target cpu · cpu · run 1": ("succeeded", ""),
        "target cpu-ps · cpu · run 1": ("not_triggered", f"condition {CPU_PS_BRANCH} is false"),
        "target cpu · cpu-ps · run 1": ("not_triggered", f"condition !({CPU_PS_BRANCH}) is false"),
        # Vertex-only steps (ops.spec_executor.vertex_only): resolved, recorded as stand-ins
        "join experiment": ("succeeded", ""), "model version": ("succeeded", ""),
    }
    stand_ins = {task.display_name: task.stand_ins for task in run.tasks}
    assert stand_ins["join experiment"][0].startswith("Vertex Experiment:")
    assert stand_ins["model version"][0].startswith("Vertex Model Registry version:")
    assert run.status == "succeeded"
    assert run.job_name == "adrank-daily-20260304030000"


@pytest.mark.long  # the whole compiled DAG: benchmarks/retraining_spec.py runs the same engine over it
@pytest.mark.e2e
def test_outputs_are_gs_uris_under_the_pipeline_root_read_back_from_the_root(executed):
    run, storage, had_gcs = executed
    for task in run.tasks:
        if any(inner.task.startswith(task.task + "/") for inner in run.tasks):
            continue  # a DAG (the loop, a branch): its outputs are its inner tasks'
        for name, artifacts in task.outputs.items():
            if name == "parameters":
                continue
            uri = artifacts[0]["uri"]
            assert uri.startswith(f"{PIPELINE_ROOT}/0/{run.job_name}/{task.task.rsplit('/', 1)[-1]}_"), uri
            assert uri.endswith(f"/{name}")
            if artifacts[0]["type"]["schemaTitle"] in RESOURCE_REFERENCES:
                continue
            if artifacts[0]["type"]["schemaTitle"] in METADATA_ONLY:
                assert artifacts[0]["metadata"], f"{task.task}: {name} came back through executor_output.json"
            else:
                assert storage.local_path(uri).exists(), f"{task.task}: {name} was written through /gcs/ to its URI"
    assert Path("/gcs").exists() == had_gcs  # tasks get local paths for gs:// URIs: no /gcs mount is made
    # dsl.Collected: the report got every run's record, in the loop's order
    (loop,) = [t for t in run.tasks if t.display_name == "training runs"]
    records = [a["uri"] for a in loop.outputs["pipelinechannel--record-run-step-run"]]
    assert [json.loads((storage.local_path(uri) / "run_summary.json").read_text())["target"] for uri in records] \
        == ["cpu-ps", "cpu"]
    examples = run.task("preprocess-step").outputs["examples"][0]
    assert examples["metadata"]["train"] > 0 and examples["metadata"]["eval"] > 0
    # the DirectRunner standing in for Dataflow starts no Dataflow job: an empty GcpResources
    assert run.task("preprocess-step").outputs["parameters"]["gcp_resources"] == "{}"


@pytest.mark.long  # the whole compiled DAG: benchmarks/retraining_spec.py runs the same engine over it
@pytest.mark.e2e
def test_the_cpu_ps_custom_job_trains_as_a_chief_worker_ps_cluster(executed):
    run, storage, _ = executed
    (ps_task,) = [t for t in run.tasks if t.display_name == "train · cpu-ps · run 1"]
    summary = json.loads((storage.local_path(ps_task.outputs["summary"][0]["uri"]) / "run_summary.json").read_text())
    hardware = summary["hardware"]
    assert hardware["strategy"] == "ParameterServerStrategy"
    assert hardware["device_names"] == ["/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"]
    assert hardware["device_descriptions"] == ["1 parameter server(s)"]
    assert summary["steps"] > 0
    replica_logs = Path(run.root) / "spec-runs" / run.job_name / "tasks" / ps_task.task / "replicas"
    assert sorted(p.name for p in replica_logs.iterdir()) == [
        "workerpool0-0.log", "workerpool1-0.log", "workerpool1-1.log", "workerpool2-0.log"]
    chief_log = (replica_logs / "workerpool0-0.log").read_text()
    assert "'ps': ['127.0.0.1:" in chief_log and "'worker': ['127.0.0.1:" in chief_log
    resources = json.loads(ps_task.outputs["parameters"]["gcp_resources"])["resources"][0]
    assert resources["resourceType"] == "CustomJob"
    assert "/projects/adrank-prod/locations/us-central1/customJobs/" in resources["resourceUri"]
    # AIP_CHECKPOINT_DIR: <baseOutputDirectory>/checkpoints, the training run's own directory (target, day read, run
    # index) without job or task ids (a cached input); the chief nests its checkpoints by its own model artifact
    (directory,) = [t for t in run.tasks if t.display_name == "run directory · cpu-ps · run 1"]
    base_output_directory = f"{PIPELINE_ROOT}/custom-jobs/cpu-ps/day-20260303/run-index-0"
    assert directory.outputs["parameters"]["Output"] == base_output_directory
    checkpoints = storage.local_path(f"{base_output_directory}/checkpoints")
    (run_dir,) = [path for path in checkpoints.iterdir() if path.is_dir()]
    assert run_dir.name.startswith("run-")
    assert any(path.is_file() for path in run_dir.rglob("*")), "the chief checkpoints to AIP_CHECKPOINT_DIR"


@pytest.mark.long  # the whole compiled DAG: benchmarks/retraining_spec.py runs the same engine over it
@pytest.mark.e2e
def test_dataflow_runs_as_direct_runner_and_promotion_into_the_local_registry(executed):
    run, storage, _ = executed
    (stand_in,) = run.task("preprocess-step").stand_ins
    assert "DataflowRunner checked, DirectRunner runs it" in stand_in
    assert f"--temp_location={storage.root}/adrank-prod-pipelines/dataflow/tmp" in stand_in
    report = run.task("report-step").outputs
    best = report["metrics"][0]["metadata"]
    assert best["best_target"] in ("cpu", "cpu-ps") and best["best_logloss"] > 0
    assert storage.local_path(report["report_html"][0]["uri"]).read_text().lstrip().startswith("<")
    promotion = run.task("promote-step").outputs["promotion"][0]["metadata"]
    assert promotion["version"] == "1" and promotion["promoted"] is True
    evaluation = json.loads((storage.root / "model-registry" / "adrank-daily" / "versions" / "1" /
                             "evaluation.json").read_text())
    assert evaluation["target"] == best["best_target"]
    # the model URI as the training task saw it: the local path its gs:// URI maps to (Vertex: the gs:// URI)
    assert storage.uri(evaluation["model_uri"]).startswith(f"{PIPELINE_ROOT}/0/{run.job_name}/")
    assert (storage.local_path(evaluation["model_uri"]) / "saved_model.pb").exists()


# -- the whole production spec, resolved without running ---------------------------------------------------

@pytest.fixture(scope="module")
def production_spec(tmp_path_factory) -> Path:
    # without the e-mail exit handler: its nested DAG is the engine's to run (docs/spec_executor.md)
    return _compile(tmp_path_factory.mktemp("production") / "pipeline.yaml",
                    ["runs_per_target=1", "vertex.notify_emails=[]"])


def test_the_production_spec_resolves_everywhere_and_tpu_targets_are_skipped(production_spec, tmp_path):
    run = run_spec(production_spec, _options(tmp_path, check_only=True), report=lambda line: None)
    states = {task.display_name: task for task in run.tasks}
    # each CustomJob parsed strictly first (aiplatform_v1.CustomJob): a multi-host slice too (pool 0: 16 VMs)
    for name in ("train · tpu-v3-8 · run 1", "train · tpu-v5e-4 · run 1", "train · tpu-v5e-4-x16 · run 1",
                 "train · tpu-v6e-4-x4 · run 1"):
        assert states[name].state == "skipped" and "asks for a TPU" in states[name].reason
    two_nodes = states["train · gpu-h100x8-jax-x2 · run 1"]  # pool 0 and pool 1: an a3-highgpu-8g each
    assert two_nodes.state == "skipped" and "asks for 16 GPU(s) over its replicas" in two_nodes.reason
    for name in ("preprocess", "train · cpu-ps · run 1", "train · cpu · run 1"):
        assert states[name].state == "checked", states[name].reason
    # the report needs every run's summary, on Vertex as here: it is checked but would not run
    assert states["report"].state == "checked"
    assert states["report"].reason.startswith("would not run: inner task 'for-loop-1/iteration-")
    assert "train-step" in states["report"].reason and "skipped" in states["report"].reason
    assert run.status == "incomplete"


# -- a broken spec fails ----------------------------------------------------------------------------------

def _set_executor_arg(spec: dict, executor: str, old: str, new: str) -> None:
    container = spec["deploymentSpec"]["executors"][executor]["container"]
    assert old in container["args"]
    container["args"] = [new if arg == old else arg for arg in container["args"]]


def test_a_broken_placeholder_fails_its_task(tiny_spec, tmp_path):
    def break_report(spec):
        _set_executor_arg(spec, "exec-report-step", "{{$}}", "{{$.executor_input}}")

    broken = _edited(tiny_spec, break_report, tmp_path / "broken.yaml")
    run = run_spec(broken, _options(tmp_path / "root", check_only=True), report=lambda line: None)
    report = run.task("report-step")
    assert report.state == "failed" and "unknown placeholder {{$.executor_input}}" in report.reason
    assert run.task("promote-step").state == "not_run"
    assert run.status == "failed"


def test_a_broken_output_parameter_path_fails_the_custom_job_task(tiny_spec, tmp_path):
    def break_gcp_resources(spec):
        old = "{{$.outputs.parameters['gcp_resources'].output_file}}"
        for label in ("exec-train-step", "exec-train-step-2"):
            _set_executor_arg(spec, label, old, old.replace("gcp_resources", "gcp_resource"))

    broken = _edited(tiny_spec, break_gcp_resources, tmp_path / "broken.yaml")
    run = run_spec(broken, _options(tmp_path / "root", check_only=True), report=lambda line: None)
    (train,) = [t for t in run.tasks if t.display_name == "train · cpu-ps · run 1"]
    assert train.state == "failed" and "names no output parameter file" in train.reason
    assert train.task.endswith("/train-step")


def test_an_input_wired_to_a_missing_output_fails(tiny_spec, tmp_path):
    def rewire(spec):
        inputs = spec["root"]["dag"]["tasks"]["report-step"]["inputs"]["artifacts"]
        inputs["runs"]["taskOutputArtifact"]["outputArtifactKey"] = "summaries"

    broken = _edited(tiny_spec, rewire, tmp_path / "broken.yaml")
    run = run_spec(broken, _options(tmp_path / "root", check_only=True), report=lambda line: None)
    assert run.task("report-step").state == "failed"
    assert "expects output 'summaries'" in run.task("report-step").reason


def test_a_failing_task_stops_the_pipeline_and_its_log_is_kept(tiny_spec, tmp_path):
    def wrong_function(spec):
        _set_executor_arg(spec, "exec-generate-logs-step", "generate_logs_step", "no_such_step")

    broken = _edited(tiny_spec, wrong_function, tmp_path / "broken.yaml")
    run = run_spec(broken, _options(tmp_path / "root"), report=lambda line: None)
    first = run.task("generate-logs-step")
    assert first.state == "failed" and "exited with 1" in first.reason  # after its retries, if it has a policy
    assert "no_such_step" in first.reason  # the log tail
    assert {t.state for t in run.tasks if t.task != "generate-logs-step"} == {"not_run"}
    assert all("the pipeline failed at 'generate-logs-step'" in t.reason for t in run.tasks[1:])


# -- the stand-ins, one at a time ------------------------------------------------------------------------

DATAFLOW_ARGS = ["--runner=DataflowRunner", "--project=adrank-prod", "--region=us-central1",
                 "--temp_location=gs://adrank-prod-pipelines/dataflow/tmp", "--job_name=adrank-daily-preprocess",
                 "--max_num_workers=50", "--no_use_public_ips"]


@pytest.mark.parametrize("extra, problem", [
    (["--max_num_wrokers=5"], "Beam does not know"),
    (["--dataflow_service_options=enable_prime"], "not a Dataflow setting this executor checks"),
    (["--temp_location=/tmp/dataflow"], "Dataflow needs a gs://bucket/path"),
    (["--job_name=Adrank_Preprocess"], "Dataflow job names match"),
])
def test_dataflow_options_that_would_fail_are_errors(tmp_path, extra, problem):
    with pytest.raises(dataflow.DataflowArgsError, match=problem):
        dataflow.direct_runner_argv("preprocess", DATAFLOW_ARGS + extra, CloudStorageRoot(tmp_path), "in_memory", 1)


def test_dataflow_options_become_a_direct_runner_argv(tmp_path):
    argv = dataflow.direct_runner_argv("preprocess", DATAFLOW_ARGS, CloudStorageRoot(tmp_path), "in_memory", 1)
    assert argv == ["--runner=DirectRunner", "--direct_running_mode=in_memory", "--direct_num_workers=1",
                    f"--temp_location={tmp_path}/adrank-prod-pipelines/dataflow/tmp",
                    "--job_name=adrank-daily-preprocess"]
    assert dataflow.beam_argv(json.dumps(DATAFLOW_ARGS)) == DATAFLOW_ARGS
    assert dataflow.beam_argv(json.dumps(["--runner=DirectRunner"])) is None


def _python_pool(code: str, replicas: int) -> dict:
    return {"machine_spec": {"machine_type": "n1-standard-4"}, "replica_count": replicas,
            "container_spec": {"image_uri": "adrank-cpu:local", "command": [sys.executable, "-c", code],
                               "env": [{"name": "ADRANK_REPLICA_TEST", "value": "yes"}]}}


def _jobs(tmp_path: Path, processes: ProcessTable) -> custom_job.LocalCustomJobs:
    return custom_job.LocalCustomJobs("train", CloudStorageRoot(tmp_path / "gcs"), processes, {"PATH": "/usr/bin"},
                                      tmp_path, tmp_path / "logs")


def test_every_replica_gets_the_environment_vertex_gives_it(tmp_path):
    write_env = ("import json, os, pathlib; t = json.loads(os.environ['TF_CONFIG'])['task']; "
                 f"pathlib.Path(r'{tmp_path}', t['type'] + str(t['index']) + '.json').write_text("
                 "json.dumps(dict(os.environ)))")
    serve = write_env + "; import time; time.sleep(60)"
    wait_for_servers = ("; import time\nwhile len(list(pathlib.Path(r'" + str(tmp_path) + "').glob('*.json'))) < 4:"
                        " time.sleep(0.1)")
    job = {"display_name": "train", "job_spec": {
        "worker_pool_specs": [_python_pool(write_env + wait_for_servers, 1),
                              _python_pool(serve, 2), _python_pool(serve, 1)],
        "base_output_directory": {"output_uri_prefix": "gs://bucket/jobs/cpu-ps/1/2"}}}
    processes = ProcessTable()
    _jobs(tmp_path, processes).create_custom_job("projects/p/locations/l", job)
    assert processes.running == []  # the servers were stopped when the chief finished
    seen = {name: json.loads((tmp_path / f"{name}.json").read_text()) for name in ("chief0", "worker0", "worker1",
                                                                                 "ps0")}
    tf_config = json.loads(seen["worker1"]["TF_CONFIG"])
    assert tf_config["task"] == {"type": "worker", "index": 1} and tf_config["environment"] == "cloud"
    assert [len(tf_config["cluster"][job]) for job in ("chief", "worker", "ps")] == [1, 2, 1]
    cluster_spec = json.loads(seen["ps0"]["CLUSTER_SPEC"])
    assert cluster_spec["task"] == {"type": "workerpool2", "index": 0}
    assert cluster_spec["cluster"]["workerpool1"] == tf_config["cluster"]["worker"]
    assert seen["chief0"]["AIP_CHECKPOINT_DIR"] == f"{tmp_path}/gcs/bucket/jobs/cpu-ps/1/2/checkpoints/"
    assert seen["chief0"]["AIP_MODEL_DIR"].endswith("/bucket/jobs/cpu-ps/1/2/model/")
    assert seen["chief0"]["AIP_TENSORBOARD_LOG_DIR"].endswith("/bucket/jobs/cpu-ps/1/2/logs/")
    assert seen["worker0"]["ADRANK_REPLICA_TEST"] == "yes"


def test_a_failing_replica_fails_the_job_and_stops_the_others(tmp_path):
    job = {"display_name": "train", "job_spec": {"worker_pool_specs": [
        _python_pool("import time; time.sleep(60)", 1), _python_pool("raise SystemExit(3)", 1)]}}
    processes = ProcessTable()
    with pytest.raises(custom_job.CustomJobError, match=r"workerpool1-0 \(worker 0\) exited with 3"):
        _jobs(tmp_path, processes).create_custom_job("projects/p/locations/l", job)
    assert processes.running == []


def test_the_primary_pool_has_one_replica_but_a_tpu_slice_one_per_vm(tmp_path):
    job = {"display_name": "train", "job_spec": {"worker_pool_specs": [_python_pool("pass", 2)]}}
    with pytest.raises(custom_job.CustomJobError, match=r"worker_pool_specs\[0\] must have exactly one replica"):
        _jobs(tmp_path, ProcessTable()).create_custom_job("projects/p/locations/l", job)
    slice_pool = {**_python_pool("pass", 4), "machine_spec": {"machine_type": "ct5lp-hightpu-4t", "tpu_topology": "4x4"}}
    custom_job.validate_custom_job("train", {"display_name": "train", "job_spec": {"worker_pool_specs": [slice_pool]}})


def test_a_payload_field_vertex_does_not_know_is_refused(tmp_path):
    job = {"display_name": "train", "job_spec": {"worker_pool_specs": [_python_pool("pass", 1)],
                                                 "worker_pool_spec": []}}
    with pytest.raises(custom_job.CustomJobError, match="not a valid CustomJob"):
        _jobs(tmp_path, ProcessTable()).create_custom_job("projects/p/locations/l", job)


EXECUTOR_SCRIPT = """
import sys
from pathlib import Path
from ops.spec_executor import custom_job
from ops.spec_executor.processes import ProcessTable
from ops.spec_executor.runner import _end_processes_on_signals, _task_environment
from ops.spec_executor.storage import CloudStorageRoot

storage = CloudStorageRoot(Path(sys.argv[1]))
table = ProcessTable()
_end_processes_on_signals(table)
replica = "import os, pathlib, time; pathlib.Path(os.environ['PIDS'], str(os.getpid())).touch(); time.sleep(300)"
def pool(replicas):  # as compiled: the shell runs python3 and then more, so it does not exec it
    return {"machine_spec": {"machine_type": "n1-standard-4"}, "replica_count": replicas,
            "container_spec": {"image_uri": "adrank-cpu", "command": ["sh", "-ec", 'python3 -c "$0"; echo done'],
                               "args": [replica], "env": [{"name": "PIDS", "value": sys.argv[2]}]}}
jobs = custom_job.LocalCustomJobs("train", storage, table, _task_environment(storage), storage.root,
                                  storage.root / "logs")
jobs.create_custom_job("projects/p/locations/l", {"display_name": "t", "job_spec": {
    "worker_pool_specs": [pool(1), pool(2), pool(1)]}})
"""


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGKILL"])
def test_every_replica_dies_with_the_executor(tmp_path, signal_name):
    import os
    import signal
    import subprocess
    import time

    pids = tmp_path / "pids"
    pids.mkdir()
    executor = subprocess.Popen([sys.executable, "-c", EXECUTOR_SCRIPT, str(tmp_path / "gcs"), str(pids)],
                                env={**os.environ, "PYTHONPATH": str(REPO)})
    deadline = time.monotonic() + 120
    while len(list(pids.iterdir())) < 4 and time.monotonic() < deadline:
        assert executor.poll() is None, "the executor ended before its replicas started"
        time.sleep(0.2)
    replicas = [int(p.name) for p in pids.iterdir()]
    assert len(replicas) == 4 and all(process_running(pid) for pid in replicas)
    executor.send_signal(getattr(signal, signal_name))
    executor.wait(timeout=60)
    deadline = time.monotonic() + 30
    while any(process_running(pid) for pid in replicas) and time.monotonic() < deadline:
        time.sleep(0.2)
    survivors = [pid for pid in replicas if process_running(pid)]
    for pid in survivors:  # leave nothing behind when the test fails
        os.kill(pid, signal.SIGKILL)
    assert not survivors, f"replicas outlived an executor ended by {signal_name}"


def test_the_command_checks_a_spec_and_says_where_its_record_is(tiny_spec, tmp_path, capsys):
    common = ["--root", str(tmp_path), "--project", "adrank-prod", "--pipeline-root", PIPELINE_ROOT,
              "--create-time", "2026-03-04T03:00:00Z", "--check"]
    assert main(["run-spec", str(tiny_spec), *common]) == 0
    out = capsys.readouterr().out
    assert "checked   train · cpu-ps · run 1 (for-loop-1/iteration-0/condition-branches-2/condition-3/train-step)" in out
    assert "not_triggered target cpu · cpu-ps · run 1 (for-loop-1/iteration-0/condition-branches-2/condition-4)" \
        in out
    record = tmp_path / "spec-runs" / "adrank-daily-20260304030000" / "spec_run.json"
    assert f"adrank-daily-20260304030000: checked; record: {record}" in out
    assert json.loads(record.read_text())["status"] == "checked"
    with pytest.raises(SystemExit):  # a create time without a UTC offset is refused by the parser
        main(["run-spec", str(tiny_spec), *common[:-3], "--create-time", "2026-03-04T03:00:00"])
    assert "needs a UTC offset" in capsys.readouterr().err
