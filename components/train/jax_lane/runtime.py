"""The devices a JAX run trains on, read from `jax.devices()` (never from the target), and what follows from them:
data parallelism over every device of every process (several processes: `components.train.jax_lane.distributed`),
bfloat16 compute where the hardware has it, SparseCore tables where the TPU has SparseCore and `jax-tpu-embedding` is
installed.

    target gpu and JAX sees a GPU   → every GPU, the batch sharded over them
    target tpu and JAX sees a TPU   → every TPU core, the batch sharded over them
    otherwise                       → the CPU (a fallback only with allow_cpu_fallback)
"""

from __future__ import annotations

import importlib.util
import socket
from dataclasses import dataclass, field
from typing import Any

import jax
import keras

from components.contracts.run_summary import HardwareSeen
from components.train.failures import HardwareUnavailableError
from configs.training import TrainingConfig

PLATFORM_KINDS = {"cpu": "CPU", "gpu": "GPU", "cuda": "GPU", "rocm": "GPU", "tpu": "TPU"}
# JAX device kinds of TPUs with SparseCore, as keras-rs 0.4.0 recognises them (docs/backends.md)
SPARSECORE_DEVICE_KINDS = ("TPU v5", "TPU v5p", "TPU v6 lite", "TPU v6e", "TPU7x")


@dataclass
class JaxRuntime:
    """`devices`: every process's, in `jax.devices()` order (the data-parallel mesh)."""

    devices: list = field(default_factory=list)
    device_kind: str = "CPU"
    fallback_reason: str | None = None

    @property
    def replicas(self) -> int:
        return len(self.devices)

    @property
    def processes(self) -> int:
        return jax.process_count()

    @property
    def is_chief(self) -> bool:
        """Process 0: the one that evaluates and writes (checkpoints, weights, the run summary)."""
        return jax.process_index() == 0

    @property
    def local_positions(self) -> list[int]:
        """This process's devices' places in `devices` (the input streams it reads, `block_reader.TrainingRows`)."""
        index = jax.process_index()
        return [i for i, device in enumerate(self.devices) if device.process_index == index]

    @property
    def simulated(self) -> bool:
        """Several CPU devices in one process are JAX's forced host-platform devices, slices of one host's CPU."""
        return self.device_kind == "CPU" and len(self.local_positions) > 1

    @property
    def strategy_name(self) -> str:
        if self.processes > 1:
            return f"jax.jit data parallel over {self.replicas} devices of {self.processes} processes"
        return f"jax.jit data parallel over {self.replicas} devices" if self.replicas > 1 else "jax.jit on one device"

    @property
    def has_sparsecore(self) -> bool:
        """A TPU with SparseCore, and keras-rs's SparseCore implementation importable (`jax-tpu-embedding`)."""
        return (self.device_kind == "TPU" and any(kind in self.devices[0].device_kind
                                                   for kind in SPARSECORE_DEVICE_KINDS)
                and importlib.util.find_spec("jax_tpu_embedding") is not None)

    def check_placement(self, array: jax.Array) -> None:
        """The run summary's hardware is where the state is, read from the array: a state on other devices than the
        target's (JAX's default device, say) would make the report name hardware that did not train."""
        held = set(array.devices())
        if held != set(self.devices):
            raise RuntimeError(f"the training state is on {sorted(map(str, held))}, not on the target's devices "
                               f"{[str(device) for device in self.devices]}")

    def hardware_seen(self) -> HardwareSeen:
        return HardwareSeen(
            device_kind=self.device_kind,
            device_count=len(self.devices),
            device_names=[str(device) for device in self.devices],
            device_descriptions=sorted({device.device_kind for device in self.devices}),
            strategy=self.strategy_name,
            replicas=self.replicas,
            host=socket.gethostname(),
            processes=self.processes,
            simulated=self.simulated,
        )


def jax_runtime(target_kind: str, allow_cpu_fallback: bool = False) -> JaxRuntime:
    """The devices a target of `target_kind` trains on here, now."""
    wanted = {"gpu": "GPU", "tpu": "TPU"}.get(target_kind)
    if wanted is not None:
        try:
            devices = jax.devices(wanted.lower())
        except RuntimeError:
            devices = []
        if devices:
            return JaxRuntime(list(devices), wanted)
        reason = f"target kind '{target_kind}' but JAX sees no {wanted} (backend {jax.default_backend()})"
        if not allow_cpu_fallback:
            raise HardwareUnavailableError(f"{reason}; set allow_cpu_fallback: true on the target to train on CPU")
        return JaxRuntime(list(jax.devices("cpu")), "CPU", fallback_reason=reason)
    return JaxRuntime(list(jax.devices("cpu")), "CPU")


def set_precision_policy(training: TrainingConfig, runtime: JaxRuntime) -> str:
    """bfloat16 compute where the hardware has it (TPU, GPUs of compute capability ≥ 8), else float32; the policy."""
    policy = "float32"
    if training.mixed_precision == "on" or (
        training.mixed_precision == "auto" and (runtime.device_kind == "TPU" or _gpus_have_bfloat16(runtime))
    ):
        policy = "mixed_bfloat16"
    keras.mixed_precision.set_global_policy(policy)
    return policy


def _gpus_have_bfloat16(runtime: JaxRuntime) -> bool:
    if runtime.device_kind != "GPU":
        return False
    return all(_capability(device) >= (8, 0) for device in runtime.devices)


def _capability(device: Any) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in str(getattr(device, "compute_capability", "0.0")).split("."))
    except ValueError:
        return (0, 0)
