"""The container images install the lock and the package; `adrank images build` runs Cloud Build."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from ops.cli import main

REPO = Path(__file__).parents[2]
DOCKERFILE = REPO / "components" / "images" / "Dockerfile"
CLOUDBUILD = REPO / "components" / "images" / "cloudbuild.yaml"


def _stages() -> dict[str, str]:
    """Stage name → its instructions (the text up to the next FROM)."""
    stages: dict[str, str] = {}
    current = None
    for line in DOCKERFILE.read_text().splitlines():
        match = re.match(r"FROM\s+(\S+)\s+AS\s+(\S+)", line, re.IGNORECASE)
        if match:
            current = match.group(2)
            stages[current] = line + "\n"
        elif current:
            stages[current] += line + "\n"
    return stages


def test_each_target_installs_the_lock_then_the_package():
    stages = _stages()
    assert {"cpu", "gpu", "tpu"} <= set(stages)
    assert "COPY requirements.lock" in stages["lock"]
    for target in ("cpu", "gpu", "tpu"):
        text = stages[target]
        assert text.startswith("FROM lock AS")
        assert re.search(r"uv pip install --system -r \S*requirements\S*lock", text), target
        install_package = text.index("uv pip install --system --no-deps .")
        assert text.index("requirements") < text.index("COPY pyproject.toml") < install_package
        for package_dir in ("configs", "components", "pipelines", "ops"):
            assert f"COPY {package_dir} ./{package_dir}" in text
    assert "tensorflow[and-cuda]==$(sed -n 's/^tensorflow==//p' requirements.lock)" in stages["gpu"]
    assert "grep -v '^tensorflow==' requirements.lock" in stages["tpu"]
    assert "tensorflow-tpu==" in stages["tpu"] and "libtpu" in stages["tpu"]


def test_the_lock_pins_what_the_images_version_from_it():
    lock = (REPO / "requirements.lock").read_text()
    assert re.search(r"^tensorflow==\d", lock, re.MULTILINE)
    assert re.search(r"^uv==\d", lock, re.MULTILINE)


def test_cloud_build_builds_and_pushes_every_target():
    build = yaml.safe_load(CLOUDBUILD.read_text())
    script = build["steps"][0]["args"][-1]
    assert "-f components/images/Dockerfile --target" in script and "docker push" in script
    for target, name in (("cpu", "_CPU_IMAGE"), ("gpu", "_GPU_IMAGE"), ("tpu", "_TPU_IMAGE")):
        assert f'build {target} "${{{name}}}"' in script
        assert name in build["substitutions"]


def test_images_build_prints_the_command(capsys):
    config = str(REPO / "configs" / "vertex.yaml")
    assert main(["images", "build", "--config", config, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("$ gcloud builds submit --project=adrank-prod --region=us-central1 "
                          "--config=components/images/cloudbuild.yaml")
    assert "_CPU_IMAGE=us-central1-docker.pkg.dev/adrank-prod/adrank/adrank-cpu:0.1.0" in out
    assert "_TPU_IMAGE=us-central1-docker.pkg.dev/adrank-prod/adrank/adrank-tpu:0.1.0" in out


def test_images_build_without_gcloud_fails_clearly(monkeypatch, capsys):
    monkeypatch.setenv("PATH", "/nonexistent")
    config = str(REPO / "configs" / "vertex.yaml")
    assert main(["images", "build", "--config", config, "--source", str(REPO)]) == 2
    captured = capsys.readouterr()
    assert "$ gcloud builds submit" in captured.out
    assert "gcloud is not installed" in captured.err
