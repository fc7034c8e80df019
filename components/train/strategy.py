"""Which `tf.distribute` strategy to use, decided from the hardware present at run time.

    TF_CONFIG has a `ps` job          → ParameterServerStrategy (asynchronous; target kind cpu-ps)
    target tpu and a TPU answers      → TPUStrategy (over every host of a slice: the TPU cluster resolver's)
    TF_CONFIG has several workers     → MultiWorkerMirroredStrategy over every worker's GPUs (or its CPU), trained
                                        by adrank's own synchronous loop (`components.train.multi_worker`: Keras
                                        3.15's `fit` cannot start under it with the model's dict batches)
    GPUs visible (target gpu)         → MirroredStrategy over them
    several logical CPUs              → MirroredStrategy over them (a local sweep point's simulated devices:
                                        `simulate_cpu_devices`)
    otherwise                         → the default strategy on one device

A target whose hardware is absent fails with `HardwareUnavailableError` unless it allows a CPU fallback.
What the run saw (device kind, count, names, strategy, replicas) is read back from the runtime.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

import tensorflow as tf

from components.contracts.run_summary import HardwareSeen
from components.train.failures import HardwareUnavailableError
from components.train.local_cluster import LocalParameterServerCluster
from components.train.ps_server import serve_from_tf_config
from components.train.table_placement import TablePlacement, table_partitioner
from configs.training import TargetConfig, TrainingConfig


@dataclass
class Runtime:
    strategy: tf.distribute.Strategy
    device_kind: str
    device_names: list[str]
    device_descriptions: list[str] = field(default_factory=list)
    fallback_reason: str | None = None

    @property
    def strategy_name(self) -> str:
        if self.is_parameter_server:  # the public name, not the class behind it (ParameterServerStrategyV2)
            return "ParameterServerStrategy"
        if self.is_multi_worker:  # likewise (CollectiveAllReduceStrategy)
            return "MultiWorkerMirroredStrategy"
        return type(self.strategy).__name__

    @property
    def replicas(self) -> int:
        return int(self.strategy.num_replicas_in_sync)

    @property
    def is_parameter_server(self) -> bool:
        return isinstance(self.strategy, tf.distribute.experimental.ParameterServerStrategy)

    @property
    def is_tpu(self) -> bool:
        return isinstance(self.strategy, tf.distribute.TPUStrategy)

    @property
    def is_multi_worker(self) -> bool:
        return isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy)

    @property
    def processes(self) -> int:
        """The hosts that train the run: a TPU slice's (one process drives them all), the workers of a
        multi-worker run (each a process), else this one."""
        if self.is_multi_worker:
            return len(synchronous_workers(self.strategy.cluster_resolver.cluster_spec()))
        return int(self.strategy.extended.num_hosts) if self.is_tpu else 1

    @property
    def is_chief(self) -> bool:
        """Whether this process writes the run's outputs: always, but in a multi-worker run, where the chief does
        (TF_CONFIG's `chief` task, or worker 0 in a cluster without one)."""
        return not self.is_multi_worker or bool(self.strategy.extended.should_checkpoint)

    @property
    def simulated(self) -> bool:
        """CPU devices beyond the host's physical CPUs are logical CPUs, slices of one host's CPU (of this
        worker's own, in a multi-worker run, where the other workers' devices are listed too)."""
        logical = tf.config.list_logical_devices("CPU")
        if self.is_multi_worker:
            logical = worker_devices(self.strategy.cluster_resolver, "CPU")
        return self.device_kind == "CPU" and len(logical) > len(tf.config.list_physical_devices("CPU"))

    def hardware_seen(self) -> HardwareSeen:
        return HardwareSeen(
            device_kind=self.device_kind,
            device_count=len(self.device_names),
            device_names=self.device_names,
            device_descriptions=self.device_descriptions,
            strategy=self.strategy_name,
            replicas=self.replicas,
            host=socket.gethostname(),
            processes=self.processes,
            simulated=self.simulated,
        )


def cluster_from_env() -> tf.distribute.cluster_resolver.TFConfigClusterResolver:
    """The cluster and task TF_CONFIG names (an empty cluster and no task without TF_CONFIG)."""
    return tf.distribute.cluster_resolver.TFConfigClusterResolver()


def cluster_jobs() -> dict[str, list[str]]:
    """TF_CONFIG's cluster as {job: [address, ...]} ({} without TF_CONFIG)."""
    cluster = cluster_from_env().cluster_spec()
    return {job: cluster.job_tasks(job) for job in cluster.jobs}


def simulate_cpu_devices(count: int) -> None:
    """`count` logical CPUs in this process (a local sweep point's simulated devices,
    `components.train.simulated_devices`): before TensorFlow initializes its runtime."""
    if count <= 1:
        return
    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * count)
    except RuntimeError as error:
        raise RuntimeError(f"a sweep point of {count} simulated devices found TensorFlow's runtime initialized "
                           f"already ({error}): it trains in a process of its own (the train step's)") from None


def runtime_for(target_kind: str, allow_cpu_fallback: bool = False) -> Runtime:
    """The strategy and devices for a target of `target_kind` on this machine, now."""
    cluster = cluster_jobs()
    if cluster.get("ps"):
        return _parameter_server_runtime(cluster_from_env())
    if target_kind == "cpu-ps":
        return _fallback_or_fail(
            "target kind 'cpu-ps' needs TF_CONFIG with a 'ps' job (parameter servers)", allow_cpu_fallback
        )
    if target_kind == "tpu":
        try:
            return _tpu_runtime()
        except HardwareUnavailableError as error:
            return _fallback_or_fail(str(error), allow_cpu_fallback)
    if len(cluster.get("worker", [])) + len(cluster.get("chief", [])) > 1:
        return _multi_worker_runtime(target_kind, allow_cpu_fallback)
    gpus = tf.config.list_logical_devices("GPU")
    if target_kind == "gpu" and not gpus:
        return _fallback_or_fail("target kind 'gpu' but TensorFlow sees no GPU", allow_cpu_fallback)
    if gpus:
        strategy = tf.distribute.MirroredStrategy([d.name for d in gpus])
        return Runtime(strategy, "GPU", [d.name for d in gpus], _gpu_descriptions())
    return _cpu_runtime()


def _cpu_runtime(fallback_reason: str | None = None) -> Runtime:
    cpus = tf.config.list_logical_devices("CPU")
    if len(cpus) > 1:
        strategy: tf.distribute.Strategy = tf.distribute.MirroredStrategy([d.name for d in cpus])
    else:
        strategy = tf.distribute.get_strategy()
    return Runtime(strategy, "CPU", [d.name for d in cpus], fallback_reason=fallback_reason)


def synchronous_workers(cluster: tf.train.ClusterSpec) -> list[str]:
    """The addresses of a multi-worker cluster's training tasks: the chief's, then the workers'."""
    return [address for job in ("chief", "worker") if job in cluster.jobs for address in cluster.job_tasks(job)]


def worker_devices(resolver, kind: str) -> list:
    """This worker's logical devices of `kind` (under MultiWorkerMirroredStrategy the list holds every worker's)."""
    this = f"/job:{resolver.task_type}/replica:0/task:{resolver.task_id}/"
    return [d for d in tf.config.list_logical_devices(kind) if d.name.startswith(this)]


def _multi_worker_runtime(target_kind: str, allow_cpu_fallback: bool) -> Runtime:
    """MultiWorkerMirroredStrategy over TF_CONFIG's chief and workers, each replica one of a worker's GPUs (or its
    CPU): created before anything else starts TensorFlow's runtime (as `runtime_for` is). Collectives go by NCCL
    between GPUs, by ring all-reduce over gRPC between CPUs (TensorFlow's choice for `AUTO`). A `gpu` target whose
    workers have no GPU trains on their CPUs only when it allows the fallback (every worker falls back alike)."""
    fallback_reason = None
    device_kind = "GPU" if tf.config.list_physical_devices("GPU") else "CPU"
    if target_kind == "gpu" and device_kind == "CPU":
        fallback_reason = _fallback_allowed("target kind 'gpu' but TensorFlow sees no GPU", allow_cpu_fallback)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    resolver = strategy.cluster_resolver
    cluster = resolver.cluster_spec()
    workers = [f"/job:{job}/replica:0/task:{index}" for job in ("chief", "worker") if job in cluster.jobs
               for index in range(cluster.num_tasks(job))]
    local = [d.name.rsplit("/", 1)[-1] for d in worker_devices(resolver, device_kind)]
    local = local if device_kind == "GPU" else local[:1]  # a worker's replica on CPU: its one CPU device
    # every worker runs the same machine type (one worker pool spec after the chief's), so the names follow
    names = [f"{worker}/{device}" for worker in workers for device in local]
    descriptions = _gpu_descriptions() if device_kind == "GPU" else []
    return Runtime(strategy, device_kind, names, descriptions * len(workers), fallback_reason=fallback_reason)


def _fallback_or_fail(reason: str, allow_cpu_fallback: bool) -> Runtime:
    return _cpu_runtime(fallback_reason=_fallback_allowed(reason, allow_cpu_fallback))


def _fallback_allowed(reason: str, allow_cpu_fallback: bool) -> str:
    """`reason`, when the target lets the run fall back to CPU; else the error that names the setting."""
    if not allow_cpu_fallback:
        raise HardwareUnavailableError(f"{reason}; set allow_cpu_fallback: true on the target to train on CPU")
    return reason


def _gpu_descriptions() -> list[str]:
    descriptions = []
    for gpu in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(gpu)
        descriptions.append(str(details.get("device_name", gpu.name)))
    return descriptions


def _tpu_runtime() -> Runtime:
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=os.environ.get("TPU_NAME", "local"))
        tf.config.experimental_connect_to_cluster(resolver)
        topology = tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, RuntimeError, tf.errors.OpError) as error:
        raise HardwareUnavailableError(f"target kind 'tpu' but no TPU was found: {error}") from error
    strategy = tf.distribute.TPUStrategy(resolver)
    tpus = tf.config.list_logical_devices("TPU")
    description = f"TPU topology {list(topology.mesh_shape)}, {topology.num_tasks} host(s)"
    return Runtime(strategy, "TPU", [d.name for d in tpus], [description])


def _parameter_server_runtime(resolver: tf.distribute.cluster_resolver.TFConfigClusterResolver) -> Runtime:
    """This process is the coordinator: TF_CONFIG must name it task `chief` in a cluster with a `chief` job
    (the workers and ps are `tf.distribute.Server`s that filter their devices to `/job:chief`)."""
    cluster = cluster_jobs()
    task_type = resolver.task_type or "chief"  # no task in TF_CONFIG: this process is the coordinator
    if task_type != "chief" or not cluster.get("chief") or not cluster.get("worker"):
        task = {"type": resolver.task_type, "index": resolver.task_id}
        raise HardwareUnavailableError(
            "a parameter-server run trains from the coordinator: TF_CONFIG needs task type 'chief' and a cluster "
            f"with 'chief', 'worker' and 'ps' jobs (got task {task!r}, jobs {sorted(cluster)}); workers and "
            "ps run tf.distribute.Server, not train()"
        )
    resolver.task_type, resolver.task_id = "chief", resolver.task_id or 0
    resolver.rpc_layer = resolver.rpc_layer or "grpc"
    # large embedding tables are split over the ps tasks by TensorFlow (`table_placement`); nothing else is
    strategy = tf.distribute.experimental.ParameterServerStrategy(resolver, variable_partitioner=table_partitioner)
    workers = [f"/job:worker/replica:0/task:{i}" for i in range(len(cluster["worker"]))]
    return Runtime(strategy, "CPU", workers, [f"{len(cluster['ps'])} parameter server(s)"])


def table_placement(training: TrainingConfig, runtime: Runtime) -> TablePlacement:
    """Large embedding tables: in host memory on GPU (the dense part stays on the GPU's replicas), split over
    every parameter server in a ps cluster; elsewhere (CPU, TPU, GPUs over several workers) left as they are."""
    ps_tasks = len(cluster_jobs().get("ps", [])) if runtime.is_parameter_server else 0
    one_host = not isinstance(runtime.strategy, tf.distribute.MultiWorkerMirroredStrategy)
    return placement_rule(training, runtime.device_kind if one_host else "multi-worker", ps_tasks)


def placement_rule(training: TrainingConfig, device_kind: str, ps_tasks: int) -> TablePlacement:
    return TablePlacement(
        host_table_bytes=training.host_table_bytes if device_kind == "GPU" else None,
        shards=max(1, ps_tasks),
        shard_bytes=training.ps_table_shard_bytes if ps_tasks > 1 else None,
    )


def parameter_server_role() -> str | None:
    """'worker' or 'ps' when TF_CONFIG makes this process a server of a parameter-server cluster, else None."""
    resolver = cluster_from_env()
    if "ps" in resolver.cluster_spec().jobs and resolver.task_type in ("worker", "ps"):
        return resolver.task_type
    return None


def serve_parameter_server_task() -> None:
    """Run this replica as a gRPC server of the parameter-server cluster until the job ends.

    On Vertex a `cpu-ps` CustomJob runs the same command in every pool; the chief (pool 0) coordinates
    and the job finishes when it does, so workers and parameter servers only serve.
    """
    serve_from_tf_config()


def local_cluster_for(target: TargetConfig, log_dir: str | Path) -> LocalParameterServerCluster | None:
    """The cluster a `cpu-ps` target needs when no one else started one (no `ps` job in TF_CONFIG: the local
    backend); None for every other target, and on Vertex or under an executor that sets TF_CONFIG."""
    if target.kind != "cpu-ps" or cluster_jobs().get("ps"):
        return None
    shape = target.local_cluster_shape()
    return LocalParameterServerCluster(shape.workers, shape.parameter_servers, log_dir)
