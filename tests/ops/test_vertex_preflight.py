"""Preflight: machine and region requests Vertex or Dataflow would refuse fail at `adrank compile` (and submit,
schedule), naming the config field and the rule, before any request is sent."""

from __future__ import annotations

import pytest

from configs import load_config
from configs.vertex import MachineSpec
from ops.cli import main
from ops.vertex.preflight import accelerator_names, config_problems, machine_problems
from tests.ops.conftest import VERTEX_CONFIG

# targets of configs/vertex.yaml: 0 tpu-v3-8, 1 tpu-v5e-4 (swept x1, x4, x16), 2 gpu-a100x4, 3 cpu-ps, 4 cpu,
# 5 tpu-v6e-4 (jax, swept x1, x4, x16), 6 gpu-a100x4-jax, 7 gpu-h100x8-jax (swept x1, x2); errors name them so
T = "targets.{}.vertex.machine."

BAD = [
    # (overrides, field named in the error, words of the rule)
    ([T.format(2) + "accelerator_type=NVIDIA_A100"], "targets[2].vertex.machine.accelerator_type",
     "not an aiplatform_v1 AcceleratorType"),
    ([T.format(0) + "accelerator_type=TPU_V5E"], "targets[0].vertex.machine.accelerator_type",
     "not an aiplatform_v1 AcceleratorType"),
    ([T.format(2) + "accelerator_count=8"], "targets[2].vertex.machine.accelerator_count",
     "a2-highgpu-4g comes with exactly 4 x NVIDIA_TESLA_A100"),
    ([T.format(2) + "machine_type=n1-standard-16"], "targets[2].vertex.machine.machine_type",
     "NVIDIA_TESLA_A100 does not attach to 'n1-standard-16'"),
    ([T.format(0) + "tpu_topology=4x4", "targets.0.scale=null"], "targets[0].vertex.machine.tpu_topology",
     "cloud-tpu (TPU v2/v3) takes no topology"),
    (["targets.7.vertex.machine.accelerator_count=4"], "targets[7] (scale point 2).vertex.machine.accelerator_count",
     "a3-highgpu-8g comes with exactly 8 x NVIDIA_H100_80GB"),  # a sweep point, named by the target it sweeps
    (["targets.7.backend=tensorflow", "targets.7.vertex.machine.accelerator_count=4"],
     "targets[7] (scale point 2).vertex.machine.accelerator_count", "a3-highgpu-8g comes with exactly 8 x "
     "NVIDIA_H100_80GB"),  # two machines on the TensorFlow lane: each checked as one is
    ([T.format(5) + "accelerator_type=TPU_V5_LITEPOD", T.format(5) + "accelerator_count=4"],
     "targets[5].vertex.machine.accelerator_type", "aiplatform_v1 has no accelerator label for it"),
    ([T.format(0) + "accelerator_count=32"], "targets[0].vertex.machine.accelerator_count",
     "cloud-tpu takes TPU_V3 x 8"),
    (["vertex.encryption_spec_key_name=projects/adrank-prod/locations/europe-west4/keyRings/k/cryptoKeys/p"],
     "vertex.encryption_spec_key_name", "the key is in 'europe-west4' but vertex.region is 'us-central1'"),
    (["vertex.tensorboard=projects/adrank-prod/locations/us-east1/tensorboards/1"], "vertex.tensorboard",
     "TensorBoard instance is in 'us-east1'"),
    (["preprocess.dataflow.region=europe-west1"], "preprocess.dataflow.region",
     "'europe-west1' is not vertex.region 'us-central1'"),
    (["preprocess.dataflow.subnetwork=regions/us-east1/subnetworks/adrank-dataflow"], "preprocess.dataflow.subnetwork",
     "the subnetwork is in 'us-east1'"),
    ([T.format(2) + "machine_type=g2-standard-24", T.format(2) + "accelerator_type=NVIDIA_L4"],
     "targets[2].vertex.machine.accelerator_count", "g2-standard-24 comes with exactly 2 x NVIDIA_L4"),
    ([T.format(2) + "machine_type=n1-standard-16", T.format(2) + "accelerator_type=NVIDIA_TESLA_T4",
      T.format(2) + "accelerator_count=8"], "targets[2].vertex.machine.accelerator_count", "takes 1, 2, 4"),
    # machine types and regions Vertex does not offer (configs/vertex_catalog.py: the table, its source and date)
    ([T.format(4) + "machine_type=n1-standard-7"], "targets[4].vertex.machine.machine_type",
     "'n1-standard-7' is not a machine type Vertex AI training offers; did you mean n1-standard-"),
    ([T.format(4) + "machine_type=e2-micro"], "targets[4].vertex.machine.machine_type",
     "'e2-micro' is not a machine type Vertex AI training offers"),
    (["targets.3.vertex.workers.machine.machine_type=n1-standard-5"], "targets[3].vertex.workers.machine.machine_type",
     "'n1-standard-5' is not a machine type Vertex AI training offers"),
    (["vertex.region=us-central2"], "vertex.region", "'us-central2' is not a region Vertex AI runs in; did you mean "
     "us-central1"),
    (["preprocess.dataflow.machine_type=n2-standard-7"], "preprocess.dataflow.machine_type",
     "'n2-standard-7' is not a predefined Compute Engine machine type"),
    ([T.format(1) + "machine_type=ct5p-hightpu-4t"], "targets[1].vertex.machine.machine_type",
     "is TPU v5p: Vertex AI training documents TPU v2/v3 (cloud-tpu), v5e (ct5lp-hightpu-*) and v6e "
     "(ct6e-standard-*) machines and no v4 or v5p machine type, and aiplatform_v1's AcceleratorType has no v5p label"),
]


@pytest.mark.parametrize("overrides, field, rule", BAD, ids=[case[1] + ":" + case[2][:24] for case in BAD])
def test_compile_refuses_what_vertex_would_refuse(overrides, field, rule, fake_vertex, tmp_path, capsys):
    fake, _ = fake_vertex
    output = tmp_path / "ranking.yaml"
    args = ["--config", str(VERTEX_CONFIG), *[a for o in overrides for a in ("--set", o)]]
    assert main(["compile", *args, "--backend", "vertex", "--output", str(output)]) == 2
    error = capsys.readouterr().err
    assert "Vertex would refuse this config (nothing was sent)" in error
    assert f"{field}: " in error and rule in error
    assert "[rule: " in error
    if "not a machine type" in rule or "not a region" in rule:  # the table's source and date
        assert "(configs/vertex_catalog.py, as of 2026-11-27)]" in error
    assert not output.exists()
    assert fake.requests == []


def test_submit_and_schedule_refuse_before_any_request(fake_vertex, capsys):
    fake, endpoint = fake_vertex
    bad = ["--config", str(VERTEX_CONFIG), "--set", T.format(2) + "accelerator_count=8"]
    assert main(["submit", *bad, "--api-endpoint", endpoint]) == 2
    assert main(["schedule", "create", *bad, "--api-endpoint", endpoint]) == 2
    assert main(["schedule", "update", *bad, "--api-endpoint", endpoint]) == 2
    errors = capsys.readouterr().err
    assert errors.count("targets[2].vertex.machine.accelerator_count") == 3
    assert fake.requests == []


@pytest.mark.parametrize("overrides", [
    ["targets.2.vertex.replica_count=2"],  # 2 × a2-highgpu-4g on the TensorFlow lane
    ["targets.7.backend=tensorflow"],  # 1 → 2 × a3-highgpu-8g (a sweep) on the TensorFlow lane
    ["targets.4.vertex.replica_count=3"],  # 3 × n1-standard-16 (CPU) on the TensorFlow lane
], ids=["a2-x2", "a3-sweep", "cpu-x3"])
def test_several_gpu_or_cpu_machines_pass_on_the_tensorflow_lane(overrides):
    config = load_config(VERTEX_CONFIG, overrides)
    assert any(t.backend == "tensorflow" and t.vertex is not None and t.vertex.machines > 1 for t in config.targets)
    assert config_problems(config) == []


def test_what_cannot_run_over_several_machines_still_fails_at_load_naming_the_field():
    for overrides, words in ((["targets.3.vertex.replica_count=2"], "synchronous replicas and parameter-server pools"),
                             (["targets.1.scale=null", "targets.1.vertex.replica_count=2"], "a TPU slice's hosts")):
        with pytest.raises(ValueError, match="replica_count") as error:
            load_config(VERTEX_CONFIG, overrides)
        assert words in str(error.value)


def test_every_problem_is_listed_at_once():
    config = load_config(VERTEX_CONFIG, [T.format(2) + "accelerator_count=8", "preprocess.dataflow.region=us-east1"])
    fields = [problem.field for problem in config_problems(config)]
    # the config's subnetwork (regions/us-central1/...) is then in another region than the Dataflow job, too
    assert fields == ["targets[2].vertex.machine.accelerator_count", "preprocess.dataflow.region",
                      "preprocess.dataflow.subnetwork"]


def test_the_production_example_passes():
    assert config_problems(load_config(VERTEX_CONFIG)) == []


GOOD = [
    MachineSpec(machine_type="n1-standard-16"),
    MachineSpec(machine_type="e2-standard-4"),
    MachineSpec(machine_type="n2-highmem-80"),
    MachineSpec(machine_type="c2-standard-60"),
    MachineSpec(machine_type="m1-ultramem-40"),
    MachineSpec(machine_type="n1-standard-8", accelerator_type="NVIDIA_TESLA_T4", accelerator_count=4),
    MachineSpec(machine_type="n1-standard-32", accelerator_type="NVIDIA_TESLA_V100", accelerator_count=8),
    MachineSpec(machine_type="a2-highgpu-8g", accelerator_type="NVIDIA_TESLA_A100", accelerator_count=8),
    MachineSpec(machine_type="a2-ultragpu-1g", accelerator_type="NVIDIA_A100_80GB", accelerator_count=1),
    MachineSpec(machine_type="a3-highgpu-8g", accelerator_type="NVIDIA_H100_80GB", accelerator_count=8),
    MachineSpec(machine_type="g2-standard-48", accelerator_type="NVIDIA_L4", accelerator_count=4),
    MachineSpec(machine_type="cloud-tpu", accelerator_type="TPU_V2", accelerator_count=8),
    MachineSpec(machine_type="ct5lp-hightpu-1t", tpu_topology="1x1"),
    MachineSpec(machine_type="ct5lp-hightpu-8t", tpu_topology="2x4"),
    MachineSpec(machine_type="ct5lp-hightpu-4t", accelerator_type="TPU_V5_LITEPOD", accelerator_count=4,
                tpu_topology="2x2"),
    # slices over several VMs (Cloud TPU's v5e and v6e pages): 4-chip VMs, one worker pool 0 replica each
    MachineSpec(machine_type="ct5lp-hightpu-4t", tpu_topology="4x4"),
    MachineSpec(machine_type="ct5lp-hightpu-4t", tpu_topology="16x16"),
    MachineSpec(machine_type="ct5lp-hightpu-4t", accelerator_type="TPU_V5_LITEPOD", accelerator_count=4,
                tpu_topology="8x8"),
]


@pytest.mark.parametrize("machine", GOOD, ids=[m.machine_type + ":" + str(m.accelerator_count) for m in GOOD])
def test_documented_machines_pass(machine):
    assert machine_problems(machine, "machine", chief=True) == []


MORE_BAD = [
    (MachineSpec(machine_type="a2-highgpu-4g"), "accelerator_type", "comes with 4 x NVIDIA_TESLA_A100"),
    (MachineSpec(machine_type="e2-standard-8", accelerator_type="NVIDIA_TESLA_T4", accelerator_count=1),
     "machine_type", "attaches only to N1"),
    (MachineSpec(machine_type="n1-standard-8", accelerator_type="NVIDIA_TESLA_K80", accelerator_count=1),
     "accelerator_type", "end of support"),
    (MachineSpec(machine_type="ct5lp-hightpu-4t"), "tpu_topology", "needs tpu_topology: 2x2"),
    # slices the config refuses at load (tests/configs/test_scaling.py), here as a spec made without its checks
    (MachineSpec.model_construct(machine_type="ct5lp-hightpu-8t", tpu_topology="2x2"), "tpu_topology",
     "ct5lp-hightpu-8t takes topology 2x4, or as ct5lp-hightpu-4t VMs a slice of 2x4, 4x4"),
    (MachineSpec.model_construct(machine_type="ct5lp-hightpu-1t", tpu_topology="8x8"), "machine_type",
     "which Vertex builds of 16 × ct5lp-hightpu-4t"),
    (MachineSpec(machine_type="n1-standard-8", tpu_topology="2x2"), "tpu_topology", "not a TPU machine type"),
    (MachineSpec(machine_type="cloud-tpu", accelerator_type="TPU_V5_LITEPOD", accelerator_count=8),
     "accelerator_type", "cloud-tpu takes TPU_V2 or TPU_V3"),
    (MachineSpec(machine_type="n1-standard-7", accelerator_type="NVIDIA_TESLA_T4", accelerator_count=1),
     "machine_type", "'n1-standard-7' is not a machine type Vertex AI training offers"),
    (MachineSpec(machine_type="ct4p-hightpu-4t", tpu_topology="2x2x1"), "machine_type", "is TPU v4: Vertex AI"),
    (MachineSpec(machine_type="cloud-tpu", accelerator_type="TPU_V4_POD", accelerator_count=8), "machine_type",
     "with TPU_V4_POD is TPU v4:"),
]


@pytest.mark.parametrize("machine, field, rule", MORE_BAD, ids=[case[2][:24] for case in MORE_BAD])
def test_more_refused_machines(machine, field, rule):
    problems = machine_problems(machine, "m", chief=True)
    assert len(problems) == 1 and problems[0].field == f"m.{field}" and rule in problems[0].message


def test_tpus_only_in_the_chief_pool():
    machine = MachineSpec(machine_type="ct5lp-hightpu-4t", tpu_topology="2x2")
    assert "chief pool only" in machine_problems(machine, "m", chief=False)[0].message


def test_accelerator_names_come_from_the_installed_api():
    from google.cloud.aiplatform_v1.types import AcceleratorType

    assert set(accelerator_names()) == set(AcceleratorType.__members__) - {"ACCELERATOR_TYPE_UNSPECIFIED"}


def test_multi_host_slices_are_accepted_with_their_vms_and_a_topology_no_generation_has_fails_at_load():
    for machine_type, topology, vms in (("ct5lp-hightpu-4t", "4x4", 4), ("ct6e-standard-4t", "8x8", 16),
                                        ("ct5lp-hightpu-4t", "16x16", 64), ("ct5lp-hightpu-8t", "2x4", 1)):
        machine = MachineSpec(machine_type=machine_type, tpu_topology=topology)
        assert machine_problems(machine, "m", chief=True, backend="jax") == [] and machine.tpu_vms == vms
    with pytest.raises(ValueError, match=r"tpu_topology: '3x3' is not a TPU v5e slice \(slices: 1x1, 2x2"):
        MachineSpec(machine_type="ct5lp-hightpu-4t", tpu_topology="3x3")
    with pytest.raises(Exception, match=r"targets.1.vertex.machine: .*tpu_topology: '2x2x2' is not a TPU v5e slice"):
        load_config(VERTEX_CONFIG, [T.format(1) + "tpu_topology=2x2x2"])


def test_tpu_v6e_is_accepted_on_the_jax_lane_and_refused_on_tensorflow_naming_backend():
    v6e = MachineSpec(machine_type="ct6e-standard-4t", tpu_topology="2x2")
    assert machine_problems(v6e, "targets[5].vertex.machine", chief=True, backend="jax") == []
    (problem,) = machine_problems(v6e, "targets[5].vertex.machine", chief=True, backend="tensorflow")
    assert problem.field == "targets[5].backend" and "set backend: jax" in problem.message
    assert config_problems(load_config(VERTEX_CONFIG)) == []  # configs/vertex.yaml's tpu-v6e-4 (backend: jax)
