"""What each point of a target's scaling sweep trains on (`targets[].scale: [1, 2, 4, ...]`).

When the config loads, a swept target becomes one target per point, so the DAG, the Vertex compile, the cost
preview and the report treat a point as any other target:

    name (factor 1, the reference), name-x2, name-x4, ...    scale_point: (of=name, factor=N)
    global batch    per_device: N × the target's (each device keeps its batch; the learning rate follows
                    training.learning_rate_scaling from it); global: the target's, split over N times the devices
    Vertex machines TPU v5e / v6e: the slice of N times the chips (`configs.vertex_catalog`: its machine type and
                    topology; a slice over several VMs is worker pool 0 with one replica per VM); GPU or CPU machines:
                    N times `vertex.replica_count`; TPU v2/v3 (the 8-core cloud-tpu device): no larger slice
    price_per_hour  N × the target's (the whole machine set)
    expected_hours  the target's / N (perfect scaling: the cost preview says so)

A point whose global batch does not split over its devices, or whose slice the TPU generation does not have, fails
here, naming `targets.<i>.scale`. Locally a CPU point trains on N simulated devices (the train step's own process,
`components.train.simulated_devices`).
"""

from __future__ import annotations

from configs.training import (
    BATCH_REASON,
    MAX_BATCH_SIZE,
    ScalePoint,
    TargetConfig,
    TrainingConfig,
    effective_batch_size,
)
from configs.vertex import VertexTargetSpec
from configs.vertex_catalog import TPU_SLICE_TOPOLOGIES, slice_chips, tpu_generation, tpu_slice_of
from configs.vertex_names import target_name_problem


def point_name(target: str, factor: int) -> str:
    """The name of a sweep point: the target's own for factor 1, else `<target>-x<factor>`."""
    return target if factor == 1 else f"{target}-x{factor}"


def scale_points(targets: list[TargetConfig], training: TrainingConfig) -> list[TargetConfig]:
    """`targets` with every swept target replaced by its points, in place and in factor order."""
    expanded: list[TargetConfig] = []
    for index, target in enumerate(targets):
        if not target.scale:
            expanded.append(target)
            continue
        expanded += [sweep_point(target, factor, training, f"targets.{index}.scale") for factor in target.scale]
    return expanded


def sweep_point(target: TargetConfig, factor: int, training: TrainingConfig, field: str) -> TargetConfig:
    """The target that point `factor` of `target`'s sweep trains (see the module docstring)."""
    name = point_name(target.name, factor)
    problem = target_name_problem(name)
    if problem:
        raise ValueError(f"{field}: point {factor}: {problem}")
    batch = effective_batch_size(training, target)
    if target.scale_batch == "per_device":
        point_batch = batch * factor
        if point_batch > MAX_BATCH_SIZE:
            raise ValueError(f"{field}: point {factor} would train a global batch of {point_batch:,} ({factor} × "
                             f"{batch:,}), over {MAX_BATCH_SIZE:,}: {BATCH_REASON}")
    else:
        point_batch = batch
        if batch % factor:
            raise ValueError(f"{field}: point {factor} does not divide the global batch {batch:,} (scale_batch: "
                             "global splits it over the point's devices)")
    vertex = scaled_vertex_spec(target.vertex, factor, field) if target.vertex is not None else None
    if vertex is not None:
        devices = vertex_devices(vertex)
        if point_batch % devices:
            raise ValueError(f"{field}: point {factor}'s global batch {point_batch:,} does not split over its "
                             f"{devices} devices ({describe_machines(vertex)})")
    return target.model_copy(update={
        "name": name, "global_batch_size": point_batch, "price_per_hour": target.price_per_hour * factor,
        "vertex": vertex, "scale": None, "scale_point": ScalePoint(of=target.name, factor=factor,
                                                                   batch=target.scale_batch),
    })


def scaled_vertex_spec(spec: VertexTargetSpec, factor: int, field: str) -> VertexTargetSpec:
    """The machines of point `factor`: the TPU slice of `factor` times the chips, or `factor` times the machines."""
    hours = {"expected_hours": spec.expected_hours / factor} if "expected_hours" in spec.model_fields_set else {}
    if factor == 1:
        return spec
    machine = spec.machine
    if not machine.is_tpu:
        return spec.model_copy(update={"replica_count": spec.replica_count * factor, **hours})
    generation = tpu_generation(machine.machine_type)
    if generation == "v2/v3":
        raise ValueError(f"{field}: '{machine.machine_type}' is TPU v2/v3, which Vertex trains only as the 8-core "
                         "cloud-tpu device, so it has no larger slice; sweep a TPU v5e (ct5lp-hightpu-4t) or v6e "
                         "(ct6e-standard-4t) target")
    if generation not in TPU_SLICE_TOPOLOGIES:
        return spec  # not a TPU machine Vertex training offers: the preflight says so, for every point
    chips = slice_chips(machine.tpu_topology or "")
    if chips is None:
        raise ValueError(f"{field}: '{machine.machine_type}' needs a tpu_topology to be scaled")
    slice_ = tpu_slice_of(generation, chips * factor)
    if slice_ is None:
        sizes = ", ".join(str(count) for count in TPU_SLICE_TOPOLOGIES[generation].values())
        raise ValueError(f"{field}: point {factor} needs a TPU {generation} slice of {chips * factor} chips "
                         f"({factor} × {machine.tpu_topology}); TPU {generation} slices have {sizes} chips")
    machine_type, topology = slice_
    same_vm = machine_type == machine.machine_type
    scaled = machine.model_copy(update={
        "machine_type": machine_type, "tpu_topology": topology,
        "accelerator_type": machine.accelerator_type if same_vm else None,
        "accelerator_count": machine.accelerator_count if same_vm else 0,
    })
    return spec.model_copy(update={"machine": scaled, **hours})


def vertex_devices(spec: VertexTargetSpec) -> int:
    """The accelerators (data-parallel replicas) one run on these machines trains on: a TPU slice's chips (a TPU v2/v3
    device's 8 cores), GPUs × machines, or one per CPU machine."""
    machine = spec.machine
    if machine.is_tpu and machine.tpu_topology:
        return slice_chips(machine.tpu_topology) or 1
    return max(1, machine.accelerator_count) * spec.machines


def describe_machines(spec: VertexTargetSpec) -> str:
    machine = spec.machine
    parts = [f"{spec.machines} × {machine.machine_type}" if spec.machines > 1 else machine.machine_type]
    if machine.tpu_topology:
        parts.append(f"topology {machine.tpu_topology}")
    elif machine.accelerator_type:
        parts.append(f"{machine.accelerator_count} × {machine.accelerator_type} each")
    return ", ".join(parts)


def configured_index(targets: list[TargetConfig], position: int) -> int:
    """The index in the config file of the target at `position` of the loaded (swept) list: every point of a sweep
    is the one entry `targets.<i>` that declared it."""
    return sum(1 for target in targets[:position + 1]
               if target.scale_point is None or target.scale_point.factor == 1) - 1


def configured_field(targets: list[TargetConfig], position: int) -> str:
    """How the config file names the target at `position` of the loaded (swept) list: `targets[i]` at its index in
    the file, and for a sweep point other than the first `targets[i] (scale point N)`."""
    point = targets[position].scale_point
    return (f"targets[{configured_index(targets, position)}]"
            + (f" (scale point {point.factor})" if point is not None and point.factor > 1 else ""))
