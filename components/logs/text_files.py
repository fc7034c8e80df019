"""One text log file (JSONL or CSV, plain or compressed) → its records, and a tally of where every byte went.

    file ──► decompress (gzip, bzip2, xz/lzma: the stdlib's readers, which fail at a truncated or corrupt stream)
         ──► lines ──► BOM stripped, blank lines counted, records framed (a CSV record may span lines)
         ──► records (bytes, without their final line break)  +  `FileTally`

Every byte of the (decompressed) text is exactly one of: framing (line breaks, a BOM, the CSV header), a blank
line, or a byte of a record; `FileTally.bytes` is the position the file object reached, measured independently
of that split, so `FileTally.balanced` checks it.

A compressed file that ends early or is corrupt is an error naming the file and the offset (`LogFileUnreadable`),
and so is an empty one (0 bytes stored: no compressed stream at all, not even an empty one, which gzip writes in 20
bytes; what an interrupted copy or a failed export leaves), not a dead letter: the records after the break cannot be counted, so no `max_invalid_fraction` could be applied
to them honestly, and a model trained on part of a file must not be promoted.

CSV records end at the first line break outside quotes (RFC 4180). A record whose quote is still open after
`max_record_lines` physical lines or `max_record_bytes` bytes, or at the end of the file, is cut back: its first
line becomes a record of its own (a `bad_csv_row` dead letter when parsed) and reading restarts at its second
line, so one unbalanced quote costs one row, not the rest of the file.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import zlib
from collections import deque
from dataclasses import dataclass
from typing import IO, Callable, Iterable, Iterator, Protocol

BOM = b"\xef\xbb\xbf"
JSONL_BLOCK_BYTES = 1 << 20  # text a JSONL file is read and split in at a time
# Compressed formats read through a decompressor that raises at a stream's premature end, by file-name suffix.
class _Readable(Protocol):
    def readline(self) -> bytes: ...
    def read(self, size: int = -1) -> bytes: ...
    def tell(self) -> int: ...


_DECOMPRESSORS: dict[str, Callable[[IO[bytes]], _Readable]] = {
    ".gz": lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"),
    # the reader closes what these open (they wrap a file it opened and closes)
    ".bz2": lambda raw: bz2.BZ2File(raw, mode="rb"),
    ".xz": lambda raw: lzma.LZMAFile(raw, mode="rb"),  # noqa: SIM115
    ".lzma": lambda raw: lzma.LZMAFile(raw, mode="rb"),  # noqa: SIM115
}
# Suffixes Beam would decompress without noticing a truncated stream: refused rather than read in part.
_UNCHECKED_COMPRESSIONS = (".zst", ".zstd", ".deflate")
_DECOMPRESSION_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile, lzma.LZMAError, OSError)


class LogFileUnreadable(IOError):
    """A log file that cannot be read to its end (truncated or corrupt compressed data, an unchecked format)."""


@dataclass(frozen=True)
class FileTally:
    """Where the bytes of one log file went. `bytes`: decompressed text bytes read (Parquet: the file's size);
    `framing_bytes`: line breaks, a BOM, a CSV header (Parquet: the whole file, whose rows have no byte size);
    `records` / `record_bytes`: what was handed on to be parsed."""

    path: str
    bytes: int = 0
    framing_bytes: int = 0
    blank_lines: int = 0
    blank_bytes: int = 0
    records: int = 0
    record_bytes: int = 0

    @property
    def unaccounted_bytes(self) -> int:
        return self.bytes - self.framing_bytes - self.blank_bytes - self.record_bytes


def is_compressed(path: str) -> bool:
    return path.endswith(tuple(_DECOMPRESSORS))


def check_readable_compression(path: str) -> None:
    """Refuse compressions whose truncation this reader could not detect (see module docstring)."""
    if path.endswith(_UNCHECKED_COMPRESSIONS):
        raise LogFileUnreadable(f"{path}: {path.rsplit('.', 1)[1]}-compressed logs are not read (a truncated file "
                                "would go unnoticed): decompress it, or compress it with gzip, bzip2 or xz")


class TextLogFile:
    """The lines of one log file, decompressed, as bytes with their line breaks; `tally` fills in as they are read.

    `raw` is the file's bytes as stored; `size` its stored size (for the error message)."""

    def __init__(self, path: str, raw: IO[bytes], size: int | None = None):
        check_readable_compression(path)
        self.path, self.raw, self.size = path, raw, size
        opener = next((o for suffix, o in _DECOMPRESSORS.items() if path.endswith(suffix)), None)
        self.compressed = opener is not None
        self.handle: _Readable = opener(raw) if opener is not None else raw
        self.text_bytes = 0  # bytes of text delivered so far
        self.lines_read = 0

    def lines(self) -> Iterator[bytes]:
        while True:
            try:
                line = self.handle.readline()
            except _DECOMPRESSION_ERRORS as error:
                raise self._unreadable(error) from None
            if not line:
                if self._empty_stream():  # gzip reads an empty file as no text at all
                    raise self._unreadable(EOFError())
                return
            self.text_bytes += len(line)
            self.lines_read += 1
            yield line

    def blocks(self, size: int | None = None) -> Iterator[bytes]:
        """The text in blocks of up to `size` bytes (default `JSONL_BLOCK_BYTES`; a line may span blocks), read as
        `lines()` reads it: the same errors for a truncated, corrupt or empty compressed stream; `lines_read`
        counts the line breaks delivered."""
        while True:
            try:
                block = self.handle.read(size or JSONL_BLOCK_BYTES)
            except _DECOMPRESSION_ERRORS as error:
                raise self._unreadable(error) from None
            if not block:
                if self._empty_stream():
                    raise self._unreadable(EOFError())
                return
            self.text_bytes += len(block)
            self.lines_read += block.count(b"\n")
            yield block

    def bytes_read(self) -> int:
        """The position the (decompressing) file object reached: the text's size once every line is read."""
        try:
            return int(self.handle.tell())
        except (OSError, ValueError):  # a stream without tell(): the bytes its lines held
            return self.text_bytes

    def _stored_bytes_read(self) -> int | None:
        """How far into the stored (compressed) bytes reading got; None when the stream cannot say."""
        try:
            return int(self.raw.tell())
        except (OSError, ValueError):
            return None

    def _empty_stream(self) -> bool:
        """A compressed file of 0 stored bytes (no stream at all)."""
        if not self.compressed or self.text_bytes:
            return False
        stored = self._stored_bytes_read()
        return stored == 0 if stored is not None else self.size == 0

    def _unreadable(self, error: BaseException) -> LogFileUnreadable:
        if self._empty_stream():
            return LogFileUnreadable(
                f"{self.path}: the file is empty (0 bytes), which is no compressed stream at all (an empty log "
                f"compressed is not empty: gzip writes 20 bytes): an interrupted copy or a failed export? Re-copy or "
                f"re-export it, or remove it if the day has no logs")
        position = self._stored_bytes_read()
        stored = f"{position:,}" if position is not None else "?"
        of_size = f" of {self.size:,}" if self.size is not None else ""
        return LogFileUnreadable(
            f"{self.path}: compressed data truncated or corrupt after {self.text_bytes:,} bytes of text "
            f"({self.lines_read:,} lines), at stored byte {stored}{of_size}: {error or type(error).__name__}. The "
            "records after this point cannot be read or counted, so preprocess stops rather than train on part of "
            "the file; re-copy or re-export it"
        )


def jsonl_record_lists(log_file: TextLogFile) -> Iterator[list[bytes] | FileTally]:
    """Each non-blank line without its line break (a leading BOM stripped), a list at a time (the non-blank lines
    of a block of text), then the file's `FileTally`.

    Read in blocks (`TextLogFile.blocks`) and split into lines a block at a time, not a line at a time: the same
    records and tally as reading line by line (`lines()`), at a fraction of the per-line Python."""
    tally = _LineTally()
    pending: list[bytes] = []  # the start of a line whose break is in a later block (joined once, however long)
    for block in log_file.blocks():
        if b"\n" not in block:
            pending.append(block)
            continue
        text = b"".join([*pending, block]) if pending else block
        end = text.rfind(b"\n") + 1
        pending = [text[end:]] if end < len(text) else []
        records = tally.lines(text[:end - 1].split(b"\n"), end, crlf=b"\r" in text)
        if records:
            yield records
    tail = b"".join(pending)
    if tail:
        records = tally.lines([tail], len(tail), crlf=tail.endswith(b"\r"), last_has_break=False)
        if records:
            yield records
    yield FileTally(log_file.path, log_file.bytes_read(), tally.framing, tally.blank_lines, tally.blank_bytes,
                    tally.records, tally.record_bytes)


class _LineTally:
    """`jsonl_record_lists`' running tally, kept a list of lines at a time."""

    def __init__(self):
        self.framing = self.blank_lines = self.blank_bytes = self.records = self.record_bytes = 0
        self.first = True

    def lines(self, lines: list[bytes], size: int, crlf: bool, last_has_break: bool = True) -> list[bytes]:
        """`lines`: consecutive lines without their "\\n" (every one had one, but the last when `last_has_break`
        is false), `size` bytes of text in all; `crlf`: whether any may end in "\\r". Returns their records,
        counted."""
        contents = [line[:-1] if line.endswith(b"\r") else line for line in lines] if crlf else lines
        if self.first:
            self.first = False
            if contents and contents[0].startswith(BOM):
                contents = [contents[0][len(BOM):], *contents[1:]]
        records = [content for content in contents if content.strip()]
        if len(records) < len(contents):
            breaks = [1] * len(lines)
            if not last_has_break:
                breaks[-1] = 0
            blank = [len(line) + brk for line, content, brk in zip(lines, contents, breaks) if not content.strip()]
            self.blank_lines, self.blank_bytes = self.blank_lines + len(blank), self.blank_bytes + sum(blank)
            blank_bytes = sum(blank)
        else:
            blank_bytes = 0
        record_bytes = sum(map(len, records))
        self.records, self.record_bytes = self.records + len(records), self.record_bytes + record_bytes
        self.framing += size - record_bytes - blank_bytes
        return records


def csv_file_records(log_file: TextLogFile, delimiter: str = ",", max_record_bytes: int | None = None,
                     max_record_lines: int | None = None, has_header: bool = True) -> Iterator[bytes | FileTally]:
    """Each CSV record after the header (every record when `has_header` is false: `logs.csv_header: none`; a
    leading BOM stripped; blank lines counted, not records), then the file's `FileTally`."""
    framing = blank_lines = blank_bytes = records = record_bytes = 0
    lines = log_file.lines()
    first = next(lines, None)
    if first is not None:
        if first.startswith(BOM):
            first, framing = first[len(BOM):], len(BOM)
        rest: Iterable[bytes] = _chain(first, lines)
        header_seen = not has_header
        for record, consumed in csv_records(rest, delimiter, max_record_bytes=max_record_bytes,
                                            max_record_lines=max_record_lines):
            if not header_seen:
                header_seen, framing = True, framing + consumed
            elif not record.strip():
                blank_lines, blank_bytes = blank_lines + 1, blank_bytes + consumed
            else:
                framing += consumed - len(record)
                records, record_bytes = records + 1, record_bytes + len(record)
                yield record
    yield FileTally(log_file.path, log_file.bytes_read(), framing, blank_lines, blank_bytes, records, record_bytes)


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def csv_records(lines: Iterable[bytes], delimiter: str = ",", quote: str = '"', max_record_bytes: int | None = None,
                max_record_lines: int | None = None) -> Iterator[tuple[bytes, int]]:
    """`(record, bytes it took)` for each CSV record of a file's lines (each line with its line break): the record
    without its final line break, and its bytes in the file with every line break.

    A line break inside a quoted field continues the record. A record whose quote is still open past
    `max_record_lines` lines or `max_record_bytes` bytes, or at the end of the lines, is cut back to its first
    line, and the lines after it are read again as records of their own.
    """
    quote_byte = quote.encode()
    new_scanner = lambda: _QuoteScanner(delimiter.encode()[0], quote_byte[0])  # noqa: E731 - one line, used thrice
    source = iter(lines)
    again: deque[bytes] = deque()  # lines after a cut-back, read before the rest of the source
    parts: list[bytes] = []
    size = 0
    scanner = new_scanner()
    while True:
        line = again.popleft() if again else next(source, None)
        if line is None:
            if not parts:
                return
            cut = True  # a quote still open at the end of the lines
        else:
            parts.append(line)
            size += len(line)
            if scanner.in_quotes or quote_byte in line:
                scanner.scan(line)
            if not scanner.in_quotes:
                yield without_line_break(b"".join(parts)), size
                parts, size, scanner = [], 0, new_scanner()
                continue
            cut = ((max_record_bytes is not None and size > max_record_bytes)
                   or (max_record_lines is not None and len(parts) > max_record_lines))
        if cut:
            first, *rest = parts
            again.extendleft(reversed(rest))
            yield without_line_break(first), len(first)
            parts, size, scanner = [], 0, new_scanner()


class _QuoteScanner:
    """Whether a CSV record is inside a quoted field after the bytes seen so far. A quote opens a quoted field
    only at a field's start (elsewhere it is a literal character); inside one, a doubled quote is an escaped quote."""

    def __init__(self, delimiter: int, quote: int):
        self.delimiter, self.quote = delimiter, quote
        self.in_quotes = False
        self.at_field_start = True

    def scan(self, line: bytes) -> None:
        index, end = 0, len(line)
        while index < end:
            byte = line[index]
            if self.in_quotes:
                if byte == self.quote:
                    if index + 1 < end and line[index + 1] == self.quote:
                        index += 1  # "" inside quotes
                    else:
                        self.in_quotes = False
            elif byte == self.delimiter or byte in (10, 13):
                self.at_field_start = True
            elif byte == self.quote and self.at_field_start:
                self.in_quotes, self.at_field_start = True, False
            else:
                self.at_field_start = False
            index += 1


def without_line_break(record: bytes) -> bytes:
    if record.endswith(b"\n"):
        record = record[:-1]
    return record[:-1] if record.endswith(b"\r") else record
