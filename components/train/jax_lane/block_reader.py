"""Block files read with numpy alone (no TensorFlow, no JAX): the JAX lane's input.

Every block is checked as it is read, against its own header and the manifest: its salted FarmHash64 fingerprint
(`pyfarmhash`, the value `tf.fingerprint` computes, over one copy of the record: pyfarmhash hashes `bytes` only), its index in its
file and its rows (full, but for a file's last block). Each pass over a split also counts the rows it read against
the manifest's count. A mismatch is a `CorruptBlockFile` naming the file and block.

Training order, a function of (run seed, epoch number) alone, as in the TensorFlow lane:
- cached (the split's decoded blocks fit `training.cache_memory_mb`, `training.cache`): every kept row of the split
  is read once into memory and each epoch draws a permutation of all of them;
- otherwise each epoch permutes the split's blocks, reads them in windows of `training.shuffle_buffer` examples'
  worth and permutes each window's rows.
Epochs follow each other as one stream of rows cut into full batches (an epoch's last rows open the next epoch's
first batch, so no example is lost and every batch is full). A resumed run starts at its step's place in that
stream. `Prefetcher` prepares the next executions' batches on a thread while the device trains.

Data parallel over G devices (several processes included: multi-host), the run reads G streams, one per device:
stream g holds every G-th block of the epoch's block order (cached: every G-th block in file order), its rows drawn
as above from (seed, epoch, G, g), and device g's share of each global batch (B/G rows) is stream g's next rows.
Every example is read once per epoch of its stream, by the process that owns the stream's device, so a process
reads only its own share of the blocks; the global batches do not depend on how the devices are spread over
processes (one process with G devices reads the same batches as G processes with one each). With G = 1 the one
stream is the order above. Streams of unequal length (a file's last block is short, the calibration holdout) wrap
into their next epoch on their own.

Ids are handed over as int32 (JAX's default integer; a table row fits: `configs.features.MAX_TABLE_ROWS`).
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from components.contracts.manifest import BLOCK_HEADER_BYTES, Manifest
from components.preprocess.block_format import HOLDOUT_BUCKETS, HOLDOUT_COLUMN, block_fingerprint
from components.train.block_files import BlockFile, CorruptBlockFile, checked_block_files
from foundation.gcs_mount import container_path

INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Holdout:
    """The calibration holdout: rows whose holdout bucket is below `fraction` of the buckets are held out; `only`
    reads those alone, otherwise the rest."""

    fraction: float = 0.0
    only: bool = False

    def keep(self, bucket_column: np.ndarray) -> np.ndarray | None:
        if self.fraction <= 0:
            return None
        held = bucket_column < int(round(self.fraction * HOLDOUT_BUCKETS))
        return held if self.only else ~held


class BlockSplit:
    """One split's block files, memory-mapped and checked block by block (see the module docstring)."""

    def __init__(self, examples_dir: str | Path, manifest: Manifest, split: str, holdout: Holdout = Holdout()):
        layout, blocks = manifest.block_layout, manifest.splits[split].blocks
        if layout is None or blocks is None:
            raise ValueError(f"the {split} split of {examples_dir} has no training blocks (per-example records only): "
                             "the JAX lane reads blocks; rerun preprocess with this adrank")
        if sys.byteorder != "little":
            raise RuntimeError("the block reader views little-endian records: it needs a little-endian host")
        self.split, self.layout, self.holdout = split, layout, holdout
        self.expected_examples = blocks.examples
        directory = container_path(str(examples_dir))
        self.files: list[BlockFile] = checked_block_files(directory, blocks, layout, os.path.exists, os.path.getsize)
        self._maps: dict[str, np.memmap] = {}
        self.ints_width, self.floats_width = layout.width("int64"), layout.width("float32")
        self._holdout_column = layout.offsets("int64")[HOLDOUT_COLUMN][0]

    @property
    def block_count(self) -> int:
        return sum(f.blocks for f in self.files)

    @property
    def decoded_bytes(self) -> int:
        """Memory the split's kept rows take as the reader hands them over (int32 ids, float32 values)."""
        return self.expected_examples * 4 * (self.ints_width + self.floats_width)

    def _map(self, file: BlockFile) -> np.memmap:
        if file.path not in self._maps:
            self._maps[file.path] = np.memmap(file.path, np.uint8, mode="r")
        return self._maps[file.path]

    def read_block(self, file: BlockFile, index: int) -> tuple[np.ndarray, np.ndarray]:
        """The block's rows (not its padding), checked, as int32 ids [rows, W_int] and float32 [rows, W_float]
        with the holdout applied."""
        size = self.layout.record_bytes
        record = self._map(file)[index * size:(index + 1) * size]
        checked = record[8:]
        rows, written_index = (int(value) for value in checked[:16].view("<i8"))
        expected_rows = file.rows_of(index, self.layout.block_examples)
        if (record[:8].tobytes() != block_fingerprint(checked.tobytes(), file.salt) or written_index != index
                or rows != expected_rows):
            raise CorruptBlockFile(
                f"corrupt block: file {file.path} block {index} (header rows {rows} index {written_index} where the "
                f"manifest says rows {expected_rows} index {index}, or its fingerprint does not match) — rerun "
                "preprocess")
        examples = self.layout.block_examples
        int_bytes = examples * self.ints_width * 8
        payload = record[BLOCK_HEADER_BYTES:]
        ints = payload[:int_bytes].view("<i8").reshape(examples, self.ints_width)[:rows]
        floats = payload[int_bytes:].view("<f4").reshape(examples, self.floats_width)[:rows]
        if ints.size and (ints.max() > INT32_MAX or ints.min() < -INT32_MAX - 1):
            raise CorruptBlockFile(f"block file {file.path} block {index} holds an id beyond int32: rerun preprocess")
        keep = self.holdout.keep(ints[:, self._holdout_column])
        if keep is not None:
            ints, floats = ints[keep], floats[keep]
        return ints.astype(np.int32), np.array(floats, np.float32)

    def blocks_in_order(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Every block's kept rows in file and block order; the rows read are counted against the manifest."""
        return self._counted(self._blocks())

    def _blocks(self) -> list[tuple[BlockFile, int]]:
        return [(file, index) for file in self.files for index in range(file.blocks)]

    def _counted(self, blocks, whole_split: bool = True) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The blocks' kept rows, read one by one; a pass over the whole split is counted against the manifest (a
        stream's share, against the manifest's rows of its blocks, which `_stream_blocks` checked add up)."""
        read = 0
        for file, index in blocks:
            read += file.rows_of(index, self.layout.block_examples)
            yield self.read_block(file, index)
        if whole_split and read != self.expected_examples:
            raise CorruptBlockFile(f"read {read:,} rows of the {self.split} split where the manifest counts "
                                   f"{self.expected_examples:,} — rerun preprocess")

    def _stream_blocks(self, blocks: list[tuple[BlockFile, int]], stream: int,
                       streams: int) -> list[tuple[BlockFile, int]]:
        """Stream `stream`'s share of `blocks` (every `streams`-th); the manifest's rows of all of them must be the
        split's count (so the shares together cover it)."""
        rows = sum(file.rows_of(index, self.layout.block_examples) for file, index in blocks)
        if rows != self.expected_examples:
            raise CorruptBlockFile(f"the {self.split} split's block files hold {rows:,} rows where the manifest counts "
                                   f"{self.expected_examples:,} — rerun preprocess")
        return blocks[stream::streams]

    def all_rows(self, stream: int = 0, streams: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Every kept row of the split (of stream `stream` of `streams`: its blocks), in file order, as two
        contiguous matrices."""
        if streams == 1:
            parts = list(self.blocks_in_order())
        else:
            parts = list(self._counted(self._stream_blocks(self._blocks(), stream, streams), whole_split=False))
        if not parts:
            return np.zeros((0, self.ints_width), np.int32), np.zeros((0, self.floats_width), np.float32)
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    # -- training order --------------------------------------------------------------------------------------
    def epoch_windows(self, seed: int, epoch: int, window_blocks: int, stream: int = 0,
                      streams: int = 1) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """One epoch of the uncached order: the blocks permuted, read `window_blocks` at a time, each window's rows
        permuted (all drawn from (seed, epoch)); of several streams, stream `stream`'s every `streams`-th block of
        that order, its windows' rows drawn from (seed, epoch, streams, stream)."""
        rng = epoch_rng(seed, epoch)
        blocks = self._blocks()
        order = [blocks[i] for i in rng.permutation(len(blocks))]
        if streams > 1:
            order = self._stream_blocks(order, stream, streams)
            rng = stream_rng(seed, epoch, stream, streams)
        reader = self._counted(order, whole_split=streams == 1)
        for start in range(0, len(order), window_blocks):
            parts = [next(reader) for _ in order[start:start + window_blocks]]
            ints, floats = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
            permutation = rng.permutation(len(ints))
            yield ints[permutation], floats[permutation]
        for _ in reader:  # the count check at the end of the pass
            pass


def epoch_rng(seed: int, epoch: int) -> np.random.Generator:
    """The generator of a run's epoch: a function of (seed, epoch) alone."""
    return np.random.default_rng([seed, epoch])


def stream_rng(seed: int, epoch: int, stream: int, streams: int) -> np.random.Generator:
    """The generator of one stream's epoch (of several): a function of (seed, epoch, streams, stream) alone."""
    return np.random.default_rng([seed, epoch, streams, stream])


class TrainingRows:
    """A run's training order cut into executions of `steps` batches of `batch` rows: (ints [steps, batch, W_int],
    floats [steps, batch, W_float]), from step `start_step` on (see the module docstring).

    Of `streams` streams (one per data-parallel device), this process reads `local_streams` (default: all) and an
    execution holds their shares of each batch side by side: [steps, batch / streams × len(local_streams), W]."""

    def __init__(self, split: BlockSplit, batch: int, steps: int, seed: int, cache: bool, shuffle_buffer: int,
                 start_step: int = 0, streams: int = 1, local_streams: list[int] | None = None):
        if batch % streams:
            raise ValueError(f"a global batch of {batch} does not split into {streams} devices' streams")
        if split.block_count < streams:
            raise ValueError(f"the {split.split} split has {split.block_count} blocks, fewer than the {streams} "
                             "devices that each read a stream of them: train on fewer devices, or write smaller "
                             "blocks (preprocess.block_examples)")
        self.split, self.batch, self.steps, self.seed = split, batch, steps, seed
        self.cache = cache
        self.streams = streams
        self.local_streams = list(range(streams)) if local_streams is None else list(local_streams)
        self.stream_batch = batch // streams
        window_examples = -(-shuffle_buffer // streams)  # the shuffle buffer's memory, shared by the streams
        self.window_blocks = max(1, min(split.block_count, -(-window_examples // split.layout.block_examples)))
        self.start_step = start_step

    def executions(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        streams = [self._stream_executions(stream) for stream in self.local_streams]
        if len(streams) == 1:
            yield from streams[0]
            return
        while True:
            parts = [next(stream) for stream in streams]
            yield (np.concatenate([p[0] for p in parts], axis=1), np.concatenate([p[1] for p in parts], axis=1))

    def _stream_executions(self, stream: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        rows = self.stream_batch * self.steps
        if self.cache:
            yield from self._cached_executions(rows, stream)
            return
        ints_left = np.zeros((0, self.split.ints_width), np.int32)
        floats_left = np.zeros((0, self.split.floats_width), np.float32)
        skip = self.start_step * self.stream_batch
        epoch = 0
        while True:
            for ints, floats in self.split.epoch_windows(self.seed, epoch, self.window_blocks, stream, self.streams):
                if skip:
                    dropped = min(skip, len(ints))
                    ints, floats, skip = ints[dropped:], floats[dropped:], skip - dropped
                ints_left, floats_left = np.concatenate([ints_left, ints]), np.concatenate([floats_left, floats])
                while len(ints_left) >= rows:
                    yield self._shaped(ints_left[:rows], floats_left[:rows])
                    ints_left, floats_left = ints_left[rows:], floats_left[rows:]
            epoch += 1

    def _cached_executions(self, rows: int, stream: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        ints, floats = self.split.all_rows(stream, self.streams)
        count = len(ints)
        if count == 0:
            raise ValueError(f"the {self.split.split} split has no rows to train on")

        def permutation_of(epoch: int) -> np.ndarray:
            rng = epoch_rng(self.seed, epoch) if self.streams == 1 else stream_rng(self.seed, epoch, stream,
                                                                                    self.streams)
            return rng.permutation(count)

        position = self.start_step * self.stream_batch
        epoch, offset = divmod(position, count)
        permutation = permutation_of(epoch)
        while True:
            taken, pieces = 0, []
            while taken < rows:
                piece = permutation[offset:offset + rows - taken]
                pieces.append(piece)
                taken += len(piece)
                offset += len(piece)
                if offset == count:
                    epoch, offset = epoch + 1, 0
                    permutation = permutation_of(epoch)
            index = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
            yield self._shaped(ints[index], floats[index])

    def _shaped(self, ints: np.ndarray, floats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (ints.reshape(self.steps, self.stream_batch, -1), floats.reshape(self.steps, self.stream_batch, -1))


def sequential_batches(split: BlockSplit, batch: int) -> Iterator[tuple[np.ndarray, np.ndarray, int]]:
    """Every kept row in file order as (ints [batch, W_int], floats [batch, W_float], rows): full batches, the last
    one zero-padded to `batch` rows (`rows` says how many are real), so a jitted function sees one shape."""
    ints_left = np.zeros((0, split.ints_width), np.int32)
    floats_left = np.zeros((0, split.floats_width), np.float32)
    for ints, floats in split.blocks_in_order():
        ints_left, floats_left = np.concatenate([ints_left, ints]), np.concatenate([floats_left, floats])
        while len(ints_left) >= batch:
            yield ints_left[:batch], floats_left[:batch], batch
            ints_left, floats_left = ints_left[batch:], floats_left[batch:]
    if len(ints_left):
        rows = len(ints_left)
        yield (np.concatenate([ints_left, np.zeros((batch - rows, split.ints_width), np.int32)]),
               np.concatenate([floats_left, np.zeros((batch - rows, split.floats_width), np.float32)]), rows)


class Prefetcher:
    """Items of `source` prepared on a thread (`transfer` applied there too, e.g. the copy to the device), `depth`
    ahead of the consumer. `waited_seconds` is the time `next` spent blocked on an empty queue (the input wait).
    An exception on the thread is raised by `next`; `close` stops the thread."""

    _END = object()

    def __init__(self, source: Iterator[Any], transfer: Callable[[Any], Any] = lambda item: item, depth: int = 2):
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self.waited_seconds = 0.0
        self._thread = threading.Thread(target=self._fill, args=(source, transfer), daemon=True,
                                        name="adrank-block-prefetch")
        self._thread.start()

    def _fill(self, source: Iterator[Any], transfer: Callable[[Any], Any]) -> None:
        try:
            for item in source:
                prepared = transfer(item)
                while not self._stop.is_set():
                    try:
                        self._queue.put(("item", prepared), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if self._stop.is_set():
                    return
            self._queue.put(("end", self._END))
        except BaseException as error:  # noqa: BLE001 - handed to the consumer, which raises it
            self._queue.put(("error", error))

    def __iter__(self) -> Prefetcher:
        return self

    def __next__(self) -> Any:
        started = time.perf_counter()
        kind, value = self._queue.get()
        self.waited_seconds += time.perf_counter() - started
        if kind == "item":
            return value
        self._queue.put((kind, value))  # later calls see the end (or the error) too
        if kind == "end":
            raise StopIteration
        raise value

    def close(self) -> None:
        self._stop.set()
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass
        self._thread.join(timeout=5)
