"""Reading JSONL logs: adrank's accounted reader (`ReadLogRecords`: one worker per file, every byte tallied, a
truncated gzip is an error) against Beam's `ReadFromText` (what it replaced: splits files, stops silently at a
truncated gzip), on the same plain and gzip'd files, side by side.

    .venv/bin/python benchmarks/log_reading.py [--lines 200000] [--files 2] [--workdir /tmp/adrank-bench]

Prints records/s for each reader and format and the ratio accounted / ReadFromText. Both run on the
DirectRunner in memory with one worker, so the figure is the per-core cost of reading, not of parallelism.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import tempfile
import time
from pathlib import Path

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from components.logs.readers import RECORDS, ReadLogRecords


def write_logs(directory: Path, lines: int, files: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for index in range(files):
        text = "".join(
            json.dumps({"impression_id": f"i{index}-{n}", "timestamp": "2026-01-01T00:00:00Z", "ad_id": f"a{n % 97}",
                        "user_id": f"u{n % 5003}", "user_interests": "sports|news"}) + "\n"
            for n in range(lines // files)
        ).encode()
        (directory / f"part-{index}.jsonl").write_bytes(text)
        (directory / f"part-{index}.jsonl.gz").write_bytes(gzip.compress(text, compresslevel=6))


def seconds_to_read(read: beam.PTransform) -> float:
    """Wall time of a pipeline that reads with `read` and prints how many records it got."""
    options = PipelineOptions(["--direct_running_mode=in_memory", "--direct_num_workers=1"])
    started = time.perf_counter()
    with beam.Pipeline(options=options) as pipeline:
        counted = pipeline | read | beam.combiners.Count.Globally()
        _ = counted | beam.Map(lambda n: print(f"    {n:,} records", flush=True))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=2)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="adrank-read-"))
    try:
        write_logs(workdir / "logs", args.lines, args.files)
        for suffix in (".jsonl", ".jsonl.gz"):
            pattern = str(workdir / "logs" / f"part-*{suffix}")

            class Accounted(beam.PTransform):
                def expand(self, pbegin, pattern=pattern):
                    return (pbegin | ReadLogRecords(pattern, "jsonl"))[RECORDS]

            print(f"{suffix}: {args.lines:,} lines in {args.files} files")
            beam_seconds = seconds_to_read(beam.io.ReadFromText(pattern, coder=beam.coders.BytesCoder()))
            print(f"  ReadFromText      {args.lines / beam_seconds:>12,.0f} records/s ({beam_seconds:.1f} s)")
            accounted_seconds = seconds_to_read(Accounted())
            print(f"  ReadLogRecords    {args.lines / accounted_seconds:>12,.0f} records/s ({accounted_seconds:.1f} s)")
            print(f"  ratio accounted / ReadFromText: {beam_seconds / accounted_seconds:.2f}x the speed")
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
