"""The tables a shard decodes with when a plan numbers its frames (-j: api/jobs.py; a split file under --dask:
api/shards.py run_shard): `tcp.stream`, `udp.stream` and the previous frame's time as one process would have
them, each set from the plan before the frame is decoded, and the frames a worker's plan names."""
from __future__ import annotations

from collections import deque

from .capture.clock import FrameClock
from .capture.conversations import UdpTable
from .capture.files import open_capture
from .capture.sctp import TsnTable
from .capture.tcp_analysis import MAX_CONNECTIONS, Connection, TcpTable
from .planning import NO_TIME

# frame.time_delta_displayed rendered by a worker under a display filter: replaced by the parent (api/jobs_merge.py).
# No real delta between two frames of one capture is 246 years and these exact nanoseconds.
MARKER_NS = 7_777_777_777_123_456_789


class PlannedTcpTable(TcpTable):
    """TcpTable whose connections take the stream index the plan gave the frame (`number`, set before each
    decode): a new connection wherever one process would have started one (first segment, SYN after FIN/RST, a
    connection evicted by the table's bound across all conversations, or freed after its end: the plan frees it
    at the frame one process does, which a worker that sees only its own frames would not)."""

    number = -1

    def _connection(self, key: frozenset, ts: int, me: tuple, syn_seq: int | None) -> Connection:
        conn = self.connections.get(key)
        self.reused = False
        if conn is None or conn.stream != self.number:
            self.reused = syn_seq is not None and conn is not None and self._reuses(conn, me, syn_seq)
            if conn is None and len(self.connections) >= MAX_CONNECTIONS:
                self.connections.pop(next(iter(self.connections)))
            conn = self.connections[key] = Connection(self.number, ts)
        return conn


class PlannedUdpTable(UdpTable):
    """UdpTable whose conversations take the udp.stream the plan gave the frame (for ICMP: the quoted one's)."""

    __slots__ = ("number",)

    def __init__(self):
        super().__init__()
        self.number = -1

    def _conv(self, src: str, sport: int, dst: str, dport: int, ts: int) -> list:
        key = self.key(src, sport, dst, dport)
        conv = self.streams.get(key)
        if conv is None or conv[0] != self.number:
            conv = self.streams[key] = [self.number, ts, ts]
        return conv


class PlannedClock(FrameClock):
    """The capture's clock seen from a shard: the first frame and the previous captured frame come from the
    frame headers (`prev_ns`, set before each decode); the previous displayed one is the previous captured one
    without a display filter, else the marker."""

    __slots__ = ("prev_ns", "filtering")

    def __init__(self, first_ns: int, filtering: bool):
        super().__init__()
        self.first_ns, self.filtering, self.prev_ns = first_ns, filtering, None

    def stamp(self, ts: int) -> tuple:
        prev = self.prev_ns
        return (self.first_ns, prev, ts - MARKER_NS if self.filtering else prev)

    def displayed(self, ts: int, shown: bool) -> None:
        pass


def planned_tables(first_ns: int, filtering: bool):
    """(tcp, sctp, clock, udp) tables for packets_from_frames in a worker."""
    return PlannedTcpTable(), TsnTable(), PlannedClock(first_ns, filtering), PlannedUdpTable()


def planned_frames(path, chunks, tables, seek: bool = True):
    """The frames of `path` that a shard's plan names, each announced to the tables with its plan numbers.
    `chunks`: arrays of planned frames (api/planning.py Planner, ENTRY integers each), in order; `seek`: their
    places are byte offsets, read by seeking (else the file is read through, as a gzip file must be). Entries of
    frame number 0 are pcapng blocks the reader needs (interface descriptions, section headers)."""
    tcp, _, clock, udp = tables
    if seek:
        todo: deque = deque()

        def jumps():
            for chunk in chunks:
                it = iter(chunk)
                for number, where, stream, prev in zip(it, it, it, it):
                    if number:
                        todo.append((number, stream, prev))
                    yield where
        capture = open_capture(path, jumps=jumps())
        frames = capture
    else:
        capture = open_capture(path)

        def frames():
            reader = iter(capture)
            for chunk in chunks:
                it = iter(chunk)
                for number, _, stream, prev in zip(it, it, it, it):
                    if number:
                        todo.append((number, stream, prev))
                        for frame in reader:
                            if frame.number == number:
                                yield frame
                                break
        todo = deque()
        frames = frames()
    try:
        for frame in frames:
            number, stream, prev = todo.popleft()
            frame.number = number
            clock.prev_ns = None if prev == NO_TIME else prev
            tcp.number = udp.number = stream
            yield frame
    finally:
        capture.close()
