"""How steady is this host's compute over windows as long as a run's steady training? A fixed piece of work (a float32
matrix product, numpy's BLAS on all cores) is repeated for `--seconds`, counted per `--tick` of the clock, and the
counts are added up into windows of each length in `--windows`: per window length, how much work a window held
against the median window, and the share of windows within 10% of it.

    .venv/bin/python benchmarks/host_noise.py [--seconds 60] [--tick 0.1] [--windows 0.1 0.3 1 3 10] [--size 300]

Nothing else of adrank runs: what varies is the host (other tenants of a shared VM, its scheduler, frequency). A
run's headline examples/s is its steps over its steady window (`RunClock`), so a window this short moves by as much
as this host's work in it does, whatever the trainer does; the report says so for windows under 2 s
(`components.report.findings.short_steady_window`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np


def ticks(seconds: float, tick: float, size: int) -> list[int]:
    """Matrix products finished in each `tick` of `seconds`."""
    matrix = np.random.default_rng(0).random((size, size), dtype=np.float32)
    counts = []
    for _ in range(max(1, round(seconds / tick))):
        started, done = time.perf_counter(), 0
        while time.perf_counter() - started < tick:
            matrix @ matrix
            done += 1
        counts.append(done)
    return counts


def windows_of(counts: list[int], per_window: int) -> list[int]:
    """Consecutive ticks added up `per_window` at a time (a last, partial window is left out)."""
    return [sum(counts[start:start + per_window]) for start in range(0, len(counts) - per_window + 1, per_window)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--tick", type=float, default=0.1)
    parser.add_argument("--windows", type=float, nargs="+", default=[0.1, 0.3, 1.0, 3.0, 10.0])
    parser.add_argument("--size", type=int, default=300)
    args = parser.parse_args()
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start; {args.seconds:.0f} s of "
          f"{args.size}x{args.size} float32 products, counted every {args.tick} s")
    counts = ticks(args.seconds, args.tick, args.size)
    print("window s  windows  lowest / median  10th percentile / median  highest / median  within 10% of median")
    for seconds in args.windows:
        work = windows_of(counts, max(1, round(seconds / args.tick)))
        if len(work) < 2:
            print(f"{seconds:>8.1f}  {len(work):>7}  (fewer than 2 windows in {args.seconds:.0f} s)")
            continue
        middle = statistics.median(work)
        tenth = float(np.percentile(work, 10))
        within = sum(abs(value / middle - 1) <= 0.1 for value in work)
        print(f"{seconds:>8.1f}  {len(work):>7}  {min(work) / middle:>15.2f}  {tenth / middle:>25.2f}  "
              f"{max(work) / middle:>16.2f}  {within / len(work):>20.0%}")
    print(f"# load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
