"""A scaling sweep (`targets[].scale`) becomes one target per point when the config loads: its batch, machines and
price; a point that cannot be trained fails at load naming `targets.<i>.scale`."""

import pytest

from configs import ConfigError, load_config
from configs.scaling import configured_field
from tests.support.paths import VERTEX_CONFIG

LOCAL = "targets=[{name: cpu, kind: cpu, price_per_hour: 0.38, scale: [1, 2, 4]}, {name: cpu-ps, kind: cpu-ps}]"


def test_each_point_is_a_target_with_the_batch_and_price_of_its_devices():
    config = load_config(None, [LOCAL, "training.global_batch_size=512"])
    points = [(t.name, t.global_batch_size, t.price_per_hour, t.scale_point.factor if t.scale_point else None)
              for t in config.targets]
    assert points == [("cpu", 512, 0.38, 1), ("cpu-x2", 1024, 0.76, 2), ("cpu-x4", 2048, 1.52, 4),
                      ("cpu-ps", None, 0.0, None)]
    assert config.target("cpu-x4").scale_point.of == "cpu" and config.retraining.target == "cpu"
    assert [configured_field(config.targets, i) for i in range(4)] == [
        "targets[0]", "targets[0] (scale point 2)", "targets[0] (scale point 4)", "targets[1]"]
    fixed = load_config(None, [LOCAL.replace("scale: [1, 2, 4]", "scale: [1, 2, 4], scale_batch: global")])
    assert {t.global_batch_size for t in fixed.targets[:3]} == {512}


def test_a_tpu_point_is_the_slice_of_its_chips_over_several_vms_and_a_gpu_point_more_machines():
    config = load_config(VERTEX_CONFIG)
    slices = {t.name: (t.vertex.machine.machine_type, t.vertex.machine.tpu_topology, t.vertex.machines,
                       t.vertex.expected_hours) for t in config.targets if t.name.startswith("tpu-v5e-4")}
    assert slices == {"tpu-v5e-4": ("ct5lp-hightpu-4t", "2x2", 1, 1.25),
                      "tpu-v5e-4-x4": ("ct5lp-hightpu-4t", "4x4", 4, 0.3125),
                      "tpu-v5e-4-x16": ("ct5lp-hightpu-4t", "8x8", 16, 0.078125)}
    nodes = config.target("gpu-h100x8-jax-x2").vertex
    assert nodes.replica_count == 2 and nodes.machine.accelerator_count == 8
    # a 1-chip VM swept to 8 chips is the 8-chip VM, and to 16 the slice of 4-chip VMs
    one_chip = load_config(VERTEX_CONFIG, ["targets.1.vertex.machine={machine_type: ct5lp-hightpu-1t, "
                                           "tpu_topology: 1x1}", "targets.1.scale=[1, 8, 16]"])
    assert [(t.vertex.machine.machine_type, t.vertex.machine.tpu_topology) for t in one_chip.targets[1:4]] == [
        ("ct5lp-hightpu-1t", "1x1"), ("ct5lp-hightpu-8t", "2x4"), ("ct5lp-hightpu-4t", "4x4")]


@pytest.mark.parametrize("source, overrides, words", [
    (None, [LOCAL.replace("scale: [1, 2, 4]", "scale: [1, 3], scale_batch: global")],
     "targets.0.scale: point 3 does not divide the global batch 512"),
    (VERTEX_CONFIG, ["targets.1.scale=[1, 3]"], "targets.1.scale: point 3 needs a TPU v5e slice of 12 chips (3 × "
     "2x2); TPU v5e slices have 1, 4, 8, 16, 32, 64, 128, 256 chips"),
    (VERTEX_CONFIG, ["targets.0.scale=[1, 2]"], "targets.0.scale: 'cloud-tpu' is TPU v2/v3, which Vertex trains only "
     "as the 8-core cloud-tpu device"),
    (VERTEX_CONFIG, ["targets.7.global_batch_size=65540"], "targets.7.scale: point 1's global batch 65,540 does not "
     "split over its 8 devices (a3-highgpu-8g, 8 × NVIDIA_H100_80GB each)"),
    (VERTEX_CONFIG, ["targets.1.scale=[1, 4096]"], "targets.1.scale.1: Input should be less than or equal to 1024"),
    (VERTEX_CONFIG, ["targets.4.scale=[2, 4]"], "scale: [2, 4]: the sweep starts at 1"),
    (VERTEX_CONFIG, ["targets.3.scale=[1, 2]"], "scale: a cpu-ps target trains asynchronously"),
    # a topology Vertex does not offer: not a slice of the generation, or a multi-VM slice of a machine it is not made of
    (VERTEX_CONFIG, ["targets.1.vertex.machine.tpu_topology=3x3"], "targets.1.vertex.machine: tpu_topology: '3x3' "
     "is not a TPU v5e slice (slices: 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16"),
    (VERTEX_CONFIG, ["targets.1.vertex.machine={machine_type: ct5lp-hightpu-8t, tpu_topology: 4x4}",
                     "targets.1.scale=null"],
     "targets.1.vertex.machine: machine_type: topology 4x4 is a 16-chip TPU v5e slice, which Vertex builds of 4 × "
     "ct5lp-hightpu-4t (one worker pool 0 replica each), not of ct5lp-hightpu-8t"),
    (VERTEX_CONFIG, ["targets.5.vertex.machine={machine_type: ct6e-standard-8t, tpu_topology: 2x2}",
                     "targets.5.scale=null"],
     "targets.5.vertex.machine: tpu_topology: ct6e-standard-8t takes topology 2x4, or as ct6e-standard-4t VMs a "
     "slice of 2x4, 4x4"),
])
def test_a_point_that_cannot_train_fails_at_load_naming_the_field(source, overrides, words):
    with pytest.raises(ConfigError) as error:
        load_config(source, overrides)
    assert words in str(error.value)


def test_rules_after_the_sweep_name_the_entry_in_the_file():
    """Rules run on the loaded list, where a sweep's points sit; their errors and warnings name `targets.<i>` as the
    file has it, and a swept target's own setting is said once, not once per point."""
    from configs.shuffle_coverage import shuffle_coverage_problems

    swept = LOCAL.replace("scale: [1, 2, 4]}", "scale: [1, 2, 4], training: {shuffle_buffer: 1000}}")
    config = load_config(None, [swept.replace("{name: cpu-ps, kind: cpu-ps}",
                                              "{name: cpu-ps, kind: cpu-ps, training: {shuffle_buffer: 500}}")])
    problems = shuffle_coverage_problems(config.logs, config.split, config.model, config.training, config.targets)
    assert [problem.split(":")[0] for problem in problems] == ["targets.0.training.shuffle_buffer",
                                                               "targets.1.training.shuffle_buffer"]
    with pytest.raises(ConfigError) as error:
        load_config(None, [LOCAL, "name=" + "a" * 63, "targets.1.name=" + "c" * 59])
    assert "targets.1.name: target 'ccc" in str(error.value) and "makes a 129-character training job display name" \
        in str(error.value)
