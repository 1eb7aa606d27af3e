"""Capture files in: pcap / pcapng, optionally gzip-compressed, read as a stream of `RawFrame`s.

The format is found from the magic number, never from the file name. Reading is streaming (one record at a
time through a buffered file), so memory stays constant whatever the file size.

Errors are `CaptureError(message, offset)`. A damaged file yields every complete frame first and raises
only when it reaches the bad record, with that record's byte offset (in the uncompressed stream for gzip).
"""
from __future__ import annotations

import io
import struct
import zlib
from dataclasses import dataclass
from typing import Iterator

GZIP_MAGIC = b"\x1f\x8b"


@dataclass(slots=True)
class RawFrame:
    """One captured frame, before any decoding."""

    number: int        # 1-based, in file order
    ts_ns: int         # nanoseconds since the epoch (integer: no float rounding at ns resolution)
    caplen: int        # bytes captured (len(data))
    length: int        # bytes on the wire
    linktype: int      # LINKTYPE_* of the frame's interface
    interface: int     # interface index (0 for pcap; the IDB index for pcapng)
    data: bytes
    prec: int = 6      # the time stamps' precision in decimal digits (0, 1, 2, 3, 6 or 9), as wiretap's tsprec
    iface: Interface | None = None   # pcapng: the interface's section, name and description; None for pcap
    comments: tuple = ()             # pcapng: the packet's opt_comment strings
    flags: int | None = None         # pcapng: epb_flags (direction, reception type, link-layer errors)


@dataclass(slots=True, frozen=True)
class Interface:
    """What a pcapng file says about the interface a frame came in on (tshark's frame.section_number,
    frame.interface_name, frame.interface_description)."""

    section: int                     # 1-based section number
    name: str | None = None
    description: str | None = None
    tsresol: int = 6                 # if_tsresol (a -w copy keeps it when it is a power of ten)


def precision(units_per_second: int) -> int:
    """Wireshark 4.0's time stamp precision (digits) for a resolution of `units_per_second` (pcapng if_tsresol):
    nanoseconds from 10^9 up, microseconds from 10^6, milliseconds from 10^3, then 2, 1, 0 digits."""
    for limit, digits in ((1_000_000_000, 9), (1_000_000, 6), (1000, 3), (100, 2), (10, 1)):
        if units_per_second >= limit:
            return digits
    return 0


class CaptureError(Exception):
    """A capture file that cannot be read (further): `offset` is the byte offset of the bad header/record."""

    def __init__(self, message: str, offset: int = 0, *, compressed: bool = False):
        self.message = message
        self.offset = offset
        self.compressed = compressed
        where = "offset in the uncompressed stream" if compressed else "offset"
        super().__init__(f"{message} ({where} {offset})")


class _GunzipRaw(io.RawIOBase):
    """gzip as a raw stream, wrapped in io.BufferedReader by `_open_stream`.

    Why not gzip.open: when the compressed data is cut short, GzipFile raises EOFError from inside a read and
    the bytes it had already inflated for that read are lost, so the reader could not tell which record was
    the last complete one. Here a cut stream is a plain early EOF (`truncated` says so), and the record
    readers report the exact offset of the incomplete record, as for an uncompressed file.
    """

    CHUNK = 64 * 1024

    def __init__(self, raw):
        self._raw = raw
        self._z = zlib.decompressobj(wbits=31)
        self._pending = b""          # compressed input not yet consumed
        self.truncated = False       # compressed data ended inside a gzip member
        self.error: str | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        want = len(buf)
        while True:
            if self._z.eof:
                # A gzip file may hold several members back to back (e.g. `cat a.gz b.gz`).
                rest = self._z.unused_data + self._pending
                self._pending = b""
                if not rest:
                    rest = self._raw.read(self.CHUNK)
                if not rest:
                    return 0
                self._z = zlib.decompressobj(wbits=31)
                self._pending = rest
            if not self._pending:
                self._pending = self._z.unconsumed_tail or self._raw.read(self.CHUNK)
                if not self._pending:
                    self.truncated = True
                    return 0
            try:
                out = self._z.decompress(self._pending, want)  # bounded output: constant memory
            except zlib.error as e:
                self.error = f"corrupt gzip data: {e}"
                return 0
            self._pending = self._z.unconsumed_tail
            if out:
                buf[:len(out)] = out
                return len(out)

    def close(self) -> None:
        self._raw.close()
        super().close()


class _Stream:
    """A buffered byte stream plus what the record readers need to word an error."""

    def __init__(self, f, gunzip: _GunzipRaw | None):
        self.read = f.read
        self.file = f
        self.gunzip = gunzip

    @property
    def compressed(self) -> bool:
        return self.gunzip is not None

    def jump(self, jumps, offset: int) -> int | None:
        """Where a reader given `jumps` (offsets of the records to read) reads next, sought to; None: no more."""
        at = next(jumps, None)
        if at is not None and at != offset:
            self.file.seek(at)
        return at

    def error(self, message: str, offset: int) -> CaptureError:
        g = self.gunzip
        if g is not None and g.error:
            message = f"{message}: {g.error}"
        elif g is not None and g.truncated:
            message = f"{message}: gzip stream ends early"
        return CaptureError(message, offset, compressed=self.compressed)


STDIN = "-"          # tshark's name for the standard input


def _raw_input(source):
    """The byte stream of a path, of "-" (the standard input), or of an open binary file object."""
    if source == STDIN:
        import os
        import sys
        fd = sys.stdin.fileno() if sys.stdin is not None else 0
        return os.fdopen(fd, "rb", buffering=0, closefd=False)
    if hasattr(source, "read"):
        return source
    return open(source, "rb")


def _open_stream(source) -> _Stream:
    """Buffered bytes of `source`; gzip is recognised by peeking at its first bytes, never by seeking, so pipes
    and the standard input (not seekable) read like files."""
    raw = _raw_input(source)
    buffered = io.BufferedReader(raw, 256 * 1024) if not hasattr(raw, "peek") else raw
    head = buffered.peek(2)[:2]
    if head == GZIP_MAGIC:
        g = _GunzipRaw(buffered)
        return _Stream(io.BufferedReader(g, 256 * 1024), g)
    return _Stream(buffered, None)


class Capture:
    """An open capture: iterate it for `RawFrame`s. Also a context manager (closes the file)."""

    def __init__(self, path, offsets=None, jumps=None):
        from . import pcapfile, pcapngfile  # the two record readers
        self.path = str(path) if isinstance(path, (str, bytes)) or not hasattr(path, "read") else "<stream>"
        self.is_stdin = path == STDIN
        self._s = _open_stream(path)
        try:
            head = self._s.read(4)
            if len(head) < 4:
                raise self._s.error(f"not a pcap or pcapng file (only {len(head)} bytes)", 0)
            (magic,) = struct.unpack(">I", head)
            if pcapfile.is_magic(magic):
                self.format, self._frames = "pcap", pcapfile.read(self._s, head, offsets, jumps)
            elif magic == pcapngfile.SHB_TYPE:
                self.format, self._frames = "pcapng", pcapngfile.read(self._s, head, offsets, jumps)
            else:
                raise self._s.error(f"not a pcap or pcapng file (magic 0x{magic:08x})", 0)
            next(self._frames)  # runs the file-header checks now, so open_capture fails on a non-capture
        except BaseException:
            self.close()
            raise
        self.compressed = self._s.compressed
        self._frames = self._closing(self._frames)

    def _closing(self, frames):
        # The file closes as soon as the frames run out (or the reader raises), not only at garbage collection.
        try:
            yield from frames
        finally:
            self.close()

    def __iter__(self) -> Iterator[RawFrame]:
        return self._frames

    def __next__(self) -> RawFrame:
        return next(self._frames)

    def close(self) -> None:
        self._s.file.close()

    def __enter__(self) -> Capture:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_capture(path, offsets=None, jumps=None) -> Capture:
    """Open a pcap/pcapng file (gzip or not); iterate the result for RawFrames.

    path: a file name, "-" for the standard input, an open binary file object (a pipe is fine: nothing seeks),
    or a Capture already opened (returned as it is, so a caller can check a stream before handing it on).

    Raises CaptureError at once for a file that is not a capture; a damaged file raises it during iteration,
    after all frames before the damage.

    offsets, jumps: record where each frame is, or read only the frames at given offsets (seeking: not for gzip);
    see capture/pcapfile.py and pcapngfile.py `read` (-j: api/planning.py Planner, api/planned.py planned_frames).
    """
    return path if isinstance(path, Capture) else Capture(path, offsets, jumps)
