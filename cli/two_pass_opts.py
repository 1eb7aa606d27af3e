"""The read command's -2 (tshark's two-pass analysis): a first pass over the file learns what only later frames
say (the frame that acknowledges an ENet command), a second pass, with a fresh dissector state, prints it.

Kept out of read_cmd.py: `dispatcher()` gives read() the dispatcher to print with.
"""
from __future__ import annotations

from ..capture.files import CaptureError
from ..dissectors.enet_analysis import second_pass_prefs
from ..engine.dispatch import Dispatcher, Settings


def dispatcher(path, protocols, settings: Settings, first: Dispatcher, two_pass: bool) -> Dispatcher:
    """With -2 and a file: run `first` over the file, then a fresh dispatcher that knows what it learnt."""
    if not two_pass or not path or path == "-":
        return first               # a live capture or a pipe cannot be read twice: one pass
    from ..session import packets
    # the first pass keeps each TCP connection's final state (capture.tcp_analysis) and where each SCTP message
    # completes (capture.sctp); the second shows them
    first.tcp_pass = ({}, None), ({}, None)
    try:
        for _ in packets(path, dispatcher=first):
            pass
    except (CaptureError, OSError):     # what could be read was learnt; the printing pass reports the error
        pass
    prefs = {**settings.prefs, **second_pass_prefs(first.conversations)}
    second = Dispatcher(protocols, Settings(dict(settings.prefs), settings.decode_as))
    second.settings.prefs.update(prefs)         # after the check: the learnt facts are no user preference
    tcp, sctp = getattr(first, "pass_tables", (None, None))
    second.tcp_pass = (None, tcp.learnt_facts() if tcp is not None else None), \
        (None, sctp.record if sctp is not None else None)
    return second
