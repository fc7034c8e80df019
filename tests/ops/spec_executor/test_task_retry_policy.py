"""Retry policies in `run-spec`: a task that fails once is run again after its backoff (capped, and injected
here), every attempt is logged and counted; a spent policy fails the task; a retried custom job gets the same
AIP_CHECKPOINT_DIR, so training continues from its checkpoints."""

from pathlib import Path

import pytest
import yaml

from ops.spec_executor.pipeline_spec import UnsupportedSpec, load_pipeline_spec
from ops.spec_executor.runner import run_spec
from ops.spec_executor.task_retry_policy import RetryPolicy, retry_policy


def test_a_task_that_fails_once_succeeds_on_its_retry_after_the_capped_backoff(compiled, options, tmp_path):
    waits: list[float] = []
    lines: list[str] = []
    run = run_spec(compiled("retried"), options(tmp_path, parameters={"marker": str(tmp_path / "tried")},
                                                max_backoff_seconds=5, sleep=waits.append), report=lines.append)
    task = run.task("fail-once")
    assert task.state == "succeeded" and task.attempts == 2 and run.status == "succeeded"
    assert waits == [5.0]  # the policy asks for 30 s; the executor's cap is 5 s
    retry_line = next(line for line in lines if line.startswith("retrying"))
    assert "fail-once (fail-once): attempt 1 of 3 failed (exited with 1" in retry_line
    assert retry_line.endswith("attempt 2 in 5 s")
    assert lines[-1].startswith("succeeded fail-once (fail-once)") and "after 2 attempts" in lines[-1]
    logs = Path(run.root) / "spec-runs" / run.job_name / "tasks" / "fail-once"
    assert "first attempt fails" in (logs / "task.log").read_text()  # each attempt keeps its own log
    assert (logs / "task.attempt2.log").exists()
    # the task's temp dir was the run's own, and it is gone now
    run_tmp = Path(run.root) / "spec-runs" / run.job_name / "tmp"
    assert task.outputs["parameters"]["Output"] == str(run_tmp)
    assert not run_tmp.exists()


def test_a_task_that_keeps_failing_fails_after_its_last_attempt(compiled, options, tmp_path):
    waits: list[float] = []
    run = run_spec(compiled("retried-out"), options(tmp_path, sleep=waits.append), report=lambda line: None)
    task = run.task("always-fail")
    assert task.state == "failed" and task.attempts == 2 and waits == [1.0]
    assert task.reason.startswith("attempt 2 of 2: exited with 1") and "never works" in task.reason


def test_the_backoff_grows_by_its_factor_up_to_its_maximum():
    policy = retry_policy("t", {"maxRetryCount": 4, "backoffDuration": "1s", "backoffFactor": 2.0,
                                "backoffMaxDuration": "3s"})
    assert policy == RetryPolicy(4, 1.0, 2.0, 3.0)
    assert [policy.backoff_before(retry) for retry in (1, 2, 3, 4)] == [1.0, 2.0, 3.0, 3.0]
    assert retry_policy("t", {"maxRetryCount": 0}) is None


def test_a_retry_policy_that_does_not_parse_is_refused_at_load(compiled, tmp_path):
    spec = yaml.safe_load(compiled("retried").read_text())
    spec["root"]["dag"]["tasks"]["fail-once"]["retryPolicy"]["backoffDuration"] = "soon"
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(spec))
    with pytest.raises(UnsupportedSpec, match=r"task 'fail-once': retryPolicy.backoffDuration 'soon' is not a duration"):
        load_pipeline_spec(broken)


@pytest.mark.slow  # GCPC's launcher module takes seconds to import; the two attempts themselves take about two
def test_a_retried_custom_job_resumes_from_the_same_checkpoint_dir(compiled, options, tmp_path):
    seen = tmp_path / "seen"
    run = run_spec(compiled("custom-job-retry"), options(tmp_path / "gcs", parameters={"seen": str(seen)}),
                   report=lambda line: None)
    task = run.task("resume-from-checkpoint")
    assert task.state == "succeeded" and task.attempts == 2, task.reason
    first, second = seen.read_text().splitlines()
    assert first == second == f"{tmp_path}/gcs/engine-tests/root/custom-jobs/train/checkpoints/"
    assert task.outputs["parameters"]["Output"] == second + "ckpt-1"  # the retry found the first one's checkpoint
    replicas = Path(run.root) / "spec-runs" / run.job_name / "tasks" / "resume-from-checkpoint"
    assert (replicas / "replicas" / "workerpool0-0.log").exists()
    assert (replicas / "replicas-attempt2" / "workerpool0-0.log").exists()
