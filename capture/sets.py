"""Capture sets: several files (or directories of them) read as one capture, as mergecap merges them.

Merged (the default): frames in time order, the earliest head of every file first, ties going to the file named
first (mergecap's rule: each file is taken as it is, in its own order; only the heads are compared); frames are
renumbered 1, 2, 3 ... across the set. Concatenated (`--concatenate`, mergecap -a): one file after another.

Interfaces, as mergecap's default IDB merge mode ("all"): when every file has the same list of interfaces (link
type, snapshot length, timestamp resolution), a frame keeps its interface id; otherwise each file's interfaces
follow the earlier files' (file 2's interface 0 becomes n0, ...).

A file that is not a capture, or that is cut short, is named in one line through `on_error` (the CLI prints it on
stderr), and the rest of the set goes on: the readable frames of a truncated file are kept, as mergecap keeps them.
`errors` lists them afterwards (the CLI exits 2 then, as tshark and mergecap do on a read error).

The merge is a heap of file heads (heapq), not a hand-written sort: memory is one frame per file.
"""
from __future__ import annotations

import heapq
import struct
from collections.abc import Callable, Iterator
from dataclasses import replace

from .files import CaptureError, Interface, RawFrame, open_capture

MERGED_PCAP = Interface(1)      # a pcap file's frames in a merged set: mergecap's unnamed interface

CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap", ".pcap.gz", ".pcapng.gz", ".gz")


def expand(paths) -> list[str]:
    """The files named, and the capture files found (not recursively) in the directories named, sorted by name."""
    from pathlib import Path          # (imported by every run, used by a set only)
    found: list[str] = []
    for p in map(Path, paths):
        if p.is_dir():
            found.extend(str(c) for c in sorted(p.iterdir()) if c.is_file() and c.name.endswith(CAPTURE_SUFFIXES))
        else:
            found.append(str(p))
    return found


def _pcap_interfaces(path) -> tuple | None:
    """(link type, snaplen, nanosecond?) of a plain pcap file, None for anything else (pcapng, gzip)."""
    try:
        with open(path, "rb") as f:
            head = f.read(24)
    except OSError:
        return None
    if len(head) < 24:
        return None
    for order in "<>":
        magic, = struct.unpack(order + "I", head[:4])
        if magic in (0xA1B2C3D4, 0xA1B23C4D):
            snaplen, linktype = struct.unpack(order + "II", head[16:24])
            return ((linktype & 0x0FFFFFFF, snaplen, magic == 0xA1B23C4D),)
    return None


def _pcapng_interfaces(path) -> tuple | None:
    """The interface blocks (their bodies) of a pcapng file's first section, before its first packet."""
    try:
        f = open(path, "rb")
    except OSError:
        return None
    with f:
        head = f.read(12)
        if len(head) < 12 or head[:4] != b"\x0a\x0d\x0d\x0a":
            return None
        order = "<" if head[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
        length, = struct.unpack(order + "I", head[4:8])
        f.seek(length)
        found = []
        while len(found) < 1024:
            hdr = f.read(8)
            if len(hdr) < 8:
                break
            kind, length = struct.unpack(order + "II", hdr)
            if length < 12:
                return None
            body = f.read(length - 8)
            if kind == 1:
                found.append(body[:-4])
            elif kind in (2, 3, 6):
                break
        return tuple(found)


def interfaces(path) -> tuple | None:
    """What mergecap compares to decide whether files share their interfaces (None: unknown, never shared)."""
    return _pcap_interfaces(path) or _pcapng_interfaces(path)


class CaptureSet:
    """Iterate for the RawFrames of several capture files, merged in time order or concatenated."""

    def __init__(self, paths, *, concatenate: bool = False,
                 on_error: Callable[[str, str], None] | None = None):
        self.paths = expand(paths)
        self.concatenate = concatenate
        self.on_error = on_error
        self.errors: list[tuple[str, str]] = []      # (path, message) of every file that failed
        self.counts = [0] * len(self.paths)           # frames read from each file
        lists = [interfaces(p) for p in self.paths]
        shared = all(ifs is not None and ifs == lists[0] for ifs in lists)
        self.interface_base = [0] * len(self.paths)   # what each file's interface ids are moved by
        if not shared:
            base = 0
            for i, ifs in enumerate(lists):
                self.interface_base[i] = base
                base += len(ifs) if ifs else 1

    def _fail(self, path: str, message: str) -> None:
        if any(p == path for p, _ in self.errors):      # read again (-2's first pass): named once
            return
        self.errors.append((path, message))
        if self.on_error is not None:
            self.on_error(path, message)

    def _frames(self, index: int) -> Iterator[RawFrame]:
        """One file's frames, its interface ids moved; a failure is reported and ends only this file."""
        path = self.paths[index]
        base = self.interface_base[index]
        try:
            capture = open_capture(path)
        except (CaptureError, OSError) as exc:
            self._fail(path, _message(exc))
            return
        merged = len(self.paths) > 1     # as mergecap's pcapng: one section, every frame on a named interface
        try:
            for frame in capture:
                self.counts[index] += 1
                if base:
                    frame.interface += base
                if merged:
                    iface = frame.iface
                    if iface is None:
                        frame.iface = MERGED_PCAP
                    elif iface.section != 1:
                        frame.iface = replace(iface, section=1)
                yield frame
        except CaptureError as exc:
            self._fail(path, f"{exc} after {self.counts[index]} packets")
        finally:
            capture.close()

    def __iter__(self) -> Iterator[RawFrame]:
        number = 0
        for index, frame in self.indexed():
            number += 1
            frame.number = number
            yield frame

    def indexed(self) -> Iterator[tuple[int, RawFrame]]:
        """(file index, frame) in set order, frames still numbered as in their file."""
        if self.concatenate:
            for index in range(len(self.paths)):
                for frame in self._frames(index):
                    yield index, frame
            return
        heads = []
        iters = [self._frames(i) for i in range(len(self.paths))]
        for index, it in enumerate(iters):
            frame = next(it, None)
            if frame is not None:
                heads.append((frame.ts_ns, index, frame))
        heapq.heapify(heads)
        while heads:
            _, index, frame = heads[0]
            yield index, frame
            following = next(iters[index], None)
            if following is None:
                heapq.heappop(heads)
            else:
                heapq.heapreplace(heads, (following.ts_ns, index, following))

    def close(self) -> None:
        """Nothing to release between frames: each file closes when its frames run out."""


def _message(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)


def open_set(paths, *, concatenate: bool = False, on_error=None) -> CaptureSet:
    """A CaptureSet of files and directories (see the module docstring)."""
    return CaptureSet(paths, concatenate=concatenate, on_error=on_error)
