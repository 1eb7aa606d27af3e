"""A progress bar for long file jobs (statistics, -w, check): rich, on stderr, only when stderr is a terminal and
only once the job has run for about a second (a quick decode shows nothing).

    from protodump.output.progress import track
    with track(packets(path), path) as stream:
        for packet in stream:
            ...

The bar measures bytes of the capture file. Frames carry no file offset, so the offset is computed from the
record sizes, which is exact for pcap (24-byte file header, 16-byte record headers) and within a few option bytes
for pcapng; for gzip the total is the uncompressed size from the gzip trailer. A caller that knows better passes
`position=` (a callable returning the offset) or `total=`.
"""
from __future__ import annotations

import contextlib
import os
import struct
import sys
import time
from collections.abc import Callable, Iterable, Iterator

DELAY = 1.0            # seconds before the bar appears
_EVERY = 256           # packets between clock checks (time.monotonic per packet would cost more than the bar)


def capture_size(path) -> tuple[int, str]:
    """(size in bytes of the frame records' stream, format) of a capture: gzip counts the uncompressed size."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(4)
        if head[:2] == b"\x1f\x8b" and size >= 18:
            f.seek(-4, os.SEEK_END)          # ISIZE: uncompressed size mod 2**32 (of the last member)
            size = struct.unpack("<I", f.read(4))[0] or size
            import gzip
            with gzip.open(path, "rb") as g:
                head = g.read(4)
    fmt = "pcapng" if head == b"\x0a\x0d\x0d\x0a" else "pcap"
    return size, fmt


def record_size(fmt: str) -> Callable[[object], int]:
    """Bytes one frame's record takes in the file."""
    if fmt == "pcapng":
        return lambda frame: 32 + ((frame.caplen + 3) & ~3)      # Enhanced Packet Block without options
    return lambda frame: 16 + frame.caplen


@contextlib.contextmanager
def track(packets: Iterable, path, description: str | None = None, *, total: int | None = None,
          position: Callable[[], int] | None = None, console=None, delay: float = DELAY) -> Iterator[Iterator]:
    """Wrap an iterator of packets (anything with .frame, or RawFrames) with a progress bar over the file's bytes.
    `console`: a rich Console to draw on (default: stderr, and nothing at all unless stderr is a terminal)."""
    if path is None or not os.path.isfile(path):       # a live capture or a pipe: no size to measure against
        yield iter(packets)
        return
    if console is None:
        if not sys.stderr.isatty():
            yield iter(packets)
            return
        from rich.console import Console
        console = Console(file=sys.stderr)
    state = {"bar": None}
    try:
        yield _tracked(packets, path, description, total, position, console, delay, state)
    finally:
        if state["bar"] is not None:
            state["bar"].stop()


def _tracked(packets, path, description, total, position, console, delay, state):
    size, fmt = capture_size(path)
    total = total or size
    record = record_size(fmt)
    offset = 24 if fmt == "pcap" else 0
    start = time.monotonic()
    bar = task = None
    n = 0
    for packet in packets:
        frame = getattr(packet, "frame", packet)
        offset += record(frame)
        n += 1
        if n % _EVERY == 0:
            done = min(position() if position else offset, total)
            if bar is None and time.monotonic() - start >= delay:
                bar, task = _start(console, description or os.path.basename(str(path)), total)
                state["bar"] = bar
            if bar is not None:
                bar.update(task, completed=done)
        yield packet
    if bar is not None:
        bar.update(task, completed=total)


def _start(console, description: str, total: int):
    from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
                               TransferSpeedColumn)
    bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                   TimeRemainingColumn(), console=console, transient=True)
    task = bar.add_task(description, total=total)
    bar.start()
    return bar, task
