"""The read command's -2 (tshark's two-pass analysis): a first pass over the file learns what only later frames
say (the frame that acknowledges an ENet command), a second pass, with a fresh dissector state, prints it.

Kept out of read_cmd.py: `dispatcher()` gives read() the dispatcher to print with.
"""
from __future__ import annotations

import os
import stat

from ..capture.files import CaptureError
from ..dissectors import enet_analysis, websocket, ws_handshake
from ..engine.dispatch import Dispatcher, Settings
from .errors import fail, source_name

# What a first pass learns in a conversation (its key there) that earlier frames show on the second: the preference
# under which the second pass's dissectors read it (ENet's "[Acknowledged in frame N]", HTTP's "[Response in frame]")
LEARNT = {enet_analysis.ACKED_IN: enet_analysis.SECOND_PASS, ws_handshake.RESPONSE_IN: ws_handshake.SECOND_PASS,
          websocket.EARLY: websocket.SECOND_PASS}


def _a_pipe(path) -> bool:
    if path == "-":
        return True
    try:
        return isinstance(path, str) and stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False               # (a missing file: the read says so)


def dispatcher(path, protocols, settings: Settings, first: Dispatcher, two_pass: bool, keeps=None,
               count: int | None = None) -> Dispatcher:
    """With -2 and a file: run `first` over the file, then a fresh dispatcher that knows what it learnt. As
    tshark's first pass, it applies the read filter (`keeps`, -R) and stops after `count` frames it keeps (-c):
    the second pass then shows those frames only, numbered 1, 2, 3 ... (the returned dispatcher's `selected`: a
    Selection, or None for every frame)."""
    if not two_pass or not path:
        return first               # a live capture: one pass
    if _a_pipe(path):              # (read once: the second pass would find nothing, or wait for ever on a FIFO)
        fail(f"{source_name(path)} is a pipe or FIFO; protodump can't read pipe or FIFO files in two-pass mode.", 2)
    from ..session import packets
    # the first pass keeps each TCP connection's final state (capture.tcp_analysis) and where each SCTP message
    # completes (capture.sctp); the second shows them
    first.tcp_pass = ({}, None), ({}, None)
    first.reassembled_in = {}
    first.echo_replies = {}
    first.keeps_learnt = tuple(LEARNT)
    selected: list[int] | None = [] if keeps is not None or count else None
    try:
        for packet in packets(path, dispatcher=first):
            if selected is None:
                continue
            if keeps is None or keeps(packet):
                selected.append(packet.frame.number)
                if count and len(selected) >= count:
                    break
    except (CaptureError, OSError):     # what could be read was learnt; the printing pass reports the error
        pass
    prefs = {**settings.prefs, **second_pass_prefs([*first.conversations.values(), *first.learnt_kept])}
    second = Dispatcher(protocols, Settings(dict(settings.prefs), settings.decode_as))
    second.settings.prefs.update(prefs)         # after the check: the learnt facts are no user preference
    # Wireshark's heuristic lists keep the order the first pass left them in (a winner moves to the front)
    second.heuristic_lists = {name: list(entries) for name, entries in first.heuristic_lists.items()}
    second.reassembled_learnt = first.reassembled_in
    second.echo_learnt = first.echo_replies
    tcp, sctp = getattr(first, "pass_tables", (None, None))
    second.tcp_pass = (None, tcp.learnt_facts() if tcp is not None else None), \
        (None, sctp.record if sctp is not None else None)
    second.selected = Selection(selected) if selected is not None else None
    return second


class Selection:
    """The frames tshark's first pass kept (-R, -c): the second pass dissects every frame up to the last kept one
    (the state is the first pass's, which saw them all) and shows the kept ones. Frames are numbered as tshark's
    first pass numbers them: one more than the frames kept before (a dropped frame shares the next kept one's)."""

    def __init__(self, selected: list[int]):
        self.selected, self.last = set(selected), max(selected, default=0)
        self.kept = False           # whether the frame the second pass read last is one of them

    def frames(self, frames):
        kept = 0
        for frame in frames:
            if frame.number > self.last:
                return
            self.kept = frame.number in self.selected
            frame.number = kept + 1
            kept += self.kept
            yield frame

    def keeps(self, _packet) -> bool:
        return self.kept


def second_pass_prefs(conversations) -> dict:
    """What a first pass over a capture learnt that a second one shows (tshark -2): the prefs to add.
    `conversations`: the first pass's conversation dicts (live, and what was kept of the freed ones)."""
    learnt: dict = {}
    for conv in conversations:
        for key, pref in LEARNT.items():
            facts = conv.get(key)
            if facts:
                learnt.setdefault(pref, {}).update(facts)
    return learnt
