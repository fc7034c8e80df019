"""Does a run's headline train examples/s match what its step does? The default config's train step, run after run
on the same blocks, for each lane and each settings variant: the headline (steady training steps, input waits
included, `RunSummary.examples_per_second`) against the same step fed from batches held in memory right after
training (`step_examples_per_second`: the memory rounds' steps over their seconds, as the headline is taken), and
how long the steady window was; beside it the ratio against the median memory round instead (the step's own rate
before 2026-11-29), computed from the same rounds.

    .venv/bin/python benchmarks/train_clock.py [--examples DIR] [--repeats 3] [--lanes cpu cpu-jax]
        [--variant NAME=dotted.key=value,...] ...

Each run trains in a process of its own, as the local backend's train step does; the variants take turns (run 1 of
every variant, then run 2, ...), so a burst of load on this shared host falls on all of them alike. Prints per run:
the headline, the step's own rate, their ratio, the input stall and the steady window; then per lane and variant the
median of each, and each variant's median headline against the first variant's. Without --examples it writes
synthetic blocks in the default config's shape (benchmarks/backends.py) with the default run's train split size.
"""

from __future__ import annotations

import argparse
import os
import runpy
import statistics
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # (not benchmarks/: its modules would shadow libraries' imports of the same names)


def parse_variant(text: str) -> tuple[str, list[str]]:
    """'spe32=training.steps_per_execution=32,training.epochs=3' → ('spe32', [...]); 'default' → no overrides."""
    name, _, overrides = text.partition("=")
    return name, [item for item in overrides.split(",") if item]


def one_run(target: str, overrides: list[str], examples: str, run_index: int) -> dict:
    """Train `target` once in this (fresh) process; the figures of its run summary."""
    import statistics

    from components.train import lanes
    from components.train.input_capacity import PairedRounds
    from configs import load_config
    from configs.slices import TrainStepConfig

    seen: list[PairedRounds] = []
    throughput = PairedRounds.memory_seconds_per_step

    def kept(rounds: PairedRounds) -> float | None:  # the run's rounds, to read them the other way too
        seen.append(rounds)
        return throughput(rounds)

    PairedRounds.memory_seconds_per_step = kept  # type: ignore[method-assign]
    config = load_config(None, overrides=overrides)
    run = lanes.train(TrainStepConfig.of(config, target), target, run_index, examples, tempfile.mkdtemp())
    assert run is not None and run.time_split is not None
    split = run.time_split
    median_round = (config.training.global_batch_size / statistics.median(seen[-1].memory)
                    if seen and seen[-1].memory else None)
    return {"headline": run.examples_per_second, "step": run.step_examples_per_second, "step_median": median_round,
            "stall": run.input_stall_fraction, "window": split.training + split.input_wait,
            "steady_steps": split.steady_steps, "steps_per_execution": run.steps_per_execution}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", help="blocks to train on (default: synthetic, in the default config's shape)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lanes", nargs="+", default=["cpu", "cpu-jax"], help="targets of configs/local.yaml")
    parser.add_argument("--variant", action="append", default=[],
                        help="NAME=dotted.key=value,... (repeatable; default: the config as shipped)")
    parser.add_argument("--train-examples", type=int, default=44_544)
    args = parser.parse_args()
    variants = [parse_variant(text) for text in (args.variant or ["default"])]
    examples = args.examples
    if examples is None:
        from components.train.synthetic_blocks import write_blocks

        examples = tempfile.mkdtemp(prefix="adrank-train-clock-")
        default_shape = runpy.run_path(str(Path(__file__).with_name("backends.py")))["default_shape"]
        write_blocks(examples, default_shape(4000), args.train_examples, 15_000, seed=7,
                     block_examples=512)
    os.environ.update({"TF_CPP_MIN_LOG_LEVEL": "2", "ADRANK_LOG_LEVEL": "WARNING"})
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; blocks {examples}; "
          f"{args.repeats} runs per lane and variant, taking turns")
    print("lane      variant        run  spe  headline ex/s  step ex/s  headline/step  stall  window s  "
          "headline/median round")
    results: dict[tuple[str, str], list[dict]] = {}
    spawn = get_context("spawn")
    for repeat in range(args.repeats):
        for lane in args.lanes:
            for name, overrides in variants:
                with ProcessPoolExecutor(1, mp_context=spawn) as pool:  # a fresh process: Keras picks its backend once
                    run = pool.submit(one_run, lane, overrides, examples, repeat).result()
                results.setdefault((lane, name), []).append(run)
                ratio = run["headline"] / run["step"] if run["step"] else float("nan")
                by_median = run["headline"] / run["step_median"] if run["step_median"] else float("nan")
                stall = "—" if run["stall"] is None else f"{run['stall']:.0%}"
                print(f"{lane:<9} {name:<14} {repeat:<4} {run['steps_per_execution']:<4} {run['headline']:>13,.0f}  "
                      f"{run['step'] or 0:>9,.0f}  {ratio:>13.2f}  {stall:>5}  {run['window']:>8.2f}  "
                      f"{by_median:>21.2f}", flush=True)
    print("\nmedians per lane and variant (headline vs the first variant's, same lane)")
    for lane in args.lanes:
        first = None
        for name, _ in variants:
            runs = results[(lane, name)]
            headline = statistics.median(run["headline"] for run in runs)
            ratios = [run["headline"] / run["step"] for run in runs if run["step"]]
            by_median = [run["headline"] / run["step_median"] for run in runs if run["step_median"]]
            first = first or headline
            within = sum(0.9 <= ratio <= 1.1 for ratio in ratios)
            print(f"{lane:<9} {name:<14} headline {headline:>10,.0f} ex/s ({headline / first:.2f}x)  "
                  f"headline/step median {statistics.median(ratios) if ratios else float('nan'):.2f}, "
                  f"{within} of {len(ratios)} runs within 10%  window median "
                  f"{statistics.median(run['window'] for run in runs):.2f} s  (against the median round: "
                  f"{statistics.median(by_median) if by_median else float('nan'):.2f}, "
                  f"{sum(0.9 <= ratio <= 1.1 for ratio in by_median)} of {len(by_median)} within 10%)")


if __name__ == "__main__":
    main()
