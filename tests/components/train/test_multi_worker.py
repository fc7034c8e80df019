"""The TensorFlow lane over several workers through the same trainer: a chief and a worker on 127.0.0.1 with the
TF_CONFIG (and CLUSTER_SPEC) Vertex gives a two-replica CustomJob, under MultiWorkerMirroredStrategy in adrank's own
loop (`components.train.multi_worker`), against one process with two simulated devices under MirroredStrategy
(Keras `fit`), on the same examples.

Stated tolerance: both train the same global batches, each replica the same slice of each, and sum the two
replicas' gradients; only the order of float sums inside the collectives can differ: the eval log-loss agrees to
1e-5 relative and every checkpointed variable to 1e-4 absolute (seen here: 1.2e-7 at most, over 42 variables)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from config_fixture import small_config, with_targets

from configs.slices import TrainStepConfig
from foundation.local_ports import free_local_ports

ROOT = Path(__file__).resolve().parents[3]
SWEPT = {"name": "cpu", "kind": "cpu", "price_per_hour": 0.38, "scale": [1, 2], "scale_batch": "global"}
REPLICA = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_multi_worker import swept_config
from components.train import lanes
summary = lanes.train(swept_config(), "cpu-x2", 0, sys.argv[1], sys.argv[2])
print("SUMMARY " + (summary.model_dump_json() if summary is not None else "null"), flush=True)
"""


def swept_config() -> TrainStepConfig:
    # both points train the global batch of 256 (point 2 over two devices), 4 steps per execution, 2 epochs (the
    # chief evaluates after the first while the other worker waits at the next step's collectives)
    return TrainStepConfig.of(with_targets(small_config(epochs=2), SWEPT), "cpu-x2")


def vertex_environment(ports: list[int], pool: int) -> dict[str, str]:
    """What Vertex sets in replica 0 of worker pool `pool` of a job with one chief and one worker."""
    chief, worker = (f"127.0.0.1:{port}" for port in ports)
    task_type = ("chief", "worker")[pool]
    return {
        "TF_CONFIG": json.dumps({"cluster": {"chief": [chief], "worker": [worker]}, "environment": "cloud",
                                 "task": {"type": task_type, "index": 0}}),
        "CLUSTER_SPEC": json.dumps({"cluster": {"workerpool0": [chief], "workerpool1": [worker]},
                                    "environment": "cloud", "task": {"type": f"workerpool{pool}", "index": 0}}),
    }


def start(examples_dir: Path, model_dir: Path, cluster: dict[str, str]) -> subprocess.Popen:
    env = {key: value for key, value in os.environ.items() if key not in ("TF_CONFIG", "CLUSTER_SPEC")}
    env.update({"PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2", **cluster})
    return subprocess.Popen([sys.executable, "-c", REPLICA, str(examples_dir), str(model_dir)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def summary_of(process: subprocess.Popen) -> dict | None:
    try:
        output, _ = process.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        pytest.fail(f"a replica did not finish in 300 s:\n{output[-4000:]}")
    assert process.returncode == 0, output[-4000:]
    (line,) = [line for line in output.splitlines() if line.startswith("SUMMARY ")]
    return json.loads(line.removeprefix("SUMMARY "))


def checkpointed(model_dir: Path) -> dict[str, np.ndarray]:
    """Every variable of the run's last checkpoint: the weights (the optimizers' trainable variables, the embedding
    table the sparse one's), their optimizer slots and the step counters."""
    reader = tf.train.load_checkpoint(str(model_dir / "checkpoints"))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name != "_CHECKPOINTABLE_OBJECT_GRAPH"}


def test_two_workers_train_the_model_one_process_trains_over_two_devices(examples_dir, tmp_path):
    ports = free_local_ports(2)
    chief, worker = (start(examples_dir, tmp_path / "two-workers", vertex_environment(ports, pool))
                     for pool in (0, 1))
    simulated = start(examples_dir, tmp_path / "one-process", {})
    workers, other, local = summary_of(chief), summary_of(worker), summary_of(simulated)

    assert other is None  # the other worker writes nothing of the run: the chief's summary and model are the run's
    assert sorted(path.name for path in (tmp_path / "two-workers").iterdir()) == sorted(
        path.name for path in (tmp_path / "one-process").iterdir())
    seen = workers["hardware"]
    assert (seen["strategy"], seen["replicas"], seen["processes"], seen["device_count"], seen["simulated"]) == (
        "MultiWorkerMirroredStrategy", 2, 2, 2, False)
    assert seen["device_names"] == ["/job:chief/replica:0/task:0/device:CPU:0",
                                    "/job:worker/replica:0/task:0/device:CPU:0"]
    assert (local["hardware"]["strategy"], local["hardware"]["replicas"], local["hardware"]["processes"],
            local["hardware"]["simulated"]) == ("MirroredStrategy", 2, 1, True)
    assert workers["global_batch_size"] == local["global_batch_size"] == 256
    assert workers["steps"] == local["steps"] and workers["steps_per_execution"] > 1  # several steps per call
    assert workers["input_stall_fraction"] is None and local["input_stall_fraction"] is not None
    assert workers["examples_per_second"] > 0 and workers["time_split"]["steady_steps"] > 0
    for task, metrics in local["metrics"].items():
        assert workers["metrics"][task]["logloss"] == pytest.approx(metrics["logloss"], rel=1e-5)
    assert [point["loss"] for point in workers["curve"]] == pytest.approx(
        [point["loss"] for point in local["curve"]], rel=1e-5)
    evaluated = [(point["epoch"], point["eval_logloss"]) for point in workers["curve"] if point["epoch"] is not None]
    assert [epoch for epoch, _ in evaluated] == [1, 2]
    assert [logloss for _, logloss in evaluated] == pytest.approx(
        [point["eval_logloss"] for point in local["curve"] if point["epoch"] is not None], rel=1e-5)
    over_workers, over_devices = (checkpointed(tmp_path / name) for name in ("two-workers", "one-process"))
    assert over_workers.keys() == over_devices.keys()
    weights = [name for name in over_workers if "_trainable_variables" in name]
    assert len(weights) > 10 and any(name.startswith("embedding_optimizer/") for name in weights)
    for name, value in over_workers.items():
        np.testing.assert_allclose(value, over_devices[name], atol=1e-4, err_msg=name)
    assert over_workers["optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE"] == workers["steps"]


@pytest.mark.parametrize("steps_per_execution, per_call", [(1, 1), (8, 8), (16, 16), (48, 16), (100, 10), (17, 1)])
def test_an_execution_is_calls_of_at_most_sixteen_traced_steps_that_make_it_up_exactly(steps_per_execution, per_call):
    from components.train.multi_worker import UNROLLED_STEPS, unrolled_steps

    assert unrolled_steps(steps_per_execution) == per_call
    assert steps_per_execution % per_call == 0 and per_call <= UNROLLED_STEPS
