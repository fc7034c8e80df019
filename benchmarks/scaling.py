"""A target swept over devices on each lane (`targets[].scale`, docs/scaling.md), side by side on the same blocks:
each point trained by the real trainer in a process of its own, as the local backend's train step runs it.

    .venv/bin/python benchmarks/scaling.py [--examples DIR] [--points 1 2 4] [--epochs 2] [--processes 2]
                                           [--lanes tensorflow jax]

Prints, per lane and point: the devices the runtime saw (simulated: slices of this host's CPU), processes, global
batch, steady train examples/s, speed-up and efficiency against point 1 (examples/s over the device ratio × point
1's), and the eval log-loss. Then each lane over `--processes` processes on 127.0.0.1, one CPU device each, from
the CLUSTER_SPEC and TF_CONFIG a CustomJob's replicas get (JAX: jax.distributed, gloo collectives; TensorFlow:
MultiWorkerMirroredStrategy in adrank's own loop, ring all-reduce over gRPC) against one process with as many
simulated devices, on the same examples: the log-loss of both (the same model, to float order) and the ratio of
their examples/s. `--points` with no value skips the sweep; `--lanes` picks the lanes of both parts. On this 2-core host, simulated devices share the cores: the figures show what the trainer's data
parallelism costs (collectives, sharded input), not what accelerators would buy. Without --examples it writes
synthetic blocks in the default config's shape (benchmarks/backends.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # (not benchmarks/: its modules would shadow libraries' imports of the same names)

from foundation.local_ports import LOOPBACK, free_local_ports  # noqa: E402 - the checkout is on sys.path from here

LANES = ("tensorflow", "jax")


def swept_config(lane: str, points: list[int], epochs: int, scale_batch: str):
    """The default config with one target of `lane` swept over `points` (user_id hashed into 4,000 buckets, as in
    configs/local.yaml)."""
    from configs import load_config

    config = load_config(None)
    values = config.model_dump()
    values["training"].update(epochs=epochs, input_capacity_seconds=0.5)
    values["targets"] = [{"name": "bench", "kind": "cpu", "backend": lane, "price_per_hour": 0.38, "scale": points,
                          "scale_batch": scale_batch}]
    values["retraining"] = {**values["retraining"], "target": "bench"}
    return type(config).model_validate(values)


def point_job(job: dict) -> dict:
    """Train one sweep point in this process (its own: JAX or TensorFlow builds its devices once per process)."""
    from components.train import lanes
    from configs.scaling import point_name
    from configs.slices import TrainStepConfig

    name = point_name("bench", job["factor"])
    config = TrainStepConfig.of(swept_config(job["lane"], job["points"], job["epochs"], job["scale_batch"]), name)
    run = lanes.train(config, name, 0, job["examples"], tempfile.mkdtemp())
    if run is None:
        return {}
    return {"devices": run.hardware.device_count, "processes": run.hardware.processes,
            "simulated": run.hardware.simulated, "batch": run.global_batch_size,
            "examples_per_second": run.examples_per_second, "logloss": run.metrics["engagement"].logloss}


def start(job: dict, cluster: dict[str, str] | None = None) -> subprocess.Popen:
    env = {key: value for key, value in os.environ.items() if key not in ("XLA_FLAGS", "CLUSTER_SPEC", "TF_CONFIG")}
    env.update({"PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2", "ADRANK_LOG_LEVEL": "WARNING", **(cluster or {})})
    return subprocess.Popen([sys.executable, __file__, "--job", json.dumps(job)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def result_of(process: subprocess.Popen) -> dict:
    out, err = process.communicate(timeout=1800)
    if process.returncode != 0:
        raise RuntimeError(f"a point failed ({process.returncode}):\n{err[-3000:]}")
    return json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[len("RESULT "):])


def cluster_environments(processes: int) -> list[dict[str, str]]:
    """What Vertex sets in each replica of a job of `processes` replicas (pool 0 the chief, pool 1 the others)."""
    addresses = [f"{LOOPBACK}:{port}" for port in free_local_ports(processes)]
    cluster = {"workerpool0": addresses[:1], **({"workerpool1": addresses[1:]} if processes > 1 else {})}
    tf_cluster = {"chief": addresses[:1], **({"worker": addresses[1:]} if processes > 1 else {})}
    environments = []
    for i in range(processes):
        pool, index = (0, 0) if i == 0 else (1, i - 1)
        environments.append({
            "CLUSTER_SPEC": json.dumps({"cluster": cluster, "environment": "cloud",
                                        "task": {"type": f"workerpool{pool}", "index": index}}),
            "TF_CONFIG": json.dumps({"cluster": tf_cluster, "environment": "cloud",
                                     "task": {"type": ("chief", "worker")[pool], "index": index}}),
        })
    return environments


def processes_against_one(lane: str, processes: int, epochs: int, examples: str) -> None:
    """`lane` over `processes` processes against one process with as many simulated devices, same examples."""
    job = {"lane": lane, "factor": processes, "points": [1, processes], "epochs": epochs, "scale_batch": "global",
           "examples": examples}
    replicas = [start(job, environment) for environment in cluster_environments(processes)]
    over_processes = [result_of(process) for process in replicas][0]
    in_one = result_of(start(job))
    how = {"jax": "jax.distributed, gloo", "tensorflow": "MultiWorkerMirroredStrategy, ring all-reduce"}[lane]
    print(f"\n{lane} lane, the global batch {in_one['batch']:,} over {processes} devices, same examples:")
    print(f"  {processes} processes ({how}, 1 CPU device each): "
          f"{over_processes['examples_per_second']:,.0f} examples/s, log-loss {over_processes['logloss']:.6f}")
    print(f"  1 process, {in_one['devices']} simulated devices: "
          f"{in_one['examples_per_second']:,.0f} examples/s, log-loss {in_one['logloss']:.6f}")
    print(f"  ratio (processes / one process): {over_processes['examples_per_second'] / in_one['examples_per_second']:.2f}×"
          f" examples/s; log-loss difference {over_processes['logloss'] - in_one['logloss']:+.2e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", help="blocks to train on (default: synthetic, in the default config's shape)")
    parser.add_argument("--points", type=int, nargs="*", default=[1, 2, 4], help="sweep points (none: no sweep)")
    parser.add_argument("--lanes", nargs="+", choices=LANES, default=list(LANES))
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--processes", type=int, default=2, help="processes on 127.0.0.1 per lane (0: skip)")
    parser.add_argument("--train-examples", type=int, default=65536)
    parser.add_argument("--job", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.job:
        print("RESULT " + json.dumps(point_job(json.loads(args.job))), flush=True)
        return
    examples = args.examples
    if examples is None:
        from components.train.synthetic_blocks import write_blocks

        examples = tempfile.mkdtemp(prefix="adrank-scaling-")
        write_blocks(examples, backends_module().default_shape(4000), args.train_examples, 15_000, seed=7,
                     block_examples=512)
    print(f"# {os.cpu_count()} CPUs on this host; points {args.points}, {args.epochs} epochs; blocks {examples}")
    if args.points:
        print("lane        point  devices          processes  batch   examples/s  speed-up  efficiency  log-loss")
    for lane in args.lanes if args.points else ():
        base = None
        for factor in args.points:  # one at a time: each point has the host's cores to itself
            job = {"lane": lane, "factor": factor, "points": args.points, "epochs": args.epochs,
                   "scale_batch": "per_device", "examples": examples}
            point = result_of(start(job))
            base = base or point
            speedup = point["examples_per_second"] / base["examples_per_second"]
            efficiency = speedup / (point["devices"] / base["devices"])
            devices = f"{point['devices']}" + (" (simulated)" if point["simulated"] else "")
            print(f"{lane:<11} ×{factor:<5} {devices:<16} {point['processes']:<10} {point['batch']:<7,} "
                  f"{point['examples_per_second']:>10,.0f}  {speedup:>7.2f}×  {efficiency:>9.0%}  "
                  f"{point['logloss']:.5f}")
    if args.processes > 1:
        for lane in args.lanes:
            processes_against_one(lane, args.processes, args.epochs, examples)


def backends_module():
    """benchmarks/backends.py, loaded by path (its shapes of the default config)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("backends_benchmark", Path(__file__).with_name("backends.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

if __name__ == "__main__":
    main()
