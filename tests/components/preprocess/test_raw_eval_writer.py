"""The raw eval writer (`stages.WriteRawEval`) on a few batches through TestPipeline: every example of every batch
comes back once, as the same tf.Example, from the shards as TensorFlow reads gzip TFRecords (several gzip members
a file); each shard exists (an empty one reads as no records)."""

from __future__ import annotations

import gzip
import struct

import apache_beam as beam
import pyarrow as pa
import pytest
import tensorflow as tf
from apache_beam.testing.test_pipeline import TestPipeline
from tfx_bsl.coders.example_coder import RecordBatchToExamplesEncoder

from components.preprocess.stages import RAW_EVAL_DIR, WriteRawEval, gzip_member, tfrecords

IN_MEMORY = ["--direct_running_mode=in_memory", "--direct_num_workers=1"]


def _batch(first: int, rows: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({
        "z_label": pa.array([[float(i % 2)] for i in range(first, first + rows)], pa.large_list(pa.float32())),
        "ad_id": pa.array([[f"ad{i}".encode()] for i in range(first, first + rows)], pa.large_list(pa.large_binary())),
        "price": pa.array([[i / 4] if i % 3 else None for i in range(first, first + rows)],
                          pa.large_list(pa.float32())),
    })


def _canonical(serialized: bytes) -> bytes:
    """A tf.Example's bytes with its feature map in key order (the encoder writes the map in no fixed order)."""
    return tf.train.Example.FromString(serialized).SerializeToString(deterministic=True)


def test_raw_eval_shards_hold_every_example_of_the_batches_once_as_tensorflow_reads_them(tmp_path):
    batches = [_batch(0, 7), _batch(7, 2), _batch(9, 11)]
    shards = 3
    with TestPipeline(argv=IN_MEMORY) as p:
        _ = p | beam.Create(batches) | WriteRawEval(str(tmp_path), shards)

    files = sorted((tmp_path / RAW_EVAL_DIR).glob("part-*.tfrecord.gz"))
    assert [f.name for f in files] == [f"part-{k:05d}-of-{shards:05d}.tfrecord.gz" for k in range(shards)]
    read = [r.numpy() for r in tf.data.TFRecordDataset([str(f) for f in files], compression_type="GZIP")]
    expected = [e for b in batches for e in RecordBatchToExamplesEncoder().encode(b.select(sorted(b.schema.names)))]
    assert sorted(map(_canonical, read)) == sorted(map(_canonical, expected)) and len(read) == 20
    per_file = [sum(1 for _ in tf.data.TFRecordDataset([str(f)], compression_type="GZIP")) for f in files]
    assert per_file == [2 + 0 + 3, 2 + 1 + 4, 3 + 1 + 4]  # each batch's rows cut in `shards` contiguous slices


def test_an_empty_shard_is_a_gzip_file_of_no_records_and_members_concatenate(tmp_path):
    empty = tmp_path / "empty.tfrecord.gz"
    empty.write_bytes(gzip_member(b"", 1))
    assert list(tf.data.TFRecordDataset([str(empty)], compression_type="GZIP")) == []
    joined = tmp_path / "two.tfrecord.gz"
    joined.write_bytes(gzip_member(tfrecords([b"a", b"bc"]), 1) + gzip_member(tfrecords([b"", b"d" * 70_000]), 6))
    assert [r.numpy() for r in tf.data.TFRecordDataset([str(joined)], compression_type="GZIP")] == [
        b"a", b"bc", b"", b"d" * 70_000]
    # the framing is TensorFlow's own: its writer's uncompressed bytes are the same
    plain = tmp_path / "plain.tfrecord"
    with tf.io.TFRecordWriter(str(plain)) as writer:
        for record in (b"a", b"bc"):
            writer.write(record)
    assert plain.read_bytes() == tfrecords([b"a", b"bc"]) == gzip.decompress(gzip_member(tfrecords([b"a", b"bc"]),
                                                                                         1))


def test_compressing_in_background_gives_the_members_in_order_in_their_windows_and_raises_its_errors():
    from apache_beam.transforms.window import GlobalWindow, IntervalWindow

    from components.preprocess.stages import CompressInBackground, _compressed_shards

    batches = [_batch(first, rows) for first, rows in [(0, 7), (7, 2), (9, 11), (20, 1), (21, 5)]]
    windows = [GlobalWindow(), IntervalWindow(0, 10)] * 3
    fn = CompressInBackground(shards=3, level=1, in_flight=2)
    fn.setup()
    try:
        fn.start_bundle()
        out = []
        for batch, window in zip(batches, windows, strict=False):
            out += [(v.value, v.windows[0]) for v in fn.process(batch, timestamp=5, window=window)]
        out += [(v.value, v.windows[0]) for v in fn.finish_bundle()]
        expected = [(member, window) for batch, window in zip(batches, windows, strict=False)
                    for member in _compressed_shards(batch, 3, 1)]
        assert [(shard, window) for (shard, _), window in out] == [(s, w) for (s, _), w in expected]
        # tfx_bsl writes each tf.Example's map in no fixed order: compare the examples inside
        assert [sorted(map(_canonical, _records(gzip.decompress(m)))) for (_, m), _ in out] == [
            sorted(map(_canonical, _records(gzip.decompress(m)))) for (_, m), _ in expected]
        fn.start_bundle()
        with pytest.raises(RuntimeError, match="Expected ListArray"):
            list(fn.process(pa.RecordBatch.from_pydict({"x": pa.array([1, 2])}), timestamp=0,
                            window=GlobalWindow()))
            list(fn.finish_bundle())
    finally:
        fn.teardown()
    with pytest.raises(ValueError, match="in_flight"):
        CompressInBackground(shards=1, level=1, in_flight=0)


def _records(framed: bytes) -> list[bytes]:
    records, at = [], 0
    while at < len(framed):
        (length,) = struct.unpack_from("<Q", framed, at)
        records.append(framed[at + 12:at + 12 + length])
        at += 12 + length + 4
    return records
