"""`protodump read` (the default command): decode a capture file into summaries, trees, hex or JSON."""
from __future__ import annotations

import sys

import click

from ..capture.files import CaptureError, open_capture
from ..dissectors import PROTOCOLS
from ..engine.dispatch import DispatchError, Dispatcher, Settings
from ..output import text
from ..output.json_out import JsonWriter
from ..output import fields_out
from . import capture_opts
from . import export_opts
from . import two_pass_opts
from . import filter_cli
from ..analysis import stats
from ..output import stats_out
from ..output.progress import track


def parse_decode_as(values) -> dict:
    """-d udp.port==23456,blank (tshark's syntax): any dissector table (udp.port, tcp.port, sctp.port, ws.port,
    enet.connect_data, enet.port) and key."""
    table = {}
    for value in values:
        try:
            selector, proto = value.split(",", 1)
            name, key = selector.split("==", 1)
            if "." not in name:
                raise ValueError
            table[(name.strip(), int(key, 0))] = proto.strip()
        except ValueError:
            raise click.BadParameter(f"{value!r}: expected TABLE==VALUE,PROTOCOL (udp.port==PORT,PROTOCOL)",
                                     param_hint="-d") from None
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
@click.option("-Y", "display_filter", metavar="FILTER",
              help='Display filter (Wireshark syntax): show only matching packets, e.g. -Y \'blank.type == "Login"\'.')
@click.option("-T", "output_format", type=click.Choice(["text", "json", "fields"]), default="text",
              show_default=True, help="Output format.")
@click.option("-e", "fields_e", multiple=True, metavar="FIELD", help="With -T fields: a field to print (repeat).")
@click.option("-E", "fields_opts", multiple=True, metavar="OPTION=VALUE",
              help="With -T fields: header=y|n, separator=/t|/s|C, quote=d|s|n, occurrence=f|l|a, aggregator=,|/s|C.")
@click.option("-O", "only", help="Detail only these protocols (comma separated), like tshark -O.")
@click.option("-d", "decode_as", multiple=True, metavar="udp.port==PORT,PROTO", help="Decode a port as a protocol.")
@click.option("-o", "prefs", multiple=True, metavar="NAME:VALUE", help="Set a preference (e.g. blank.revision:2015).")
@click.option("-q", "quiet", is_flag=True, help="Print no packets (useful to check a capture reads cleanly); "
              "with -z, print only the statistics.")
@click.option("-z", "zstats", multiple=True, metavar="STATISTIC",
              help="Statistics, printed at the end (repeat): io,phs | conv,eth|ip|ipv6|udp|tcp | "
                   "endpoints,eth|ip|ipv6|udp|tcp | io,stat,INTERVAL[,FILTER...] | expert | blank,types | "
                   "blank,seq | follow,udp|tcp,ascii|hex|raw|yaml,N (or ADDR:PORT,ADDR:PORT) | "
                   "follow,blank,MODE,N (each blank message of UDP stream N: its summary and the reassembled "
                   "and inflated chunk buffers). Game sessions: enet,peers | iceball,files | rutentoy,objects | "
                   "freeblox,assets | players | follow,enet|iceball|rutentoy|websocket|freeblox,MODE|decoded,N"
                   "[,KEY=VALUE].")
@click.option("--format", "stats_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Statistics format (text: tshark's layout, rich tables on a terminal).")
@capture_opts.capture_options          # -i -f -a -w -P -D (live capture and writing pcapng)
@export_opts.export_options            # --export-objects PROTO,DIR
@two_pass_opts.two_pass_option         # -2
def read(file, read_file, verbose, hexdump, count, output_format, only, decode_as, prefs, quiet, fields_e,
         fields_opts, zstats=(), stats_format="text", display_filter=None):
    """Decode a capture file.

    \b
    Examples:
      protodump captures/blank-server-session.pcap
      protodump -V -x -c 1 captures/blank-server-session.pcap
      protodump -T json captures/blank-server-session.pcap
      protodump -O blank -r capture.pcap
      protodump -T fields -e frame.number -e blank.seq -E header=y capture.pcap
      protodump -D                                        # interfaces for -i
      protodump -i lo -f "udp port 12354" -a duration:60  # live, decoded as packets arrive
      protodump -i lo -c 100 -w session.pcapng            # capture to a file (add -P to print too)
    """
    path = read_file or file
    source = capture_opts.current()
    source.check(path)
    if not path and source.interface is None:
        raise click.UsageError("no capture file: give FILE or -r FILE (or -i IFACE to capture live)")
    quiet = quiet or source.quiet
    taps = stats_taps(zstats)        # -z: bad arguments fail here, before any output
    exporter = export_opts.current()  # --export-objects: fed every packet, as a tap
    shows = filter_cli.compile_or_exit(display_filter)    # -Y: a bad filter fails here (exit 2)
    settings = Settings(parse_prefs(prefs), parse_decode_as(decode_as))
    try:
        dispatcher = Dispatcher(PROTOCOLS, settings)
    except DispatchError as exc:
        raise click.UsageError(str(exc)) from None
    dispatcher = two_pass_opts.dispatcher(path, PROTOCOLS, settings, dispatcher)    # -2: a first pass
    out = sys.stdout
    only_set = set(only.split(",")) if only else None
    detail = verbose or only_set is not None
    writer = (JsonWriter(out) if output_format == "json"
              else text.TextWriter(out, detail=detail, hexdump=hexdump, only=only_set))
    if output_format == "fields" or fields_e:
        if output_format != "fields":
            raise click.UsageError("-e needs -T fields")
        try:
            writer = fields_out.make_writer(out, fields_e, fields_opts, PROTOCOLS)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
    n = 0
    try:
        if source.interface is None:
            open_capture(path).close()   # a missing or non-capture file: one clear line, before any output
    except (CaptureError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    capture_path = path
    try:
        # a progress bar (stderr, terminals only, after a moment) when the packets are not what is printed
        slow = source.interface is None and (quiet or taps or source.write_path is not None)
        with track(source.packets(capture_path, dispatcher), capture_path if slow else None) as stream:
            for packet in stream:     # a file, or live frames with -i
                n += 1
                for tap in taps:
                    tap.add(packet)
                if exporter is not None:
                    exporter.add(packet)
                shown = shows is None or shows(packet)
                if shown and not quiet:
                    writer.write(packet)
                if shown:
                    source.passed(packet, out)    # -w; live: flush now
                if count and n >= count:
                    break
    except CaptureError as exc:
        writer.close()
        out.flush()
        click.echo(f"protodump: {path}: {exc} after {n} packets", err=True)
        stats_out.write([t.result() for t in taps], out, stats_format)
        sys.exit(1)
    finally:
        source.finish()                   # closes -w; live: "N packets captured"
    writer.close()
    stats_out.write([t.result() for t in taps], out, stats_format)
    export_opts.finish(exporter)


def stats_taps(args) -> list:
    """The -z taps; a bad argument is one line and exit code 2."""
    try:
        return stats.make_taps(args)
    except stats.StatsError as exc:
        raise click.UsageError(str(exc)) from None
