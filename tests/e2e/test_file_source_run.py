"""A file-source config (the shipped CSV click-log example) through `adrank run`, started outside the repo, quietly,
with the learned_hash encoding and the calibration step: the mapping is built in preprocessing, the table has the
configured rows, the run reports calibration before and after, and the exported model serves raw log rows (ids
seen and never seen) through its raw signature. One run serves both checks (each whole run costs ~40 s)."""

import json

import numpy as np
import pytest
import tensorflow as tf

from components.contracts.manifest import Manifest
from components.contracts.run_summary import RunSummary
from tests.support.cli import adrank, sets
from tests.support.tiny_config import IN_MEMORY_BEAM, SHORT_MEASUREMENTS

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO_CONFIG = "configs/examples/click_log.yaml"
FAST = [*IN_MEMORY_BEAM, "training.epochs=1", "promotion.enabled=false", *SHORT_MEASUREMENTS]
LEARNED = ["training.global_batch_size=256",
           "features.0.encoding=learned_hash", "features.0.hash_buckets=300", "features.0.dedicated_rows=100",
           "features.4={name: channel, kind: categorical, encoding: learned_hash, hash_buckets: 40}",
           "training.calibration=platt", "training.calibration_holdout_fraction=0.2"]


@pytest.fixture
def click_log_config(request):
    return str(request.config.rootpath / REPO_CONFIG)


@pytest.fixture(scope="module")
def quiet_learned_run(request, tmp_path_factory):
    """The example with ip and channel as learned_hash and a platt calibration step, run quietly from a directory
    outside the repo: (that directory, the CLI result)."""
    cwd = tmp_path_factory.mktemp("elsewhere")
    result = adrank("run", "--config", str(request.config.rootpath / REPO_CONFIG), "--runs-dir", "runs",
                    "--run-id", "clicks", *sets(FAST + LEARNED), "--quiet", cwd=cwd)
    return cwd, result


@pytest.mark.long
def test_the_click_log_example_runs_from_any_directory_and_quietly(quiet_learned_run):
    tmp_path, result = quiet_learned_run
    assert "failed" not in result.stdout
    # --quiet: no step or progress lines, only the run's first line and its summary
    assert not any(line.startswith(("  ▶", "  ✓", "  …", "      ")) for line in result.stdout.splitlines())
    assert "adrank progress" not in result.stdout and result.stdout.strip().splitlines()[-1].startswith("report: ")
    summary = json.loads((tmp_path / "runs" / "clicks" / "summary.json").read_text())
    assert summary["runs"][0]["target"] == "cpu" and summary["runs"][0]["steps"] > 0
    assert "download" in summary["tasks"]
    record = json.loads((tmp_path / "runs" / "clicks" / "run.json").read_text())
    assert record["status"] == "succeeded" and record["pid"] and record["host"]


def test_a_failed_step_is_named_with_its_exception(tmp_path, click_log_config):
    result = adrank("run", "--config", click_log_config, "--runs-dir", str(tmp_path), "--run-id", "missing",
                    *sets(FAST + ["logs.impressions=missing/*.csv"]), cwd=tmp_path, check=False)
    assert result.returncode == 2
    assert "failed at step 'preprocess': FileNotFoundError: no log files match" in result.stderr
    assert "Traceback" not in result.stderr
    record = json.loads((tmp_path / "missing" / "run.json").read_text())
    assert record["status"] == "failed" and record["failed_step"] == "preprocess"


def raw_click(ip: str) -> bytes:
    feature = {"timestamp_ms": tf.train.Feature(int64_list=tf.train.Int64List(value=[1510203600000]))}
    for name, value in {"ip": ip, "app": "3", "device": "1", "os": "13", "channel": "424"}.items():
        feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[value.encode()]))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


@pytest.mark.long
def test_learned_hash_and_calibration_through_adrank_run(quiet_learned_run):
    tmp_path, _ = quiet_learned_run
    run_dir = tmp_path / "runs" / "clicks"
    manifest_path = next(run_dir.glob("artifacts/**/manifest.json"))
    manifest = Manifest.read(manifest_path.parent)
    sizes = {f.name: f.table_rows for f in manifest.features}
    assert sizes["ip"] == 300 and sizes["channel"] == 40
    mapping = next(run_dir.glob("artifacts/**/transform_fn/**/assets/learned_hash")).read_bytes().splitlines()
    assert any(line.startswith(b"ip\t") for line in mapping)  # the row of ids never seen
    assert any(line.startswith(b"channel:") for line in mapping)

    run = RunSummary.read(next(run_dir.glob("artifacts/**/run_summary.json")))
    task = run.metrics["download"]
    report = (run_dir / "report.md").read_text()
    # the step is kept only where it lowers held-out log-loss (docs/calibration.md); either way the report says so
    if "download" in run.calibration_skipped:
        assert "did not lower log-loss" in run.calibration_skipped["download"] and task.uncalibrated_logloss is None
        assert "calibration step was skipped in 1 of 1 run(s)" in report
    else:
        assert run.calibrators["download"].method == "platt" and task.uncalibrated_logloss is not None
        assert run.calibrators["download"].check is not None and run.calibrators["download"].check.improves
        assert "platt calibration step moved" in report
    assert task.reliability and sum(count for _, _, count in task.reliability) == task.examples
    assert "Calibration: reliability per bin" in report
    assert "alt='reliability'" in (run_dir / "report.html").read_text()

    serve = tf.saved_model.load(run.model_uri).signatures["serving_default"]
    seen_ip = next(line for line in mapping if line.startswith(b"ip:")).split(b"\t")[0][3:].decode()
    probabilities = serve(examples=tf.constant([raw_click(seen_ip), raw_click("never-seen-ip")]))["download"].numpy()
    assert probabilities.shape == (2,) and np.all((probabilities > 0) & (probabilities < 1))
    assert json.loads((run_dir / "run.json").read_text())["status"] == "succeeded"
