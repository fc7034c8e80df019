"""The compiled Vertex pipeline: every training target is a CustomJob with its machines, preprocess
runs on Dataflow, and the spec depends only on the config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from components.preprocess.beam_options import compiled_beam_args
from configs import load_config
from ops.cli import main
from ops.spec_executor import dataflow
from ops.spec_executor.storage import CloudStorageRoot
from tests.support.compiled_spec import spec_tasks, training_branches

VERTEX_CONFIG = Path(__file__).parents[2] / "configs" / "vertex.yaml"
IMAGES = "us-central1-docker.pkg.dev/adrank-prod/adrank/adrank-{}:0.1.0"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> tuple[dict, str]:
    output = tmp_path_factory.mktemp("vertex") / "ranking.yaml"
    assert main(["compile", "--config", str(VERTEX_CONFIG), "--backend", "vertex", "--allow-image-tags", "--output",
                 str(output)]) == 0
    text = output.read_text()
    return yaml.safe_load(text), text


@pytest.fixture(scope="module")
def retraining(tmp_path_factory) -> dict:
    output = tmp_path_factory.mktemp("vertex") / "retraining.yaml"
    assert main(["compile", "--config", str(VERTEX_CONFIG), "--pipeline", "retraining", "--allow-image-tags", "--output",
                 str(output)]) == 0
    return yaml.safe_load(output.read_text())



def _train_tasks(spec: dict) -> dict[str, dict]:
    return {name: task for name, task in spec_tasks(spec).items() if name.startswith("train")}


def _custom_job(task: dict) -> dict:
    parameters = task["inputs"]["parameters"]
    return {name: value["runtimeValue"]["constant"] for name, value in parameters.items()
            if "runtimeValue" in value}


def _with_defaults(spec: dict, task: dict) -> dict:
    """The task's CustomJob inputs: its component's defaults overlaid with the task's own constants."""
    component = spec["components"][task["componentRef"]["name"]]
    defaults = {name: p["defaultValue"] for name, p in component["inputDefinitions"]["parameters"].items()
                if "defaultValue" in p}
    return {**defaults, **_custom_job(task)}


def _by_target(spec: dict) -> dict[str, list[dict]]:
    jobs: dict[str, list[dict]] = {}
    for task in _train_tasks(spec).values():
        job = _with_defaults(spec, task)
        jobs.setdefault(job["target"], []).append(job)
    return jobs


def test_every_target_and_run_is_a_custom_job(compiled):
    """One training task per target (its `dsl.If` branch, with that target's machines), run once per item of the
    `training_runs` loop: 8 targets, three of them swept (2 × 3 points and 2), 13 targets x 5 runs = 65 CustomJobs a
    benchmark run."""
    spec, _ = compiled
    config = load_config(VERTEX_CONFIG)
    branches = training_branches(spec)
    assert sorted(branches) == sorted(t.name for t in config.targets)
    assert {"tpu-v5e-4-x4", "tpu-v5e-4-x16", "tpu-v6e-4-x16", "gpu-h100x8-jax-x2"} <= set(branches)
    runs = spec["root"]["inputDefinitions"]["parameters"]["training_runs"]["defaultValue"]
    assert len(runs) == len(config.targets) * config.runs_per_target == 65
    for target in branches:
        assert sorted(int(run["run_index"]) for run in runs if run["target"] == target) == [0, 1, 2, 3, 4]
    executor = spec["deploymentSpec"]["executors"]
    for target, (_, task) in branches.items():
        component = spec["components"][task["componentRef"]["name"]]
        assert "worker_pool_specs" in component["inputDefinitions"]["parameters"]
        assert _with_defaults(spec, task)["target"] == target
        assert "loop-item" in task["inputs"]["parameters"]["run_index"]["componentInputParameter"]  # the item's run
    # the CustomJob launcher of Google Cloud Pipeline Components runs each one
    assert any("custom_job" in json.dumps(e) for e in executor.values())


def test_tpu_gpu_and_parameter_server_machines(compiled):
    spec, _ = compiled
    pools = {target: runs[0]["worker_pool_specs"] for target, runs in _by_target(spec).items()}

    (v3,) = pools["tpu-v3-8"]
    assert v3["machine_spec"] == {"machine_type": "cloud-tpu", "accelerator_type": "TPU_V3", "accelerator_count": 8}
    assert v3["container_spec"]["image_uri"] == IMAGES.format("tpu")

    (v5e,) = pools["tpu-v5e-4"]
    assert v5e["machine_spec"] == {"machine_type": "ct5lp-hightpu-4t", "tpu_topology": "2x2"}
    assert v5e["container_spec"]["image_uri"] == IMAGES.format("tpu")

    (gpu,) = pools["gpu-a100x4"]
    assert gpu["machine_spec"] == {"machine_type": "a2-highgpu-4g", "accelerator_type": "NVIDIA_TESLA_A100",
                                   "accelerator_count": 4}
    assert gpu["container_spec"]["image_uri"] == IMAGES.format("gpu")

    chief, workers, servers = pools["cpu-ps"]
    assert (chief["replica_count"], workers["replica_count"], servers["replica_count"]) == (1, 4, 2)
    assert chief["machine_spec"] == {"machine_type": "n1-standard-8"}
    assert servers["machine_spec"] == {"machine_type": "n1-highmem-8"}
    assert {p["container_spec"]["image_uri"] for p in (chief, workers, servers)} == {IMAGES.format("cpu")}

    # the JAX lane: TPU v6e (Vertex trains it with JAX only) and the A100 machine, in the JAX images
    (v6e,) = pools["tpu-v6e-4"]
    assert v6e["machine_spec"] == {"machine_type": "ct6e-standard-4t", "tpu_topology": "2x2"}
    assert v6e["container_spec"]["image_uri"] == IMAGES.format("jax-tpu")
    (gpu_jax,) = pools["gpu-a100x4-jax"]
    assert gpu_jax["machine_spec"] == gpu["machine_spec"]
    assert gpu_jax["container_spec"]["image_uri"] == IMAGES.format("jax-gpu")

    (cpu,) = pools["cpu"]
    assert cpu["machine_spec"] == {"machine_type": "n1-standard-16"} and cpu["replica_count"] == 1
    # every replica runs the training component through the KFP executor
    assert "train_step" in " ".join(cpu["container_spec"]["args"] + cpu["container_spec"]["command"])


def test_a_scaling_study_compiles_to_multi_host_slices_and_nodes_that_parse_strictly(compiled):
    """configs/vertex.yaml's study: TPU v5e and v6e 2x2 → 4x4 → 8x8 (a slice over several VMs is worker pool 0 with a
    replica per VM), 1 → 2 a3-highgpu-8g nodes (the second in pool 1); each CustomJob parses as aiplatform_v1's."""
    from google.cloud import aiplatform_v1

    spec, _ = compiled
    jobs = _by_target(spec)
    expected = {"tpu-v5e-4": ("ct5lp-hightpu-4t", "2x2", 1), "tpu-v5e-4-x4": ("ct5lp-hightpu-4t", "4x4", 4),
                "tpu-v5e-4-x16": ("ct5lp-hightpu-4t", "8x8", 16), "tpu-v6e-4-x4": ("ct6e-standard-4t", "4x4", 4),
                "tpu-v6e-4-x16": ("ct6e-standard-4t", "8x8", 16)}
    for target, (machine_type, topology, vms) in expected.items():
        (pool,) = jobs[target][0]["worker_pool_specs"]
        assert pool["machine_spec"] == {"machine_type": machine_type, "tpu_topology": topology}
        assert pool["replica_count"] == vms
    one, two = (jobs[name][0]["worker_pool_specs"] for name in ("gpu-h100x8-jax", "gpu-h100x8-jax-x2"))
    assert [p["replica_count"] for p in one] == [1] and [p["replica_count"] for p in two] == [1, 1]
    assert two[0]["machine_spec"] == two[1]["machine_spec"] == one[0]["machine_spec"]
    assert {p["container_spec"]["image_uri"] for p in two} == {IMAGES.format("jax-gpu")}
    for target in ("tpu-v5e-4-x16", "tpu-v6e-4-x16", "gpu-h100x8-jax-x2"):
        job = jobs[target][0]
        pools = json.loads(json.dumps(job["worker_pool_specs"]),  # the spec's numbers are JSON's: 16.0 is 16
                           parse_float=lambda text: int(float(text)) if float(text).is_integer() else float(text))
        parsed = aiplatform_v1.CustomJob({"display_name": job["display_name"], "job_spec": {
            "worker_pool_specs": pools, "service_account": job["service_account"]}})
        assert parsed.job_spec.worker_pool_specs[0].replica_count == {"gpu-h100x8-jax-x2": 1}.get(target, 16)
    # each point's global batch grows with its devices: 16,384 per 4 chips, 65,536 per 8-GPU node
    config = load_config(VERTEX_CONFIG)
    assert [config.target(name).global_batch_size for name in ("tpu-v5e-4", "tpu-v5e-4-x4", "tpu-v5e-4-x16")] == [
        16384, 65536, 262144]
    assert config.target("gpu-h100x8-jax-x2").price_per_hour == 2 * config.target("gpu-h100x8-jax").price_per_hour


def test_custom_job_settings_come_from_config(compiled):
    spec, _ = compiled
    for target, runs in _by_target(spec).items():
        job = runs[0]
        assert job["service_account"] == "adrank-pipelines@adrank-prod.iam.gserviceaccount.com"
        assert job["network"] == "projects/123456789012/global/networks/adrank-vpc"
        assert job["encryption_spec_key_name"].endswith("/keyRings/adrank/cryptoKeys/pipelines")
        assert job["tensorboard"] == "projects/adrank-prod/locations/us-central1/tensorboards/1234567890"
        assert job["labels"]["adrank-target"] == target and job["labels"]["team"] == "ads-ranking"


def test_preprocess_runs_on_dataflow_over_the_scheduled_window(compiled):
    spec, text = compiled
    task = spec_tasks(spec)["preprocess-files-step"]
    parameters = task["inputs"]["parameters"]
    # the window ends at the pipeline's window_end parameter (`adrank submit`) or the run's scheduled time, rounded
    # down to a UTC midnight by the uncached first step; preprocess gets only what it resolved
    window = spec_tasks(spec)["resolve-window-step"]
    assert window["inputs"]["parameters"]["scheduled_time"]["runtimeValue"]["constant"] == \
        "{{$.pipeline_job_schedule_time_utc}}"
    assert window["inputs"]["parameters"]["window_end"] == {"componentInputParameter": "pipelinechannel--window_end"}
    assert window["cachingOptions"] == {}  # never cached: its fallback is the time it runs
    assert parameters["window_end"] == {"taskOutputParameter": {"producerTask": "resolve-window-step",
                                                                "outputParameterKey": "window_end"}}
    assert "scheduled_time" not in parameters and "pipeline_job_id" not in parameters
    assert spec["root"]["inputDefinitions"]["parameters"]["window_end"]["defaultValue"] == ""
    config = load_config(VERTEX_CONFIG)
    args = json.loads(parameters["beam_args_json"]["runtimeValue"]["constant"])
    assert args == compiled_beam_args(config)
    for expected in ("--runner=DataflowRunner", "--project=adrank-prod", "--region=us-central1",
                     "--temp_location=gs://adrank-prod-pipelines/dataflow/tmp",
                     "--subnetwork=regions/us-central1/subnetworks/adrank-dataflow",
                     f"--sdk_container_image={IMAGES.format('cpu')}", "--no_use_public_ips",
                     "--service_account_email=adrank-pipelines@adrank-prod.iam.gserviceaccount.com"):
        assert expected in args
    assert '"runner":"DataflowRunner"' in text
    assert config.logs.lookback_days == 14
    assert "--dataflow_kms_key=" + config.vertex.encryption_spec_key_name in args
    assert "--job_name=adrank-daily-preprocess" in args  # the step appends a suffix made when it starts


def test_the_compiled_preprocess_flags_pass_the_dataflow_check(compiled, tmp_path):
    """The Beam argv in the compiled Vertex spec is one Beam's parser knows flag by flag and Dataflow accepts
    (project, region, gs:// locations, job name, worker counts): `dataflow.direct_runner_argv` raises otherwise.
    Beam's own PipelineOptionsValidator needs Google credentials, so this is the check run offline."""
    spec, _ = compiled
    args = json.loads(spec_tasks(spec)["preprocess-files-step"]["inputs"]["parameters"]["beam_args_json"]
                      ["runtimeValue"]["constant"])
    local = dataflow.direct_runner_argv("preprocess", args, CloudStorageRoot(tmp_path), "in_memory", 1)
    assert local[0] == "--runner=DirectRunner" and "--job_name=adrank-daily-preprocess" in local


def test_each_training_run_has_its_own_output_directory_without_ids(compiled):
    """Vertex derives AIP_TENSORBOARD_LOG_DIR and AIP_CHECKPOINT_DIR from baseOutputDirectory: each training run's
    is its own (target, run index, day), so each run's curves are its own in the Vertex UI, and holds no job or
    task id (the cache key of a training task can match when the day is run again)."""
    spec, _ = compiled
    tasks = spec_tasks(spec)
    directory = tasks["run-directory-step"]
    assert directory["inputs"]["parameters"]["custom_jobs_dir"]["runtimeValue"]["constant"] == \
        "gs://adrank-prod-pipelines/root/custom-jobs"
    assert directory["inputs"]["parameters"]["run_index"]["parameterExpressionSelector"] == \
        'parseJson(string_value)["run_index"]'
    assert directory["inputs"]["parameters"]["target"]["parameterExpressionSelector"] == \
        'parseJson(string_value)["target"]'
    assert directory["inputs"]["parameters"]["day"] == {
        "componentInputParameter": "pipelinechannel--resolve-window-step-day"}
    trains = _train_tasks(spec)
    assert len(trains) == len(load_config(VERTEX_CONFIG).targets)  # a target's runs share its branch's task
    for task in trains.values():
        assert task["inputs"]["parameters"]["base_output_directory"] == {
            "componentInputParameter": "pipelinechannel--run-directory-step-Output"}
    # the 65 runs of the compiled benchmark: 65 directories
    from pipelines.placement import run_output_directory

    runs = spec["root"]["inputDefinitions"]["parameters"]["training_runs"]["defaultValue"]
    directories = {run_output_directory("gs://adrank-prod-pipelines/root/custom-jobs", run["target"],
                                        run["run_index"], "20260303") for run in runs}
    assert len(runs) == len(directories) == 65
    assert "gs://adrank-prod-pipelines/root/custom-jobs/tpu-v3-8/day-20260303/run-index-4" in directories


def test_two_compiles_in_two_processes_are_byte_identical(compiled, tmp_path):
    """The header KFP writes above the spec printed the loop items' keys in an order that changed from process to
    process; ops.pipeline_compiler writes it from the sorted spec."""
    import os
    import subprocess
    import sys

    _, text = compiled
    output = tmp_path / "again.yaml"
    compile_there = ("import sys; from pathlib import Path; from configs import load_config; "
                     "from ops.pipeline_compiler import compile_pipeline; "
                     "compile_pipeline(load_config(sys.argv[1]), 'vertex', Path(sys.argv[2]))")
    subprocess.run([sys.executable, "-c", compile_there, str(VERTEX_CONFIG), str(output)], check=True,
                   capture_output=True, cwd=Path(__file__).parents[2], env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert output.read_text() == text


def test_the_benchmark_promotes_only_when_asked(compiled, tmp_path):
    spec, _ = compiled
    assert "promote-step" not in spec_tasks(spec) and "report-step" in spec_tasks(spec)
    output = tmp_path / "promoting.yaml"
    assert main(["compile", "--config", str(VERTEX_CONFIG), "--output", str(output), "--allow-image-tags", "--set", "runs_per_target=1",
                 "--set", "benchmark.promote=true"]) == 0
    assert "promote-step" in spec_tasks(yaml.safe_load(output.read_text()))


def test_promotion_follows_the_report(retraining):
    tasks = spec_tasks(retraining)
    promote = tasks["promote-step"]
    assert promote["dependentTasks"] == ["preprocess-files-step", "report-step"]  # scores both on the eval examples
    assert promote["inputs"]["artifacts"]["summary_json"]["taskOutputArtifact"]["producerTask"] == "report-step"
    assert promote["inputs"]["parameters"]["backend"]["runtimeValue"]["constant"] == "vertex"


def test_promotion_outputs_its_figures_for_the_experiment_and_never_caches(retraining):
    spec = retraining
    promote = spec_tasks(spec)["promote-step"]
    assert promote["cachingOptions"] == {}  # enableCache absent: a decision is never reused from another day
    outputs = spec["components"][promote["componentRef"]["name"]]["outputDefinitions"]["artifacts"]
    assert outputs["promotion_metrics"]["artifactType"]["schemaTitle"] == "system.Metrics"
    assert outputs["promotion_html"]["artifactType"]["schemaTitle"] == "system.HTML"
    assert promote["inputs"]["artifacts"]["examples"]["taskOutputArtifact"]["producerTask"] == "preprocess-files-step"


def test_warm_start_from_the_champion_is_a_task_before_training(tmp_path):
    output = tmp_path / "warm.yaml"
    assert main(["compile", "--config", str(VERTEX_CONFIG), "--backend", "vertex", "--allow-image-tags", "--output",
                 str(output), "--set", "training.warm_start=champion"]) == 0
    spec = yaml.safe_load(output.read_text())
    tasks = spec_tasks(spec)
    assert tasks["champion-step"]["cachingOptions"] == {}
    (loop_name, loop), = ((name, task) for name, task in tasks.items() if "parameterIterator" in task)
    assert "champion-step" in loop["dependentTasks"], loop_name  # every run starts after the champion is known
    champion = loop["inputs"]["parameters"]["pipelinechannel--champion-step-Output"]["taskOutputParameter"]
    assert champion == {"outputParameterKey": "Output", "producerTask": "champion-step"}
    for target, (_, task) in training_branches(spec).items():
        source = task["inputs"]["parameters"]["warm_start_from"]
        assert source == {"componentInputParameter": "pipelinechannel--champion-step-Output"}, target


def test_compiled_yaml_depends_only_on_config_and_holds_no_secrets(compiled, tmp_path, monkeypatch):
    _, text = compiled
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "some-other-project")
    monkeypatch.setenv("ADRANK_IMAGE", "elsewhere/image:latest")
    again = tmp_path / "again.yaml"
    assert main(["compile", "--config", str(VERTEX_CONFIG), "--backend", "vertex", "--allow-image-tags", "--output",
                 str(again)]) == 0
    assert again.read_text() == text
    lowered = text.lower()
    for marker in ("private_key", "begin rsa", "begin private", "client_secret", "access_token", "password"):
        assert marker not in lowered


def test_local_backend_keeps_the_plain_components(tmp_path):
    output = tmp_path / "local.yaml"
    assert main(["compile", "--backend", "local", "--output", str(output)]) == 0
    text = output.read_text()
    assert "worker_pool_specs" not in text and "custom_job" not in text
    spec = yaml.safe_load(text)
    window_end = spec["root"]["dag"]["tasks"]["preprocess-step"]["inputs"]["parameters"]["window_end"]
    assert window_end["runtimeValue"]["constant"] == ""


def test_vertex_backend_needs_a_machine_spec_per_target():
    from pipelines.ranking import create_pipeline

    config = load_config(VERTEX_CONFIG, ["targets.2.vertex=null", "runs_per_target=1"])
    with pytest.raises(ValueError, match="target 'gpu-a100x4' has no 'vertex' machine spec"):
        create_pipeline(config, "vertex")


def test_machine_spec_must_match_the_target_kind():
    from configs import ConfigError

    with pytest.raises(ConfigError, match="a 'tpu' target needs a TPU accelerator_type"):
        load_config(VERTEX_CONFIG, ["targets.0.vertex.machine={machine_type: n1-standard-8}"])
    with pytest.raises(ConfigError, match="parameter_servers"):
        load_config(VERTEX_CONFIG, ["targets.3.vertex.parameter_servers=null"])
