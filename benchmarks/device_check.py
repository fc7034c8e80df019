"""The project's device check: adrank's JAX lane — its real trainer, `components.train.lanes.train` — on whatever
accelerator JAX sees, with the figures a hardware comparison rests on: steady training examples/s (training steps
only, after compilation), step time, device memory, loss, and where the run's seconds went.

    python benchmarks/device_check.py kit [--out build/device]          # here: wheels the GPU machine lacks + blocks
    python benchmarks/device_check.py run [--blocks DIR] [--quick] [--cpu-figures FILE] [--json FILE]

`kit` gathers, into a git-ignored folder carried to the lent GPU machine (64 MiB at most), the Python 3.12 wheels
its image lacks for the JAX lane (versions from requirements-jax-gpu.lock) and training blocks in the default
config's shape written here (`components.train.synthetic_blocks`, the format preprocess writes). `run` trains these
points, the goal points first, until its time budget is spent (a point that fails is reported and the next one runs):

    criteo-*       a Criteo-shaped DCN-v2 (13 numeric + 26 categorical features, tables from 10k to 10M rows log-spaced,
                   embedding dim 16) on blocks written on the machine itself (~1.6M rows are too many to carry), at
                   global batches 65,536 and 8,192, bfloat16 and float32, and at 65,536 with every table at 10k rows
                   (table cost flat in rows)
    default-dcn    the default DCN-v2 on the carried blocks, the default batch (512), float32
    default-ple    PLE on the same blocks, bfloat16 where the device has it
    default-dcn-b8192  the default DCN-v2 at batch 8,192 on default-shaped blocks written on the machine

`--quick` shrinks every point (tables, rows, batches) to a CI-sized run on this CPU. `--cpu-figures` names a JSON this
script wrote on this machine (`--json`): each point then shows the device's examples/s as a ratio to the CPU's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KIT_WHEELS = ("keras", "keras-rs", "optree", "namex", "pyfarmhash", "pydantic", "pydantic-core", "annotated-types",
              "typing-inspection")
DEFAULT_TRAIN, DEFAULT_EVAL = 43_008, 15_000  # make run's split sizes
BUDGET_SECONDS = 360.0


@dataclass
class Point:
    name: str
    blocks: str  # "default" (carried) or "criteo"
    model: str = "dcn"
    batch: int = 512
    precision: str = "off"  # training.mixed_precision: off (float32) or on (bfloat16)
    table_rows: int = 10_000_000  # Criteo: the largest table (log-spaced from 10k)
    embedding_dim: int = 8
    epochs: int = 3
    target_kind: str | None = None  # the target's kind; None: what JAX sees (gpu, tpu, else cpu)
    plain: bool = False  # also fit the plain Keras DCN-v2 (benchmarks/plain_keras.py) on the same examples and batch


def points(quick: bool) -> list[Point]:
    if quick:
        return [Point("default-dcn", "default", epochs=1, batch=256, plain=True),
                Point("criteo-dcn-b1024-bf16", "criteo", batch=1024, precision="on", table_rows=20_000,
                      embedding_dim=8, epochs=1)]
    # The goal points first (a lent machine's time is short): the Criteo-shaped DCN-v2 at 65,536 in bfloat16 (the
    # 1M examples/s goal), the default DCN-v2 (the ratio to this CPU), the same Criteo point with 10k-row tables
    # (table cost in rows); then the rest of the grid.
    def criteo(batch: int, precision: str, table_rows: int = 10_000_000, plain: bool = False) -> Point:
        rows = "" if table_rows == 10_000_000 else f"-{table_rows // 1000}k-rows"
        return Point(f"criteo-dcn-b{batch}-{'bf16' if precision == 'on' else 'fp32'}{rows}", "criteo", batch=batch,
                     precision=precision, table_rows=table_rows, embedding_dim=16, epochs=2, plain=plain)

    return [criteo(65_536, "on", plain=True), Point("default-dcn", "default", plain=True),
            criteo(65_536, "on", table_rows=10_000),
            criteo(65_536, "off"), Point("default-ple", "default", model="ple", precision="auto"),
            criteo(8_192, "on"), criteo(8_192, "off"),
            Point("default-dcn-b8192", "default-large", batch=8_192, precision="auto", epochs=2)]


# -- the kit (here) -----------------------------------------------------------------------------------------------
def kit(out: Path) -> None:
    from components.images.locks import LOCKS
    from components.train.synthetic_blocks import write_blocks

    pins = next(lock for lock in LOCKS if lock.target == "jax-gpu").read()
    wheels = out / "wheels"
    shutil.rmtree(out, ignore_errors=True)
    wheels.mkdir(parents=True)
    for name in KIT_WHEELS:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                        "--python-version", "3.12", "--implementation", "cp", "--platform", "manylinux_2_28_x86_64",
                        "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64", "--platform",
                        "manylinux_2_5_x86_64", "--platform", "manylinux1_x86_64", "--platform", "manylinux_2_34_x86_64",
                        "-d", str(wheels), f"{name}=={pins[name]}"], check=True)
    write_blocks(out / "blocks", default_shape(), DEFAULT_TRAIN, DEFAULT_EVAL, seed=7, block_examples=512)
    size = sum(path.stat().st_size for path in out.rglob("*") if path.is_file())
    print(f"{out}: {len(list(wheels.iterdir()))} wheels and the default-shaped blocks, {size / 2**20:.1f} MiB")
    if size > 60 * 2**20:
        raise SystemExit(f"{out} is {size / 2**20:.1f} MiB: over what can be carried to the GPU machine with the repo")


def default_shape():
    from components.train.synthetic_blocks import BlockShape

    return BlockShape(categorical={"user_id": 4000, "ad_id": 404, "advertiser_id": 41, "ad_category": 21,
                                   "placement": 6, "device_os": 6, "country": 31},
                      numeric=["user_age", "ad_bid"], lists=(("user_interests", 61, 6),), positive_rate=0.15,
                      task="engagement")


def criteo_blocks(directory: Path, point: Point, quick: bool) -> Path:
    """Criteo-shaped blocks for `point` (written once per table size and batch): enough rows for `point.epochs`
    epochs of 24 steps."""
    from components.train.synthetic_blocks import criteo_shape, write_blocks

    path = directory / f"criteo-{point.table_rows}-{point.batch}"
    if not (path / "manifest.json").is_file():
        rows = point.batch * (12 if quick else 24)
        write_blocks(path, criteo_shape(point.table_rows), rows, max(point.batch, rows // 8), seed=5,
                     block_examples=min(8_192, point.batch))
    return path


# -- the run (there, and here for the ratio) ----------------------------------------------------------------------
def config_for(point: Point, manifest):
    """The default config trained by one JAX target on `point`'s model, batch and precision; features from the
    blocks' manifest (hashed ids, numeric inputs)."""
    from configs import AdrankConfig, load_config

    values = load_config(None).model_dump()
    features = []
    for feature in manifest.features:
        if feature.kind == "numeric":
            features.append({"name": feature.name, "kind": "numeric"})
        elif feature.kind == "categorical_list":
            features.append({"name": feature.name, "kind": "categorical_list", "encoding": "hash",
                             "hash_buckets": feature.table_rows - 1, "max_length": feature.length})
        else:
            features.append({"name": feature.name, "kind": "categorical", "encoding": "hash",
                             "hash_buckets": feature.table_rows})
    values["features"] = features
    values["tasks"] = [{"name": manifest.tasks[0], "event_type": "swipe", "attribution_window_seconds": 3600}]
    values["model"].update(kind=point.model, embedding_dim=point.embedding_dim)
    values["training"].update(global_batch_size=point.batch, epochs=point.epochs, mixed_precision=point.precision,
                              reference_batch_size=512, learning_rate_scaling="sqrt", warmup_steps=0,
                              input_capacity_seconds=1.0, checkpoint_every_minutes=60.0,
                              eval_sample_examples=point.batch * 4, shuffle_buffer=10**7,
                              # the figures in docs/backends.md were measured at 8 steps a call; a quick point
                              # (12 to 32 steps an epoch) needs a second call for a steady window
                              steps_per_execution=8,
                              min_train_steps=0)  # each point sizes its own epochs (a throughput, not a model)
    import jax

    seen = jax.default_backend()
    kind = point.target_kind or (seen if seen in ("gpu", "tpu") else "cpu")
    values["targets"] = [{"name": "device", "kind": kind, "backend": "jax", "price_per_hour": 0.0}]
    values["retraining"] = {**values["retraining"], "target": "device"}
    return AdrankConfig.model_validate(values)


def device_facts() -> dict:
    import jax
    import keras
    import keras_rs

    facts = {"python": platform.python_version(), "jax": jax.__version__, "keras": keras.__version__,
             "keras_rs": keras_rs.__version__, "devices": [f"{d.platform}:{d.device_kind}" for d in jax.devices()]}
    if shutil.which("nvidia-smi"):
        facts["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True, text=True).stdout.strip()
    return facts


def device_memory_peak() -> int | None:
    import jax

    stats = jax.devices()[0].memory_stats() or {}
    return stats.get("peak_bytes_in_use")


def run_point(point: Point, blocks: Path, work: Path) -> dict:
    """One point in this process (a child of `run`'s: its device memory peak is the point's own)."""
    from components.contracts.manifest import Manifest
    from components.train import lanes
    from components.train.backend_choice import select_backend
    from configs.slices import TrainStepConfig

    select_backend("jax")
    manifest = Manifest.read(blocks)
    config = TrainStepConfig.of(config_for(point, manifest), "device")
    started = time.perf_counter()
    summary = lanes.train(config, "device", 0, str(blocks), str(work / point.name))
    rate = summary.examples_per_second
    if not rate:
        return {"point": point.name, "failed": f"no steady window: {summary.steps} steps at "
                f"{summary.steps_per_execution} a call left nothing after the first call (start-up)"}
    split = summary.time_split
    result = {"point": point.name, "model": point.model, "batch": point.batch, "precision": point.precision,
              "largest_table_rows": max(f.table_rows or 0 for f in manifest.features),
              "hardware": summary.hardware.strategy, "device": summary.hardware.device_descriptions,
              "examples_per_second": rate, "step_ms": 1000 * point.batch / rate if rate else None,
              "device_memory_peak_bytes": device_memory_peak(),
              "train_loss": summary.curve[-1].loss if summary.curve else None,
              "eval_logloss": summary.metrics[manifest.tasks[0]].logloss, "steps": summary.steps,
              "steady_steps": split.steady_steps if split else None,
              "time_split": split.model_dump() if split else None, "seconds": time.perf_counter() - started,
              "facts": device_facts()}
    if point.plain:  # the straightforward baseline: same examples, batch, embedding width and precision
        import keras
        from plain_keras import fit_rate

        keras.mixed_precision.set_global_policy("mixed_bfloat16" if point.precision == "on" else "float32")
        model = config.model
        result["plain_examples_per_second"] = fit_rate(str(blocks), 3, point.batch, model.embedding_dim,
                                                       model.cross_layers, model.deep_layers,
                                                       config.training.learning_rate)
    return result


def run(args) -> None:
    """Every point in a child process of its own (`point`): a point's device memory peak is its own, a crash or an
    out-of-memory ends that point alone, and this process never holds the device."""
    started = time.perf_counter()
    cpu = {r["point"]: r for r in json.loads(Path(args.cpu_figures).read_text())["points"]} if args.cpu_figures else {}
    work = Path(tempfile.mkdtemp(prefix="adrank-device-check-"))
    default_blocks = Path(args.blocks) if args.blocks else None
    results: list[dict] = []
    failures: list[dict] = []
    facts: dict = {}
    backend = subprocess.run([sys.executable, "-c", "import jax; print(jax.default_backend())"], capture_output=True,
                             text=True, check=True).stdout.strip()  # in a child: this process never holds the device
    for point in points(args.quick):
        if args.points and point.name not in args.points:
            continue
        if not args.points and not args.quick and point.blocks == "criteo" and backend == "cpu":
            print(json.dumps({"point": point.name, "skipped": "no accelerator here (name it in --points to run it)"}))
            continue
        left = args.budget_seconds - (time.perf_counter() - started)
        if left <= 0:
            print(json.dumps({"point": point.name, "skipped": "the time budget is spent"}))
            continue
        blocks = point_blocks(point, work, default_blocks, args.quick)
        if point.blocks == "default":
            default_blocks = blocks
        if args.target_kind:
            point = replace(point, target_kind=args.target_kind, name=f"{point.name}-on-{args.target_kind}",
                            plain=False)  # the plain model would run on JAX's default device
        result = run_child(point, blocks, work, timeout=max(left, 120.0))
        if "failed" in result:
            failures.append(result)
            print(json.dumps(result))
            continue
        facts = result.pop("facts")
        if point.name in cpu and cpu[point.name]["examples_per_second"]:
            result["vs_cpu"] = result["examples_per_second"] / cpu[point.name]["examples_per_second"]
        results.append(result)
        print(json.dumps(result))
        if args.json:  # after every point: a run cut off by its time limit keeps what it measured
            Path(args.json).write_text(json.dumps({"device": facts, "points": results, "failed": failures}, indent=1))
    if results:
        print_table(facts, results)
    if failures:
        raise SystemExit(f"{len(failures)} point(s) failed: {', '.join(f['point'] for f in failures)}")


def point_blocks(point: Point, work: Path, default_blocks: Path | None, quick: bool) -> Path:
    from components.train.synthetic_blocks import write_blocks

    if point.blocks == "default":
        if default_blocks is None:
            default_blocks = work / "default"
            train = 8_192 if quick else DEFAULT_TRAIN
            write_blocks(default_blocks, default_shape(), train, train // 4, seed=7, block_examples=512)
        return default_blocks
    if point.blocks == "default-large":
        blocks = work / f"default-{point.batch}"
        write_blocks(blocks, default_shape(), point.batch * 24, point.batch * 4, seed=7, block_examples=4096)
        return blocks
    return criteo_blocks(work, point, quick)


def run_child(point: Point, blocks: Path, work: Path, timeout: float) -> dict:
    """`point` trained by a child process: its figures, or {"point", "failed"} with the reason."""
    command = [sys.executable, __file__, "point", json.dumps(asdict(point)), str(blocks), str(work)]
    try:
        completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"point": point.name, "failed": f"did not finish in {timeout:.0f} s"}
    finally:
        shutil.rmtree(work / point.name, ignore_errors=True)  # checkpoints of 10M-row tables are gigabytes
    lines = completed.stdout.strip().splitlines()
    if completed.returncode != 0 or not lines:
        return {"point": point.name, "failed": f"exit {completed.returncode}: {completed.stderr[-3000:]}"}
    return json.loads(lines[-1])


def print_table(facts: dict, results: list[dict]) -> None:
    print(f"\n{facts.get('nvidia_smi') or ', '.join(facts['devices'])}; jax {facts['jax']}, keras {facts['keras']}, "
          f"keras-rs {facts['keras_rs']}, Python {facts['python']}")
    print(f"{'point':<34} {'batch':>7} {'examples/s':>12} {'step ms':>8} {'mem GiB':>8} {'loss':>7} {'log-loss':>8} "
          f"{'vs CPU':>7} {'plain Keras':>12}")
    for r in results:
        memory = f"{r['device_memory_peak_bytes'] / 2**30:.2f}" if r["device_memory_peak_bytes"] else "—"
        ratio = f"{r['vs_cpu']:.1f}x" if "vs_cpu" in r else "—"
        plain = f"{r['plain_examples_per_second']:,.0f}" if "plain_examples_per_second" in r else "—"
        print(f"{r['point']:<34} {r['batch']:>7,} {r['examples_per_second']:>12,.0f} {r['step_ms']:>8.2f} {memory:>8} "
              f"{r['train_loss']:>7.4f} {r['eval_logloss']:>8.5f} {ratio:>7} {plain:>12}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command")
    kit_parser = commands.add_parser("kit", help="gather the wheels and blocks to carry to the GPU machine")
    kit_parser.add_argument("--out", default=str(ROOT / "build" / "device"))
    run_parser = commands.add_parser("run", help="train every point on the JAX lane and print the figures")
    run_parser.add_argument("--blocks", help="default-shaped blocks (kit's blocks/); default: written now")
    run_parser.add_argument("--quick", action="store_true", help="CI-sized points on this CPU")
    run_parser.add_argument("--cpu-figures", help="a JSON this script wrote on the CPU (--json): ratios per point")
    run_parser.add_argument("--json", help="write the figures to this JSON file")
    run_parser.add_argument("--budget-seconds", type=float, default=BUDGET_SECONDS)
    run_parser.add_argument("--points", nargs="*", help="only these points (default: all)")
    run_parser.add_argument("--target-kind", choices=("cpu", "gpu", "tpu"),
                            help="train a target of this kind (default: what JAX sees); `cpu` on a GPU machine "
                                 "measures that machine's CPU")
    point_parser = commands.add_parser("point", help=argparse.SUPPRESS)  # one point, in run's child process
    point_parser.add_argument("spec")
    point_parser.add_argument("blocks")
    point_parser.add_argument("work")
    args = parser.parse_args(sys.argv[1:] or ["run"])
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    if args.command == "kit":
        kit(Path(args.out))
    elif args.command == "point":
        print(json.dumps(run_point(Point(**json.loads(args.spec)), Path(args.blocks), Path(args.work))))
    else:
        run(args)


if __name__ == "__main__":
    main()
