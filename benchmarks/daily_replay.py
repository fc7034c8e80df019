"""`adrank retrain` as a user runs it, timed day by day: where a replayed day's time goes, and its decisions.

    .venv/bin/python benchmarks/daily_replay.py [--days 3] [--config FILE] [--set dotted.key=value ...]

Runs the replay in a temporary runs directory (the same flow as tests/e2e/test_replay.py, by default on its tiny
days), then prints per day: seconds per DAG step (from the progress lines `adrank retrain` prints), the day's total, the decision and
warm/cold, and each day's time as a ratio to day 1 (cold, no champion to score).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINY_DAYS = [
    "logs.synthetic.days=3", "logs.synthetic.impressions_per_day=2000", "logs.synthetic.users=300",
    "logs.synthetic.ads=60", "logs.synthetic.advertisers=10", "logs.lookback_days=2",
    "preprocess.direct_running_mode=in_memory", "preprocess.direct_num_workers=1", "preprocess.output_shards=1",
    "training.epochs=1", "training.global_batch_size=256", "runs_per_target=1", "training.warm_start=champion",
    "targets=[{name: cpu, kind: cpu, price_per_hour: 0.38}]",
]
STEP = re.compile(r"[✓✗] (.+?): \w+ \((\d+) s\)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--config", default=None, help="default: the embedded config with the e2e test's tiny days")
    parser.add_argument("--set", dest="overrides", action="append", default=None)
    args = parser.parse_args()
    overrides = args.overrides if args.overrides is not None else ([] if args.config else TINY_DAYS)
    runs_dir = Path(tempfile.mkdtemp(prefix="adrank-replay-bench-"))
    command = [sys.executable, "-m", "ops.cli", "retrain", "--days", str(args.days), "--runs-dir", str(runs_dir),
               "--replay-id", "bench", *(["--config", args.config] if args.config else [])]
    for override in overrides:
        command += ["--set", override]
    started = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    total = time.perf_counter() - started
    if result.returncode != 0:
        print(result.stdout[-3000:], result.stderr[-3000:], sep="\n")
        return result.returncode
    series = json.loads((runs_dir / "bench" / "replay.json").read_text())
    steps_per_day = []
    for output in re.split(r"^day \d+/\d+: .*$", result.stdout, flags=re.M)[1:]:  # each day's step lines
        steps: dict[str, int] = {}
        for name, seconds in STEP.findall(output):
            kind = name.split(" · ")[0]
            steps[kind] = steps.get(kind, 0) + int(seconds)
        steps_per_day.append(steps)
    names = list(dict.fromkeys(name for steps in steps_per_day for name in steps))
    print(f"adrank retrain --days {args.days}: {total:.0f} s in all; runs in {runs_dir}")
    print(" ".join(f"{h:>14}" for h in ["day", *names, "day total", "vs day 1", "start", "decision"]))
    first = series["days"][0]["seconds"]
    for day, steps in zip(series["days"], steps_per_day):
        decision = day["decision"]
        verdict = "promoted" if decision["promoted"] else "kept champion"
        cells = [str(day["day"]), *(f"{steps.get(n, 0)} s" for n in names), f"{day['seconds']:.0f} s",
                 f"{day['seconds'] / first:.2f}x", "warm" if day["warm_start"] else "cold", verdict]
        print(" ".join(f"{c:>14}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
