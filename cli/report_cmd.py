"""`protodump report CAPTURE -o report.html`: one self-contained HTML page of what the session did (players,
bandwidth by message type, ENet RTT and loss, transfers, expert infos), plots by matplotlib (protodump[report])."""
from __future__ import annotations

import os
import sys

import click

from ..analysis.report_data import gather
from ..capture.files import CaptureError, open_capture
from ..output.report_html import ReportUnavailable, render
from .read_cmd import parse_decode_as, parse_prefs


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("capture", type=click.Path(dir_okay=False))
@click.option("-o", "output", required=True, type=click.Path(dir_okay=False), help="The HTML file to write.")
@click.option("-d", "decode_as", multiple=True, metavar="udp.port==PORT,PROTO", help="Decode a port as a protocol.")
@click.option("--pref", "prefs", multiple=True, metavar="NAME:VALUE", help="A preference, as read's -o.")
def report(capture, output, decode_as, prefs):
    """Write a session report: one HTML page, viewable with no network.

    \b
    Example:
      protodump report captures/iceball-enet-session.pcap -o report.html
    """
    from ..engine.dispatch import Dispatcher, DispatchError, Settings
    from ..dissectors import PROTOCOLS
    from ..session import packets
    try:
        dispatcher = Dispatcher(PROTOCOLS, Settings(parse_prefs(prefs), parse_decode_as(decode_as)))
        open_capture(capture).close()
    except DispatchError as exc:
        raise click.UsageError(str(exc)) from None
    except (CaptureError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    note = None

    def frames():
        nonlocal note
        try:
            yield from packets(capture, dispatcher=dispatcher)
        except CaptureError as exc:
            note = str(exc)

    data = gather(frames())
    try:
        page = render(data, os.path.basename(capture))
    except ReportUnavailable as exc:
        raise click.ClickException(str(exc)) from None
    with open(output, "w", encoding="utf-8") as f:
        f.write(page)
    if note:      # as `protodump read`: everything that could be read is used, and the exit status says it
        click.echo(f"protodump: {capture}: {note} (the report covers the packets before it)", err=True)
        sys.exit(1)
