"""The read command's -2 (tshark's two-pass analysis): a first pass over the file learns what only later frames
say (the frame that acknowledges an ENet command), a second pass, with a fresh dissector state, prints it.

Kept out of read_cmd.py as capture_opts is: the flag lives in the click context; `dispatcher()` gives read() the
dispatcher to print with.
"""
from __future__ import annotations

import click

from ..capture.files import CaptureError
from ..dissectors.enet_analysis import second_pass_prefs
from ..engine.dispatch import Dispatcher, Settings

_KEY = "protodump.two_pass"


def _store(ctx, _param, value):
    ctx.meta[_KEY] = value


def two_pass_option(command):
    return click.option("-2", "two_pass", is_flag=True, expose_value=False, callback=_store,
                        help="Two passes (as tshark -2): show what later frames say, e.g. "
                             "[Acknowledged in frame N] on ENet reliable commands.")(command)


def dispatcher(path, protocols, settings: Settings, first: Dispatcher) -> Dispatcher:
    """With -2 and a file: run `first` over the file, then a fresh dispatcher that knows what it learnt."""
    if not click.get_current_context().meta.get(_KEY) or not path or path == "-":
        return first               # a live capture or a pipe cannot be read twice: one pass
    from ..session import packets
    try:
        for _ in packets(path, dispatcher=first):
            pass
    except (CaptureError, OSError):     # what could be read was learnt; the printing pass reports the error
        pass
    prefs = {**settings.prefs, **second_pass_prefs(first.conversations)}
    second = Dispatcher(protocols, Settings(dict(settings.prefs), settings.decode_as))
    second.settings.prefs.update(prefs)         # after the check: the learnt facts are no user preference
    return second
