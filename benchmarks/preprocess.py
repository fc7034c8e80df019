"""Preprocess throughput: the full step (parse → join → split → tf.Transform → TFRecords) with 1 and 2
DirectRunner workers, against a floor that only reads, parses and writes TFRecords (no join, no analysis).

    .venv/bin/python benchmarks/preprocess.py [--impressions 1000000] [--workdir /tmp/adrank-bench]

Prints examples/s per variant and ratios. Not a test: it takes several minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import apache_beam as beam
import tensorflow as tf

from components.logs.readers import ReadLogRecords
from components.logs.synthetic import IMPRESSIONS_DIR, generate_logs
from components.preprocess.options import beam_pipeline_options
from components.preprocess.parse import MISSING, parse_stream
from components.preprocess.run import impression_parser, preprocess
from configs import load_config


def floor_pipeline(config, logs_dir: str, output_dir: str) -> None:
    """Read + parse impressions + write gzip TFRecords of the raw parsed values: the I/O and parsing floor."""
    pattern = f"{logs_dir}/{IMPRESSIONS_DIR}/*.jsonl"

    def to_example(record: dict) -> bytes:
        feature = {}
        for name, value in record.items():
            if name == MISSING or value is None:
                continue
            values = value if isinstance(value, list) else [value]
            if all(isinstance(v, str) for v in values):
                feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[v.encode() for v in values]))
            elif all(isinstance(v, int) for v in values):
                feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
            else:
                feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=[float(v) for v in values]))
        return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()

    with beam.Pipeline(options=beam_pipeline_options(config)) as pipeline:
        raw = pipeline | ReadLogRecords(pattern, "jsonl")
        valid, _ = parse_stream(raw, "impressions", impression_parser(config, pattern))
        _ = valid | beam.Map(to_example) | beam.io.WriteToTFRecord(
            f"{output_dir}/part", file_name_suffix=".tfrecord.gz", num_shards=config.preprocess.output_shards,
            compression_type=beam.io.filesystem.CompressionTypes.GZIP,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impressions", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=4)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="adrank-bench-"))
    per_day = args.impressions // args.days
    base = [f"logs.synthetic.days={args.days}", f"logs.synthetic.impressions_per_day={per_day}",
            "logs.synthetic.users=50000", "logs.synthetic.ads=5000", "logs.synthetic.shards_per_stream=8",
            "preprocess.direct_running_mode=multi_processing"]
    logs_dir = workdir / "logs"
    started = time.perf_counter()
    generated = generate_logs(load_config(overrides=base), logs_dir)
    print(f"generated {generated.impressions} impressions, {generated.engagements} events "
          f"in {time.perf_counter() - started:.0f} s")

    rates: dict[str, float] = {}
    for name, workers, run in (
        ("floor (read+parse+write, 2 workers)", 2, "floor"),
        ("full preprocess, 1 worker", 1, "full"),
        ("full preprocess, 2 workers", 2, "full"),
    ):
        config = load_config(overrides=base + [f"preprocess.direct_num_workers={workers}"])
        out = workdir / f"out-{run}-{workers}"
        shutil.rmtree(out, ignore_errors=True)
        started = time.perf_counter()
        if run == "floor":
            floor_pipeline(config, str(logs_dir), str(out))
            examples = generated.impressions
        else:
            manifest = preprocess(config, str(logs_dir), str(out))
            examples = sum(s.examples for s in manifest.splits.values())
        seconds = time.perf_counter() - started
        rates[name] = examples / seconds
        print(f"{name:40s} {examples:>9d} examples  {seconds:7.1f} s  {rates[name]:9.0f} examples/s", flush=True)

    floor = rates["floor (read+parse+write, 2 workers)"]
    one, two = rates["full preprocess, 1 worker"], rates["full preprocess, 2 workers"]
    print(f"full/floor (2 workers): {two / floor:.2f}   full 2 workers / 1 worker: {two / one:.2f}   "
          f"full 1 worker / floor: {one / floor:.2f}")


if __name__ == "__main__":
    main()
