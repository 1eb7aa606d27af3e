"""A capture file as a stream of dissected packets: the one pipeline the CLI and the Python API share.

capture input (capture/) → standard layers → game dissectors (engine.dispatch over dissectors/) → packets.
"""
from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from functools import partial

from .capture.clock import FrameClock
from .capture.conversations import UdpTable
from .capture.decode import decode
from .capture.files import RawFrame, open_capture
from .capture.sets import CaptureSet
from .capture.sctp import TsnTable
from .capture.tcp_analysis import TcpTable
from .dissectors import PROTOCOLS
from .engine.dispatch import Dispatcher, Packet, Settings
from .reassembly.ip_fragments import IpFragments


def packets(path, settings: Settings | None = None, dispatcher: Dispatcher | None = None) -> Iterator[Packet]:
    """Dissect every frame of a capture file, in order. Raises capture.files.CaptureError after yielding every
    frame that could be read when the file is truncated or corrupt."""
    dispatcher = dispatcher or Dispatcher(PROTOCOLS, settings)
    capture = path if isinstance(path, CaptureSet) else open_capture(path)     # a capture set: capture/sets.py
    try:
        yield from packets_from_frames(capture, dispatcher=dispatcher)
    finally:
        capture.close()


def packets_from_frames(frames: Iterable[RawFrame], settings: Settings | None = None,
                        dispatcher: Dispatcher | None = None, tables: tuple | None = None) -> Iterator[Packet]:
    """Dissect RawFrames from any source (a file, a live capture: capture/live.py), in order. `tables`: the
    per-capture (tcp, sctp, clock, udp) state to use (-j workers: api/planned.py planned_tables), else new ones."""
    dispatcher = dispatcher or Dispatcher(PROTOCOLS, settings)
    # Packet trees and conversation state hold no reference cycles (tests/test_bounded.py checks it: a cycle would
    # keep each packet alive until the next collection), but the shared-subtree memos keep many objects alive,
    # which makes every automatic collection rescan them (a fifth of a -T json run): collect by hand.
    tcp_table = TcpTable()           # per-capture TCP state (stream indexes, relative sequence numbers)
    tsn_table = TsnTable()           # per-capture SCTP relative TSN bases
    clock = FrameClock()             # per-capture frame times (first, previous, previous displayed)
    udp_table = UdpTable()           # per-capture UDP stream indexes
    # per-capture IP datagrams being reassembled from fragments (-2: where each completes, as TCP's PDUs)
    fragments = IpFragments(record=dispatcher.reassembled_in, learnt=dispatcher.reassembled_learnt)
    if tables is not None:
        tcp_table, tsn_table, clock, udp_table = tables
    udp_table.replies, udp_table.learnt = dispatcher.echo_replies, dispatcher.echo_learnt    # (-2)
    two_pass = getattr(dispatcher, "tcp_pass", None)      # -2's passes (cli/two_pass_opts.py)
    selected = getattr(dispatcher, "selected", None)      # -2 -R / -c: the frames the first pass kept
    if selected is not None:
        frames = selected.frames(frames)
    if two_pass is not None:
        (tcp_table.record, tcp_table.learnt), (tsn_table.record, tsn_table.learnt) = two_pass
        dispatcher.pass_tables = tcp_table, tsn_table
    if tables is None:               # (-j workers' tables start a connection where the planning pass says)
        dispatcher.ended_hooks.append(partial(_forget_tcp, tcp_table))   # (a lambda: a cycle through a compiled generator's scope)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        if dispatcher.standard_only:     # statistics of addresses and lengths: no TCP/SCTP analysis either
            from .engine.dispatch import PlainPacket
            for frame in frames:
                yield PlainPacket(frame, decode(frame, fragments=fragments))
            return
        for frame in frames:
            if frame.number % 50_000 == 0:
                gc.collect()
            yield dispatcher.dissect(frame, decode(frame, tcp_table, tsn_table, clock, udp_table, fragments))
    finally:
        if was_enabled:
            gc.enable()


def _forget_tcp(tcp_table: TcpTable, pair) -> None:
    """Eviction hook for capture.tcp_analysis (its own table is bounded by entries): a connection that ended (FIN
    both ways or RST) and has been freed by engine.lifetime drops its analysis state too (a new connection on the
    same endpoints before that restarts their lifetime instead: engine.dispatch)."""
    tcp_table.forget(frozenset(_endpoint(text) for text in pair))


def _endpoint(text: str) -> tuple[str, int]:
    address, _, port = text.rpartition(":")
    return address, int(port) if port.isdigit() else port
