"""Images by digest: `adrank images build` records what Cloud Build pushed, compile pins images by it and says when
it falls back to a tag."""

from __future__ import annotations

import base64
import json
import shutil
import stat

import pytest
import yaml

from components.images.digests import BuildResultError, ImageDigests, digests_from_build, repository
from configs import load_config
from ops.cli import main
from ops.pipeline_compiler import compile_pipeline
from tests.ops.conftest import REPO, VERTEX_CONFIG

REGISTRY = "us-central1-docker.pkg.dev/adrank-prod/adrank"
CPU_DIGEST = "sha256:" + "c" * 64
GPU_DIGEST = "sha256:" + "9" * 64
SERVING_DIGEST = "sha256:" + "5" * 64


def _step_output(lines: list[str]) -> str:
    return base64.b64encode(("\n".join(lines) + "\n").encode()).decode()


# A finished Build resource as `gcloud builds describe --format=json` prints it (fields trimmed to what matters).
FINISHED_BUILD = {
    "id": "1b2c3d4e-0000-4000-8000-000000000001",
    "status": "SUCCESS",
    "results": {
        "buildStepOutputs": [_step_output([
            f"{REGISTRY}/adrank-cpu:0.1.0={REGISTRY}/adrank-cpu@{CPU_DIGEST}",
            f"{REGISTRY}/adrank-gpu:0.1.0={REGISTRY}/adrank-gpu@{GPU_DIGEST}",
            f"{REGISTRY}/adrank-serving:0.1.0={REGISTRY}/adrank-serving@{SERVING_DIGEST}",
        ])],
        "buildStepImages": ["sha256:" + "1" * 64],
    },
}


def test_digests_are_read_from_the_build_step_output():
    assert digests_from_build(FINISHED_BUILD) == {
        f"{REGISTRY}/adrank-cpu:0.1.0": f"{REGISTRY}/adrank-cpu@{CPU_DIGEST}",
        f"{REGISTRY}/adrank-gpu:0.1.0": f"{REGISTRY}/adrank-gpu@{GPU_DIGEST}",
        f"{REGISTRY}/adrank-serving:0.1.0": f"{REGISTRY}/adrank-serving@{SERVING_DIGEST}",
    }


def test_images_listed_by_the_build_are_read_too():
    build = {"results": {"images": [{"name": f"{REGISTRY}/adrank-tpu:0.1.0", "digest": GPU_DIGEST}]}}
    assert digests_from_build(build) == {f"{REGISTRY}/adrank-tpu:0.1.0": f"{REGISTRY}/adrank-tpu@{GPU_DIGEST}"}


@pytest.mark.parametrize("line", ["no-equals-sign", f"{REGISTRY}/adrank-cpu:0.1.0={REGISTRY}/adrank-cpu@sha256:abc",
                                  f"{REGISTRY}/adrank-cpu:0.1.0={REGISTRY}/other@{CPU_DIGEST}"])
def test_a_malformed_step_output_is_refused(line):
    with pytest.raises(BuildResultError, match="TAG=REPOSITORY@sha256"):
        digests_from_build({"results": {"buildStepOutputs": [_step_output([line])]}})


def test_repository_keeps_a_registry_port():
    assert repository("localhost:5000/adrank-cpu:0.1.0") == "localhost:5000/adrank-cpu"
    assert repository(f"{REGISTRY}/adrank-cpu@{CPU_DIGEST}") == f"{REGISTRY}/adrank-cpu"


def _fake_gcloud(tmp_path, describe: dict):
    """A `gcloud` on PATH that records its arguments and answers submit, log and describe like gcloud."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "describe.json").write_text(json.dumps(describe))
    script = bin_dir / "gcloud"
    script.write_text(f"""#!/bin/bash
echo "$*" >> {tmp_path}/gcloud-calls.txt
case "$2" in
  submit) echo '{{"id": "{describe["id"]}", "status": "QUEUED"}}' ;;
  log) echo "Step #0 - build-and-push: pushed" >&2 ;;
  describe) cat {tmp_path}/describe.json ;;
esac
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return bin_dir


def _checkout(tmp_path):
    from components.images import locks

    source = tmp_path / "checkout"
    for needed in ("components/images/Dockerfile", "components/images/cloudbuild.yaml", "pyproject.toml",
                   *(lock.path for lock in locks.LOCKS)):
        (source / needed).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / needed, source / needed)
    return source


def test_images_build_records_the_digests_cloud_build_returns(tmp_path, monkeypatch, capsys):
    bin_dir = _fake_gcloud(tmp_path, FINISHED_BUILD)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    source = _checkout(tmp_path)
    assert main(["images", "build", "--config", str(VERTEX_CONFIG), "--source", str(source)]) == 0
    calls = (tmp_path / "gcloud-calls.txt").read_text().splitlines()
    assert calls[0].startswith("builds submit --project=adrank-prod --region=us-central1") and "--async" in calls[0]
    assert calls[1] == f"builds log --stream --project=adrank-prod --region=us-central1 {FINISHED_BUILD['id']}"
    assert calls[2].startswith("builds describe") and calls[2].endswith(FINISHED_BUILD["id"])
    record = json.loads((source / "components/images/digests.json").read_text())
    assert record[f"{REGISTRY}/adrank-cpu:0.1.0"] == f"{REGISTRY}/adrank-cpu@{CPU_DIGEST}"
    out = capsys.readouterr().out
    assert f"pushed {REGISTRY}/adrank-cpu:0.1.0 = {REGISTRY}/adrank-cpu@{CPU_DIGEST}" in out
    assert "recorded 3 digest(s)" in out


def test_a_failed_build_records_nothing(tmp_path, monkeypatch, capsys):
    bin_dir = _fake_gcloud(tmp_path, {**FINISHED_BUILD, "status": "FAILURE", "statusDetail": "step 0 failed"})
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    source = _checkout(tmp_path)
    assert main(["images", "build", "--config", str(VERTEX_CONFIG), "--source", str(source)]) == 2
    assert "ended FAILURE: step 0 failed" in capsys.readouterr().err
    assert not (source / "components/images/digests.json").exists()


def _image_uris(spec: dict) -> set[str]:
    uris = {executor["container"]["image"] for executor in spec["deploymentSpec"]["executors"].values()
            if "container" in executor}
    dags = [spec["root"], *(c for c in spec["components"].values() if "dag" in c)]  # the exit handler's body too
    for task in (task for dag in dags for task in dag["dag"]["tasks"].values()):
        pools = task["inputs"]["parameters"].get("worker_pool_specs", {}).get("runtimeValue", {}).get("constant")
        uris |= {pool["container_spec"]["image_uri"] for pool in pools or []}
        beam = task["inputs"]["parameters"].get("beam_args_json", {}).get("runtimeValue", {}).get("constant")
        uris |= {arg.split("=", 1)[1] for arg in json.loads(beam or "[]") if arg.startswith("--sdk_container_image=")}
    return uris


def test_compile_pins_recorded_images_and_says_which_fell_back_to_a_tag(tmp_path):
    config = load_config(VERTEX_CONFIG, ["runs_per_target=1"])
    record = ImageDigests(tmp_path / "digests.json")
    record.record(digests_from_build(FINISHED_BUILD))
    notes: list[str] = []
    output = compile_pipeline(config, "vertex", tmp_path / "ranking.yaml", digests=record, echo=notes.append)
    uris = _image_uris(yaml.safe_load(output.read_text()))
    launcher = {uri for uri in uris if uri.startswith("gcr.io/ml-pipeline/google-cloud-pipeline-components:")}
    assert len(launcher) == 1  # GCPC's own custom-job launcher: Google's image, not one adrank builds
    assert uris - launcher == {f"{REGISTRY}/adrank-cpu@{CPU_DIGEST}", f"{REGISTRY}/adrank-gpu@{GPU_DIGEST}",
                               f"{REGISTRY}/adrank-tpu:0.1.0", f"{REGISTRY}/adrank-jax-gpu:0.1.0",
                               f"{REGISTRY}/adrank-jax-tpu:0.1.0"}
    assert f"image vertex.images.cpu: {REGISTRY}/adrank-cpu@{CPU_DIGEST} (digest recorded by adrank images build)" \
        in notes
    assert f"image preprocess.dataflow.worker_image: {REGISTRY}/adrank-cpu@{CPU_DIGEST} " \
        "(digest recorded by adrank images build)" in notes
    assert notes[-1].startswith("images by tag, no digest recorded")
    assert f"vertex.images.tpu {REGISTRY}/adrank-tpu:0.1.0" in notes[-1]
    assert notes[-1].endswith(f"vertex.images.jax_tpu {REGISTRY}/adrank-jax-tpu:0.1.0")
    # the user's config is unchanged: its hash, the job labels and id stay
    assert config.vertex.images.cpu == f"{REGISTRY}/adrank-cpu:0.1.0"


def test_compile_refuses_a_tag_that_a_cached_step_runs_unless_asked(tmp_path, capsys):
    """Vertex keys a cached step by its image reference: `adrank compile` refuses a spec whose cached steps run an
    image by tag, naming the tag, the config fields that give it and the steps, and writes nothing;
    `--allow-image-tags` compiles it."""
    output = tmp_path / "ranking.yaml"
    args = ["compile", "--config", str(VERTEX_CONFIG), "--backend", "vertex", "--set", "runs_per_target=1",
            "--output", str(output)]
    assert main(args) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith("adrank compile: error: cached steps would run images by tag, with no digest recorded: ")
    assert f"{REGISTRY}/adrank-cpu:0.1.0 (vertex.images.cpu, preprocess.dataflow.worker_image; run by preprocess, " \
        "run directory, train, export, record run, report)" in err
    assert f"{REGISTRY}/adrank-gpu:0.1.0 (vertex.images.gpu; run by train)" in err
    assert "adrank-serving" not in err  # the promoted model's serving image: the promotion step is never cached
    assert "Record digests with `adrank images build`, or compile with --allow-image-tags" in err
    assert not output.exists()
    assert main([*args, "--allow-image-tags"]) == 0 and output.exists()


def test_a_cached_step_on_a_tag_is_named_and_pinned_ones_pass(tmp_path):
    """With the cpu and gpu images pinned, the train step still runs the tpu and JAX images by tag; with every image
    a cached step runs pinned, the spec compiles."""
    from ops.image_pins import ImageTagsOnCachedSteps

    config = load_config(VERTEX_CONFIG, ["runs_per_target=1"])
    record = ImageDigests(tmp_path / "digests.json")
    record.record(digests_from_build(FINISHED_BUILD))
    with pytest.raises(ImageTagsOnCachedSteps, match=rf"^cached steps would run images by tag, with no digest "
                       rf"recorded: {REGISTRY}/adrank-jax-gpu:0.1.0 \(vertex.images.jax_gpu; run by train\); "
                       rf"{REGISTRY}/adrank-jax-tpu:0.1.0 \(vertex.images.jax_tpu; run by train\); "
                       rf"{REGISTRY}/adrank-tpu:0.1.0 \(vertex.images.tpu; run by train\)\. "):
        compile_pipeline(config, "vertex", tmp_path / "a.yaml", digests=record, allow_image_tags=False)
    assert not (tmp_path / "a.yaml").exists()
    record.record({f"{REGISTRY}/adrank-{kind}:0.1.0": f"{REGISTRY}/adrank-{kind}@{GPU_DIGEST.replace('9', digit)}"
                   for kind, digit in (("tpu", "7"), ("jax-gpu", "6"), ("jax-tpu", "5"))})
    assert compile_pipeline(config, "vertex", tmp_path / "b.yaml", digests=record, allow_image_tags=False).exists()
