"""The container images: each Dockerfile target installs exactly its lock, every lock resolves on PyPI
as pinned, the cpu image starts as a Dataflow worker, and `adrank images build` runs Cloud Build."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from components.images import locks
from ops.cli import main

REPO = Path(__file__).parents[2]
DOCKERFILE = REPO / "components" / "images" / "Dockerfile"
CLOUDBUILD = REPO / "components" / "images" / "cloudbuild.yaml"
VERTEX_CONFIG = REPO / "configs" / "vertex.yaml"
UV = [sys.executable, "-m", "uv"]
LOCK_BY_TARGET = {lock.target: lock for lock in locks.LOCKS}


def _stages() -> dict[str, str]:
    """Stage name → its instructions (the text up to the next FROM), continuation lines joined."""
    stages: dict[str, str] = {}
    current = None
    for line in DOCKERFILE.read_text().replace("\\\n", " ").splitlines():
        match = re.match(r"FROM\s+(\S+)\s+AS\s+(\S+)", line, re.IGNORECASE)
        if match:
            current = match.group(2)
            stages[current] = line + "\n"
        elif current and not line.lstrip().startswith("#"):
            stages[current] += line + "\n"
    return stages


def _arg_defaults() -> dict[str, str]:
    return dict(re.findall(r"^ARG\s+(\w+)=(\S+)", DOCKERFILE.read_text(), re.MULTILINE))


def test_each_target_installs_exactly_its_lock_then_the_package():
    stages = _stages()
    assert set(LOCK_BY_TARGET) <= set(stages)
    for target, lock in LOCK_BY_TARGET.items():
        text = stages[target]
        assert text.startswith(f"FROM {lock.base_stage} AS")
        installs = re.findall(r"(?:uv )?pip install ([^&\n]*)", text)
        # the lock exactly, resolving nothing (the tpu lock only resolves with its overrides),
        # then the package without its dependencies
        assert [i.strip() for i in installs] == [f"--system --no-deps -r {lock.path}", "--system --no-deps ."], (
            target, installs)
        assert lock.path == "requirements.lock" or f"COPY {lock.path} ./" in text
        package = text.index("uv pip install --system --no-deps .")
        assert text.index(f"-r {lock.path}") < text.index("COPY pyproject.toml") < package
        for package_dir in ("foundation", "configs", "components", "pipelines", "ops"):
            assert f"COPY {package_dir} ./{package_dir}" in text
    assert "COPY requirements.lock ./" in stages["lock"]
    assert "${JAX_PYTHON_VERSION}" in stages["lock_jax"] and "KERAS_BACKEND=jax" in stages["lock_jax"]
    assert _arg_defaults()["JAX_PYTHON_VERSION"] == locks.JAX_PYTHON_VERSION


def test_the_cpu_image_boots_as_a_dataflow_worker_with_the_locked_beam():
    stages, args = _stages(), _arg_defaults()
    cpu_pins = locks.CPU_LOCK.read()
    assert args["BEAM_VERSION"] == cpu_pins["apache-beam"]
    assert args["PYTHON_VERSION"] == locks.PYTHON_VERSION
    assert stages["beam_sdk"].startswith("FROM apache/beam_python${PYTHON_VERSION}_sdk:${BEAM_VERSION} AS beam_sdk")
    assert "COPY --from=beam_sdk /opt/apache/beam /opt/apache/beam" in stages["cpu"]
    assert stages["cpu"].rstrip().splitlines()[-1] == 'ENTRYPOINT ["/opt/apache/beam/boot"]'


@pytest.fixture(scope="module")
def vertex_spec(tmp_path_factory) -> dict:
    output = tmp_path_factory.mktemp("vertex") / "ranking.yaml"
    assert main(["compile", "--config", str(VERTEX_CONFIG), "--backend", "vertex", "--allow-image-tags",
                 "--output", str(output)]) == 0
    return yaml.safe_load(output.read_text())


def _worker_pool_specs(spec: dict) -> list[dict]:
    pools = []
    dags = [spec["root"]["dag"]] + [c["dag"] for c in spec["components"].values() if "dag" in c]  # exit handler body
    for task in [task for dag in dags for task in dag["tasks"].values()]:
        component = spec["components"][task["componentRef"]["name"]]
        defaults = component.get("inputDefinitions", {}).get("parameters", {})
        value = task.get("inputs", {}).get("parameters", {}).get("worker_pool_specs", {})
        pools += value.get("runtimeValue", {}).get("constant") or defaults.get("worker_pool_specs", {}).get(
            "defaultValue") or []
    return pools


def test_vertex_sets_every_command_so_the_beam_entrypoint_never_runs_a_step(vertex_spec):
    """The cpu image's ENTRYPOINT is Beam's boot; KFP and CustomJobs must always replace it."""
    from configs import load_config

    images = load_config(VERTEX_CONFIG).vertex.images
    ours = {images.cpu, images.gpu, images.tpu, images.jax_gpu, images.jax_tpu}
    containers = [e["container"] for e in vertex_spec["deploymentSpec"]["executors"].values() if "container" in e]
    step_containers = [c for c in containers if c["image"] in ours]
    pools = [pool["container_spec"] for pool in _worker_pool_specs(vertex_spec)]
    assert step_containers and pools
    assert {c["image_uri"] for c in pools} == ours
    for container in step_containers:
        assert container.get("command"), container["image"]
    for container in pools:
        assert container.get("command"), container["image_uri"]


def test_gpu_and_tpu_locks_keep_the_dev_environment_except_tensorflow():
    cpu, gpu, tpu = (LOCK_BY_TARGET[t].read() for t in ("cpu", "gpu", "tpu"))
    for lock in locks.LOCKS:
        assert locks.consistency_problems(lock) == [], lock.path
    assert gpu["tensorflow"] == cpu["tensorflow"]
    assert any(name.startswith("nvidia-cudnn") for name in gpu)
    assert "tensorflow" not in tpu and "libtpu" in tpu
    # the serving/dev TensorFlow and the TPU build share major.minor or sit one minor release apart
    cpu_minor = tuple(int(part) for part in cpu["tensorflow"].split(".")[:2])
    tpu_minor = tuple(int(part) for part in tpu["tensorflow-tpu"].split(".")[:2])
    assert cpu_minor[0] == tpu_minor[0] and 0 <= cpu_minor[1] - tpu_minor[1] <= 1
    assert tpu["tf-keras"].split(".")[:2] == tpu["tensorflow-tpu"].split(".")[:2]


def test_the_jax_locks_hold_the_jax_lane_and_no_tensorflow():
    jax_tpu, jax_gpu = (LOCK_BY_TARGET[t].read() for t in ("jax-tpu", "jax-gpu"))
    for pins in (jax_tpu, jax_gpu):
        assert not locks.NO_TENSORFLOW & pins.keys()
        assert {"jax", "jaxlib", "keras", "keras-rs", "kfp", "pydantic", "pyfarmhash"} <= pins.keys()
        assert pins["keras"] == LOCK_BY_TARGET["cpu"].read()["keras"]  # the model classes see the same Keras
    assert "libtpu" in jax_tpu and "jax-tpu-embedding" in jax_tpu
    assert any(name.startswith("jax-cuda12") for name in jax_gpu)
    assert "/lib/libtpu.so" in _stages()["jax-tpu"] and "/lib/libtpu.so" in _stages()["tpu"]


def test_a_drifted_pin_is_reported(tmp_path):
    for lock in locks.LOCKS:
        shutil.copy(REPO / lock.path, tmp_path / lock.path)
    gpu = LOCK_BY_TARGET["gpu"]
    text = (tmp_path / gpu.path).read_text()
    numpy = locks.CPU_LOCK.read()["numpy"]
    (tmp_path / gpu.path).write_text(text.replace(f"numpy=={numpy}", "numpy==1.0.0"))
    tpu = LOCK_BY_TARGET["tpu"]
    (tmp_path / tpu.path).write_text((tmp_path / tpu.path).read_text() + "tensorflow==2.21.0\n")
    assert locks.consistency_problems(gpu, tmp_path) == [
        f"requirements-gpu.lock: numpy==1.0.0 but requirements.lock pins numpy=={numpy}"]
    assert locks.consistency_problems(tpu, tmp_path) == [
        "requirements-tpu.lock: pins tensorflow==2.21.0, which the tpu image must not install"]


@pytest.mark.parametrize("target", sorted(LOCK_BY_TARGET))
def test_each_lock_resolves_on_pypi_as_pinned(target):
    """uv resolves the lock's own pins for the image's platform: all exist and fit together."""
    assert locks.resolution_problems(LOCK_BY_TARGET[target], UV) == []


def test_a_lock_naming_an_unpublished_version_does_not_resolve(tmp_path):
    """The old tpu image asked for tensorflow-tpu at the TF 2.21 version, which was never published."""
    tpu = LOCK_BY_TARGET["tpu"]
    shutil.copy(REPO / tpu.overrides, tmp_path / tpu.overrides)
    pinned = (REPO / tpu.path).read_text()
    version = tpu.read()["tensorflow-tpu"]
    (tmp_path / tpu.path).write_text(pinned.replace(f"tensorflow-tpu=={version}", "tensorflow-tpu==2.21.0"))
    problems = locks.resolution_problems(tpu, UV, tmp_path)
    assert len(problems) == 1 and problems[0].startswith("requirements-tpu.lock does not resolve:")
    assert "tensorflow-tpu" in problems[0]


def test_cloud_build_builds_and_pushes_every_target():
    build = yaml.safe_load(CLOUDBUILD.read_text())
    script = build["steps"][0]["args"][-1]
    assert "-f components/images/Dockerfile --target" in script and "docker push" in script
    for target, name in (("cpu", "_CPU_IMAGE"), ("gpu", "_GPU_IMAGE"), ("tpu", "_TPU_IMAGE"),
                         ("serving", "_SERVING_IMAGE")):
        assert f'build {target} "${{{name}}}"' in script
        assert name in build["substitutions"]


def test_the_build_context_keeps_every_lock():
    for ignore_file in (".dockerignore", ".gcloudignore"):
        ignored = {line.strip().rstrip("/") for line in (REPO / ignore_file).read_text().splitlines()}
        for lock in locks.LOCKS:
            assert lock.path not in ignored and "requirements*" not in ignored


def test_images_build_prints_the_command(capsys):
    config = str(VERTEX_CONFIG)
    assert main(["images", "build", "--config", config, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("$ gcloud builds submit --project=adrank-prod --region=us-central1 "
                          "--config=components/images/cloudbuild.yaml")
    assert "_CPU_IMAGE=us-central1-docker.pkg.dev/adrank-prod/adrank/adrank-cpu:0.1.0" in out
    assert "_TPU_IMAGE=us-central1-docker.pkg.dev/adrank-prod/adrank/adrank-tpu:0.1.0" in out
    assert "_SERVING_IMAGE=us-central1-docker.pkg.dev/adrank-prod/adrank/adrank-serving:0.1.0 " in out


def test_images_build_skips_a_prebuilt_serving_image(capsys):
    trained = locks.CPU_LOCK.read()["tensorflow"].split(".")
    prebuilt = f"us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.{trained[0]}-{trained[1]}:latest"
    assert main(["images", "build", "--config", str(VERTEX_CONFIG), "--dry-run", "--source", str(REPO),
                 "--set", f"vertex.model_registry.serving_image={prebuilt}"]) == 0
    assert "_SERVING_IMAGE= " in capsys.readouterr().out


def test_images_build_refuses_a_prebuilt_serving_image_of_another_tensorflow(capsys):
    """The schema's default, Vertex's tf2-cpu.2-15, cannot be trusted to load a model the locked TF exports."""
    trained = ".".join(locks.CPU_LOCK.read()["tensorflow"].split(".")[:2])
    prebuilt = "us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.2-15:latest"
    args = ["images", "build", "--config", str(VERTEX_CONFIG), "--dry-run", "--source", str(REPO),
            "--set", f"vertex.model_registry.serving_image={prebuilt}"]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert (f"vertex.model_registry.serving_image '{prebuilt}' serves TensorFlow 2.15 but models are trained "
            f"with TensorFlow {trained} (requirements.lock)") in captured.err
    assert main([*args, "--set", "promotion.enabled=false"]) == 0


def test_the_example_serves_on_the_training_tensorflow():
    """Vertex's prebuilt TF prediction images stop at 2.15: a model exported by the locked TF needs ours."""
    from configs import load_config
    from ops.commands.images import serving_image_to_build

    serving_image = load_config(VERTEX_CONFIG).vertex.model_registry.serving_image
    prebuilt = re.search(r"/prediction/tf2-(?:cpu|gpu)\.(\d+)-(\d+):", serving_image)
    trained = locks.CPU_LOCK.read()["tensorflow"].split(".")[:2]
    if prebuilt:
        assert list(prebuilt.groups()) == trained, serving_image
    else:
        assert serving_image_to_build(serving_image) == serving_image


def test_images_build_without_a_lock_fails_clearly(tmp_path, capsys):
    for needed in ("components/images/Dockerfile", "components/images/cloudbuild.yaml", "pyproject.toml",
                   "requirements.lock", "requirements-gpu.lock"):
        (tmp_path / needed).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / needed, tmp_path / needed)
    assert main(["images", "build", "--config", str(VERTEX_CONFIG), "--source", str(tmp_path)]) == 2
    assert f"{tmp_path / 'requirements-tpu.lock'} not found" in capsys.readouterr().err


def test_images_build_without_gcloud_fails_clearly(monkeypatch, capsys):
    monkeypatch.setenv("PATH", "/nonexistent")
    config = str(VERTEX_CONFIG)
    assert main(["images", "build", "--config", config, "--source", str(REPO)]) == 2
    captured = capsys.readouterr()
    assert "$ gcloud builds submit" in captured.out
    assert "gcloud is not installed" in captured.err


def test_the_serving_image_is_the_cpu_lock_with_the_server_as_entrypoint():
    stages = _stages()
    assert stages["serving"].startswith("FROM cpu AS serving")
    assert stages["serving"].rstrip().splitlines()[-1] == (
        'ENTRYPOINT ["python", "-m", "components.serving.server"]')
    assert "pip install" not in stages["serving"]


def test_the_tpu_lock_only_resolves_with_its_overrides():
    """Why the images install with --no-deps: tensorflow-transform's tensorflow>=2.21 clashes with TF 2.20."""
    import dataclasses

    without_overrides = dataclasses.replace(LOCK_BY_TARGET["tpu"], overrides=None)
    problems = locks.resolution_problems(without_overrides, UV)
    assert len(problems) == 1 and "does not resolve" in problems[0] and "tensorflow-transform" in problems[0]


def test_the_example_runs_dataflow_on_the_cpu_image():
    """Only the cpu target has Beam's boot entrypoint, so it is the Dataflow worker image."""
    from components.preprocess.beam_options import beam_pipeline_args
    from configs import load_config

    config = load_config(VERTEX_CONFIG)
    assert config.preprocess.dataflow.worker_image == config.vertex.images.cpu
    assert f"--sdk_container_image={config.vertex.images.cpu}" in beam_pipeline_args(config)
