"""The numpy block reader: every block checked against its header and the manifest, each run's order its own."""

import json
import shutil
import struct
import sys

import numpy as np
import pytest

from components.contracts.manifest import MANIFEST_FILE, Manifest
from components.train.block_files import CorruptBlockFile
from components.train.jax_lane.block_reader import BlockSplit, Holdout, TrainingRows, sequential_batches


def test_tensorflow_cannot_be_imported_here():
    with pytest.raises(ImportError):
        import tensorflow  # noqa: F401
    assert sys.modules["tensorflow"] is None


def test_every_row_is_read_once_in_file_order_and_the_split_is_whole(blocks_dir):
    manifest = Manifest.read(blocks_dir)
    split = BlockSplit(blocks_dir, manifest, "train")
    ints, floats = split.all_rows()
    assert len(ints) == len(floats) == manifest.splits["train"].examples == 4096
    assert ints.dtype == np.int32 and floats.dtype == np.float32
    batches = list(sequential_batches(split, 1000))
    assert [rows for _, _, rows in batches] == [1000] * 4 + [96]
    assert all(b[0].shape == (1000, split.ints_width) for b in batches)  # the last one padded to one shape
    assert np.array_equal(np.concatenate([ints_[:rows] for ints_, _, rows in batches]), ints)


def test_each_seed_draws_its_own_order_every_epoch_and_a_resume_continues_it(blocks_dir):
    manifest = Manifest.read(blocks_dir)
    split = BlockSplit(blocks_dir, manifest, "train")

    def stream(seed, cache, start=0, executions=5):
        rows = TrainingRows(split, 256, 4, seed, cache, shuffle_buffer=1024, start_step=start).executions()
        return [next(rows) for _ in range(executions)]

    for cache in (True, False):
        first = stream(1, cache)
        again = stream(1, cache)
        other = stream(2, cache)
        assert all(np.array_equal(a[0], b[0]) for a, b in zip(first, again))  # the seed decides the order
        assert not np.array_equal(first[0][0], other[0][0])
        epoch = np.concatenate([e[1].reshape(-1, split.floats_width) for e in first[:4]])  # 4 x 4 x 256 = 4,096
        whole = split.all_rows()[1]
        assert sorted(map(tuple, epoch)) == sorted(map(tuple, whole))  # every example once per epoch
        assert not np.array_equal(first[4][1], first[0][1])  # the next epoch draws another order
        resumed = stream(1, cache, start=8, executions=3)  # step 8 = after two executions of 4 steps
        assert all(np.array_equal(a[0], b[0]) for a, b in zip(first[2:], resumed))


def test_devices_streams_cover_the_epoch_once_and_each_process_reads_only_its_own(blocks_dir):
    """Four devices, four streams (32 blocks of 128: 8 each): one process reading all four gets the same global
    batches as processes reading one or two streams each, and an epoch holds every example once."""
    manifest = Manifest.read(blocks_dir)
    split = BlockSplit(blocks_dir, manifest, "train")
    whole = sorted(map(tuple, split.all_rows()[1]))
    for cache in (True, False):
        def executions(local_streams, count=4, cache=cache):
            rows = TrainingRows(split, 256, 4, 7, cache, shuffle_buffer=1024, streams=4,
                                local_streams=local_streams).executions()
            return [next(rows) for _ in range(count)]

        together = executions([0, 1, 2, 3])
        assert together[0][0].shape == (4, 256, split.ints_width)  # four streams' 64 rows of each batch, in order
        apart = [executions([0, 1]), executions([2]), executions([3])]
        for k in range(4):
            joined = np.concatenate([process[k][1] for process in apart], axis=1)
            assert np.array_equal(joined, together[k][1])
        epoch = np.concatenate([e[1].reshape(-1, split.floats_width) for e in together])  # 4 x 4 x 256 = 4,096
        assert sorted(map(tuple, epoch)) == whole
        mine = {tuple(row) for e in apart[1] for row in e[1].reshape(-1, split.floats_width)}
        others = {tuple(row) for p in (apart[0], apart[2]) for e in p for row in e[1].reshape(-1, split.floats_width)}
        assert len(mine) == 1024 and not mine & others  # an epoch of stream 2: 8 blocks no other stream reads
        if cache:  # cached, a stream's blocks are every fourth in file order
            assert mine == set(map(tuple, split.all_rows(2, 4)[1]))
    with pytest.raises(ValueError, match="32 blocks, fewer than the 64 devices"):
        next(TrainingRows(split, 256 * 64, 1, 7, False, 1024, streams=64, local_streams=[0]).executions())


def test_the_holdout_splits_the_train_rows_in_two(blocks_dir):
    manifest = Manifest.read(blocks_dir)
    kept = len(BlockSplit(blocks_dir, manifest, "train", Holdout(0.1)).all_rows()[0])
    held = len(BlockSplit(blocks_dir, manifest, "train", Holdout(0.1, only=True)).all_rows()[0])
    assert kept + held == 4096 and 250 < held < 580  # about a tenth, by a hash of each example


def _tampered(blocks_dir, tmp_path, change):
    directory = tmp_path / "examples"
    shutil.copytree(blocks_dir, directory)
    manifest = Manifest.read(directory)
    files = sorted(manifest.splits["train"].blocks.files)
    change(directory, manifest, files)
    return directory


def _read_all(directory):
    manifest = Manifest.read(directory)
    BlockSplit(directory, manifest, "train").all_rows()


def test_a_flipped_payload_byte_is_an_error_naming_file_and_block(blocks_dir, tmp_path):
    def flip(directory, manifest, files):
        path = directory / files[0]
        data = bytearray(path.read_bytes())
        data[5 * manifest.block_layout.record_bytes + 40] ^= 0xFF
        path.write_bytes(bytes(data))

    directory = _tampered(blocks_dir, tmp_path, flip)
    files = sorted(Manifest.read(directory).splits["train"].blocks.files)
    with pytest.raises(CorruptBlockFile, match=rf"corrupt block: file .*{files[0]} block 5 "):
        _read_all(directory)


def test_a_header_whose_rows_were_edited_is_an_error(blocks_dir, tmp_path):
    def edit_rows(directory, manifest, files):
        path = directory / files[0]
        data = bytearray(path.read_bytes())
        last = manifest.splits["train"].blocks.blocks_in(files[0]) - 1
        offset = last * manifest.block_layout.record_bytes + 8
        rows = struct.unpack_from("<q", data, offset)[0]
        struct.pack_into("<q", data, offset, rows - 8)  # the partial last block "holds" fewer rows
        path.write_bytes(bytes(data))

    with pytest.raises(CorruptBlockFile, match="corrupt block"):
        _read_all(_tampered(blocks_dir, tmp_path, edit_rows))


def test_a_file_swapped_for_another_with_as_many_blocks_is_an_error(blocks_dir, tmp_path):
    def swap(directory, manifest, files):
        shutil.copyfile(directory / files[1], directory / files[0])  # both files hold 16 blocks of 128

    with pytest.raises(CorruptBlockFile, match="fingerprint"):
        _read_all(_tampered(blocks_dir, tmp_path, swap))


def test_a_manifest_whose_counts_or_layout_disagree_with_the_files_is_an_error(blocks_dir, tmp_path):
    def recount(directory, manifest, files):
        described = json.loads((directory / MANIFEST_FILE).read_text())
        counts = described["splits"]["train"]["blocks"]["files"]
        counts[files[0]] -= 5  # the same number of blocks, 5 rows fewer in the last
        (directory / MANIFEST_FILE).write_text(json.dumps(described))

    with pytest.raises(CorruptBlockFile, match="manifest says rows"):
        _read_all(_tampered(blocks_dir, tmp_path, recount))

    def swap_columns(directory, manifest, files):
        described = json.loads((directory / MANIFEST_FILE).read_text())
        columns = described["block_layout"]["columns"]
        ids = [i for i, c in enumerate(columns) if c["dtype"] == "int64" and c["width"] == 1][:2]
        columns[ids[0]]["name"], columns[ids[1]]["name"] = columns[ids[1]]["name"], columns[ids[0]]["name"]
        (directory / MANIFEST_FILE).write_text(json.dumps(described))

    with pytest.raises(CorruptBlockFile, match="fingerprint"):
        _read_all(_tampered(blocks_dir, tmp_path / "b", swap_columns))


def test_blocks_of_the_older_format_are_refused_naming_the_fix(blocks_dir, tmp_path):
    def old_format(directory, manifest, files):
        described = json.loads((directory / MANIFEST_FILE).read_text())
        del described["block_layout"]["format"]
        (directory / MANIFEST_FILE).write_text(json.dumps(described))

    with pytest.raises(CorruptBlockFile, match="format 1.*rerun preprocess"):
        _read_all(_tampered(blocks_dir, tmp_path, old_format))
