"""`protodump read` (the default command): decode a capture file into summaries, trees, hex or JSON."""
from __future__ import annotations

import sys

import click

from ..capture.files import CaptureError, open_capture
from ..session import packets
from ..dissectors import PROTOCOLS
from ..engine.dispatch import DispatchError, Dispatcher, Settings
from ..output import text
from ..output.json_out import JsonWriter


def parse_decode_as(values) -> dict:
    """-d udp.port==23456,blank (tshark's syntax)."""
    table = {}
    for value in values:
        try:
            selector, proto = value.split(",", 1)
            layer, port = selector.split("==", 1)
            transport = layer.split(".")[0]
            if layer != f"{transport}.port" or transport not in ("udp", "tcp"):
                raise ValueError
            table[(transport, int(port, 0))] = proto.strip()
        except ValueError:
            raise click.BadParameter(f"{value!r}: expected udp.port==PORT,PROTOCOL", param_hint="-d") from None
    return table


def parse_prefs(values) -> dict:
    """-o blank.revision:2015 (tshark's syntax)."""
    prefs = {}
    for value in values:
        name, sep, setting = value.partition(":")
        if not sep:
            raise click.BadParameter(f"{value!r}: expected NAME:VALUE", param_hint="-o")
        prefs[name] = setting
    return prefs


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option("-r", "read_file", type=click.Path(dir_okay=False), help="Capture file to read (pcap, pcapng, gzip).")
@click.option("-V", "verbose", is_flag=True, help="Print the detail tree of every packet.")
@click.option("-x", "hexdump", is_flag=True, help="Print a hex dump (and of reassembled/inflated buffers).")
@click.option("-c", "count", type=click.IntRange(min=1), help="Stop after this many packets.")
@click.option("-T", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Output format.")
@click.option("-O", "only", help="Detail only these protocols (comma separated), like tshark -O.")
@click.option("-d", "decode_as", multiple=True, metavar="udp.port==PORT,PROTO", help="Decode a port as a protocol.")
@click.option("-o", "prefs", multiple=True, metavar="NAME:VALUE", help="Set a preference (e.g. blank.revision:2015).")
@click.option("-q", "quiet", is_flag=True, help="Print no packets (useful to check a capture reads cleanly).")
def read(file, read_file, verbose, hexdump, count, output_format, only, decode_as, prefs, quiet):
    """Decode a capture file.

    \b
    Examples:
      protodump captures/blank-server-session.pcap
      protodump -V -x -c 1 captures/blank-server-session.pcap
      protodump -T json captures/blank-server-session.pcap
      protodump -O blank -r capture.pcap
    """
    path = read_file or file
    if not path:
        raise click.UsageError("no capture file: give FILE or -r FILE")
    settings = Settings(parse_prefs(prefs), parse_decode_as(decode_as))
    try:
        dispatcher = Dispatcher(PROTOCOLS, settings)
    except DispatchError as exc:
        raise click.UsageError(str(exc)) from None
    out = sys.stdout
    only_set = set(only.split(",")) if only else None
    detail = verbose or only_set is not None
    writer = JsonWriter(out) if output_format == "json" else None
    first_ns, n = None, 0
    try:
        open_capture(path).close()       # a missing or non-capture file: one clear line, before any output
    except (CaptureError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    capture_path = path
    try:
        for packet in packets(capture_path, dispatcher=dispatcher):
            frame = packet.frame
            if first_ns is None:
                first_ns = frame.ts_ns
            n += 1
            if not quiet:
                if writer is not None:
                    writer.write(packet)
                else:
                    emit_text(out, packet, first_ns, detail, hexdump, only_set)
            if count and n >= count:
                break
    except CaptureError as exc:
        if writer is not None:
            writer.close()
        out.flush()
        click.echo(f"protodump: {path}: {exc} after {n} packets", err=True)
        sys.exit(1)
    if writer is not None:
        writer.close()


_CONSOLES: dict = {}


def _console(out):
    """A rich console for colours, only when writing to a terminal."""
    if not out.isatty():
        return None
    if id(out) not in _CONSOLES:
        from rich.console import Console
        _CONSOLES[id(out)] = Console(file=out, highlight=False)
    return _CONSOLES[id(out)]


def emit_text(out, packet, first_ns, detail, hexdump, only):
    if not detail:
        out.write(text.summary_line(packet, first_ns) + "\n")
        if hexdump:
            out.write("\n".join(text.hex_lines(packet)) + "\n\n")
        return
    console = _console(out)
    for depth, line, style in text.layer_lines(packet, only):
        if console is not None and style:
            console.print("    " * depth + line, style=style, highlight=False, markup=False, soft_wrap=True)
        else:
            out.write("    " * depth + line + "\n")
    if hexdump:
        out.write("\n" + "\n".join(text.hex_lines(packet)) + "\n")
    out.write("\n")
