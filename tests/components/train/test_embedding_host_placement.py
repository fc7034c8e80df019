"""On GPU, a table above training.host_table_bytes lives in host memory while the dense part is mirrored.

Three logical CPUs stand in: a MirroredStrategy over /cpu:1 and /cpu:2 plays two GPUs, /CPU:0 the host.
The host table must hold one copy on /CPU:0 and train to the same values as an undistributed run.
"""

import pytest
from test_distributed import run_python

HOST_PLACEMENT = """
import numpy as np, tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 3)
from components.train.strategy import Runtime
from components.train.loop import compiled_model
from configs import load_config
from configs.training import TargetConfig, resolve_target
from fixture_data import FEATURES
from components.contracts.manifest import Manifest, SplitInfo

split = SplitInfo(examples=64, label_rates={"engagement": 0.3}, file_pattern="unused")
manifest = Manifest(tasks=["engagement"], features=FEATURES, splits={"train": split, "eval": split})
config = load_config(None)
training = config.training.model_copy(update={"global_batch_size": 8, "host_table_bytes": 1})
resolved = resolve_target(config.model, training, TargetConfig(name="gpu", kind="gpu"))
rng = np.random.default_rng(0)
features = {"user_id": rng.integers(1, 50, 8), "ad_id": rng.integers(1, 20, 8),
            "user_interests": rng.integers(0, 12, (8, 4)), "ad_bid": rng.normal(size=8).astype("float32")}
labels = {"engagement": (rng.random(8) < 0.3).astype("float32")}
data = tf.data.Dataset.from_tensors((features, labels)).repeat(3)

mirrored = tf.distribute.MirroredStrategy(["/cpu:1", "/cpu:2"])
gpu_like = Runtime(mirrored, "GPU", ["/cpu:1", "/cpu:2"])
with mirrored.scope():
    hosted = compiled_model(resolved, gpu_like, manifest, features, steps_per_execution=1)
plain = compiled_model(resolved, Runtime(tf.distribute.get_strategy(), "CPU", ["/cpu:0"]), manifest, features, 1)
plain.set_weights(hosted.get_weights())
(table,) = hosted.embedding.trainable_variables
print("TABLE", type(table.value).__name__, table.value.device)
dense = [v for v in hosted.trainable_variables if v is not table][0]
print("DENSE", type(dense.value).__name__, sorted(str(d) for d in [c.device for c in dense.value.values]))
print("MEMORY", hosted.table_memory()[0]["devices"])
initial = table.numpy()
hosted.fit(data, epochs=1, verbose=0)
plain.fit(data, epochs=1, verbose=0)
(plain_table,) = plain.embedding.trainable_variables
print("CHANGED", int((~np.all(initial == table.numpy(), axis=1)).sum()))
print("MAXDIFF", float(np.abs(table.numpy() - plain_table.numpy()).max()))
"""


@pytest.mark.slow
def test_a_table_above_the_limit_lives_on_the_host_once_and_trains_like_an_undistributed_run():
    out = dict(line.split(" ", 1) for line in run_python(["-c", HOST_PLACEMENT]).splitlines()
               if line.split(" ", 1)[0] in ("TABLE", "DENSE", "MEMORY", "CHANGED", "MAXDIFF"))
    assert out["TABLE"] == "ResourceVariable /job:localhost/replica:0/task:0/device:CPU:0"
    assert out["DENSE"].startswith("MirroredVariable") and "CPU:1" in out["DENSE"] and "CPU:2" in out["DENSE"]
    assert out["MEMORY"] == "['/job:localhost/replica:0/task:0/device:CPU:0']"
    assert int(out["CHANGED"]) > 0
    assert float(out["MAXDIFF"]) < 1e-5  # one update per step with the replica-summed gradient, not two
