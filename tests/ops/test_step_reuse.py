"""Which steps of an earlier attempt a resumed run reuses: sealed and intact ones whose inputs did not run again."""

import json
from pathlib import Path

from ops.step_reuse import SEAL_FILE, StepOutputs, StepReuse, seal_step


def finished_step(attempt: Path, task: str, files: dict[str, str]) -> Path:
    task_dir = attempt / task
    for name, text in files.items():
        (task_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (task_dir / name).write_text(text)
    (task_dir / "executor_output.json").write_text(json.dumps({"artifacts": {"x": {"uri": str(task_dir / "out")}}}))
    seal_step(task_dir)
    return task_dir


def command(attempt: Path, task: str, reads: list[str] = ()) -> list[str]:
    executor_input = {
        "inputs": {"artifacts": {r: {"artifacts": [{"uri": str(attempt / r / "out")}]} for r in reads}},
        "outputs": {"artifacts": {"out": {"artifacts": [{"uri": str(attempt / task / "out")}]}},
                    "outputFile": str(attempt / task / "executor_output.json")},
    }
    return ["sh", "-ec", "...", "--executor_input", json.dumps(executor_input), "--function_to_execute", "f"]


def test_an_intact_sealed_step_is_linked_into_the_new_attempt(tmp_path):
    artifacts = tmp_path / "artifacts"
    earlier = finished_step(artifacts / "p-1", "preprocess", {"out/manifest.json": "{}", "out/part-0": "rows"})
    reuse = StepReuse(artifacts, current_attempts=set())
    outputs = StepOutputs.from_command(command(artifacts / "p-2", "preprocess"))
    assert outputs.task == "preprocess" and outputs.artifact_dirs == {"out": artifacts / "p-2" / "preprocess" / "out"}
    assert reuse.reuse(outputs)
    new = artifacts / "p-2" / "preprocess"
    assert (new / "out" / "part-0").read_text() == "rows" and (new / SEAL_FILE).exists()
    assert str(new / "out") in (new / "executor_output.json").read_text()
    assert str(earlier) not in (new / "executor_output.json").read_text()
    assert json.loads((earlier / "executor_output.json").read_text())["artifacts"]["x"]["uri"] == str(earlier / "out")


def test_a_changed_missing_or_unsealed_step_runs_again(tmp_path):
    artifacts = tmp_path / "artifacts"
    earlier = finished_step(artifacts / "p-1", "preprocess", {"out/part-0": "rows", "out/part-1": "more"})
    (earlier / "out" / "part-0").write_text("ROWS")
    finished_step(artifacts / "p-1", "generate", {"out/logs": "x"})
    (artifacts / "p-1" / "generate" / "out" / "logs").unlink()
    finished_step(artifacts / "p-1", "report", {"out/report.html": "x"})
    (artifacts / "p-1" / "report" / SEAL_FILE).unlink()
    reuse = StepReuse(artifacts, current_attempts=set())
    for task in ("preprocess", "generate", "report"):
        assert not reuse.reuse(StepOutputs.from_command(command(artifacts / "p-2", task)))
    assert reuse.ran == {"preprocess", "generate", "report"}


def test_a_step_reading_a_step_that_ran_again_runs_again_without_checkpoints(tmp_path):
    artifacts = tmp_path / "artifacts"
    finished_step(artifacts / "p-1", "train", {"out/saved_model/x": "m", "out/checkpoints/checkpoint": "c"})
    reuse = StepReuse(artifacts, current_attempts=set())
    reuse.ran.add("preprocess")
    outputs = StepOutputs.from_command(command(artifacts / "p-2", "train", reads=["preprocess"]))
    assert outputs.upstream_tasks == {"preprocess"}
    assert not reuse.reuse(outputs)
    assert reuse.restore_checkpoints(outputs) is None


def test_an_interrupted_training_step_gets_its_checkpoints_back(tmp_path):
    artifacts = tmp_path / "artifacts"
    (artifacts / "p-1" / "train" / "out" / "checkpoints").mkdir(parents=True)
    (artifacts / "p-1" / "train" / "out" / "checkpoints" / "checkpoint").write_text("ckpt-2")
    (artifacts / "p-1" / "train" / "out" / "checkpoints" / "ckpt-2.index").write_text("i")
    reuse = StepReuse(artifacts, current_attempts=set())
    outputs = StepOutputs.from_command(command(artifacts / "p-2", "train", reads=["preprocess"]))
    assert not reuse.reuse(outputs)
    assert reuse.restore_checkpoints(outputs) == artifacts / "p-1" / "train" / "out" / "checkpoints"
    assert (artifacts / "p-2" / "train" / "out" / "checkpoints" / "ckpt-2.index").read_text() == "i"
    assert reuse.resumed_from_checkpoint == ["train"]
