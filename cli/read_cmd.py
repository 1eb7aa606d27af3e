"""`protodump read` (the default command): decode a capture file into summaries, trees, hex or JSON."""
from __future__ import annotations

import os
import sys

import click

from ..capture import manuf
from ..capture.files import CaptureError, open_capture
from ..dissectors import PROTOCOLS
from ..engine import demand
from ..engine.dispatch import DispatchError, Dispatcher, Settings
from ..analysis.stats_base import StatsError    # (the taps' error alone: the statistics load when asked for)
from ..output import text
from .. import __version__
from . import errors

OUTPUT_FORMATS = ["text", "tabs", "json", "jsonraw", "ek", "pdml", "psml", "fields"]
_T_CHECK, _T_COMPLETE = errors.choice(OUTPUT_FORMATS, lambda v: errors.output_format(v, OUTPUT_FORMATS))
_TIME_CHECK, _TIME_COMPLETE = errors.choice(text.TIME_FORMATS, errors.time_format)
_SECONDS_CHECK, _SECONDS_COMPLETE = errors.choice(("s", "hms"), errors.seconds_format)
CREATOR = f"protodump/{__version__}"        # tshark writes "wireshark/VERSION" here
from . import capture_opts
from . import completion
from . import export_opts
from . import jobs_opts
from . import sets_opts
from . import two_pass_opts
from ..output.progress import track
# Imported where used, not here: the display filter compiler, the statistics, the other output forms. A plain
# `protodump FILE` or `-V` needs none of them, and start-up is a tenth of a short run's CPU time.


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
            selector = value.partition("==")[2].partition(",")[0]
            if "==" in value and "," in value and "." in value.partition("==")[0]:
                errors.fail(f'Invalid selector number "{selector}"')
            errors.fail(f'Parameter "{value}" doesn\'t follow the template '
                        '"<layer_type>==<selector>,<decode_as_protocol>"')
    return table


def parse_prefs(values) -> dict:
    """-o blank.revision:2015 (tshark's syntax)."""
    prefs = {}
    for value in values:
        name, sep, setting = value.partition(":")
        if not sep:
            errors.fail(f'Invalid -o flag "{value}"')
        prefs[name] = setting
    return prefs


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("file", nargs=-1, type=click.Path(allow_dash=True))
@click.option("-r", "--read-file", "read_file", type=click.Path(dir_okay=False, allow_dash=True),
              help="Capture file to read (pcap, pcapng, gzip); - is the standard input (a pipe is fine).")
@click.option("-V", "verbose", is_flag=True, help="Print the detail tree of every packet.")
@click.option("-x", "hexdump", is_flag=True, help="Print a hex dump (and of reassembled/inflated buffers).")
@click.option("--hexdump", "hexdump_options", multiple=True, metavar="HEXOPTION",
              help="A hex dump, as -x, of all data sources or of the frame's only (all|frames), with the ASCII "
                   "text, delimited by | or none (ascii|delimit|noascii); repeat to combine; help lists them.")
@click.option("-c", "count", callback=errors.packet_count, help="Stop after this many packets.")
@click.option("-Y", "--display-filter", "display_filter", metavar="FILTER", shell_complete=completion.display_filter,
              help='Display filter (Wireshark syntax): show only matching packets, e.g. -Y \'blank.type == "Login"\'.')
@click.option("-T", "output_format", default="text", callback=_T_CHECK, shell_complete=_T_COMPLETE,
              show_default=True, help="Output format (tshark's): text, tabs, json, jsonraw, ek, pdml, psml, fields.")
@click.option("-e", "fields_e", multiple=True, metavar="FIELD", shell_complete=completion.fields,
              help="With -T fields|json|ek: a field to print (repeat); also _ws.col.Info and the other columns.")
@click.option("-j", "json_filter", metavar="PROTOCOLS", shell_complete=completion.protocols, help='With -T json|jsonraw|ek: print only these protocols '
              '(space separated, e.g. -j "ip udp blank"); the others are {"filtered": ...}. A number: processes '
              '(--jobs).')
@click.option("-J", "json_filter_all", metavar="PROTOCOLS", shell_complete=completion.protocols, help="As -j, with every field under them.")
@click.option("-E", "fields_opts", multiple=True, metavar="OPTION=VALUE",
              help="With -T fields: header=y|n, separator=/t|/s|C, quote=d|s|n, occurrence=f|l|a, aggregator=,|/s|C.")
@click.option("-t", "time_format", default="r", show_default=True, callback=_TIME_CHECK,
              shell_complete=_TIME_COMPLETE,
              help="Time column: r relative to the first frame, d/dd delta to the previous captured/displayed "
                   "frame, e epoch, a/ad/adoy local time (with date, day of year), u/ud/udoy the same in UTC.")
@click.option("-u", "seconds_format", default="s", show_default=True, callback=_SECONDS_CHECK,
              shell_complete=_SECONDS_COMPLETE,
              help="Relative and delta times in the Time column: s seconds, hms hours, minutes and seconds.")
@click.option("-S", "separator", default="", metavar="SEPARATOR",
              help="With -V or -x: the line printed between packets (default: an empty line).")
@click.option("-O", "only", shell_complete=completion.protocols, help="Detail only these protocols (comma separated), like tshark -O.")
@click.option("-d", "decode_as", multiple=True, shell_complete=completion.decode_as, metavar="udp.port==PORT,PROTO", help="Decode a port as a protocol.")
@click.option("-o", "prefs", multiple=True, shell_complete=completion.preferences, metavar="NAME:VALUE", help="Set a preference (e.g. blank.revision:2015).")
@click.option("-q", "quiet", is_flag=True, help="Print no summary lines (useful to check a capture reads cleanly); "
              "with -z, print only the statistics. As tshark's: -V, -x, -O, -P or a -T form print all the same.")
@click.option("-z", "zstats", multiple=True, shell_complete=completion.statistics, metavar="STATISTIC",
              help="Statistics, printed at the end (repeat): io,phs | conv,eth|ip|ipv6|udp|tcp|sctp | "
                   "endpoints,eth|ip|ipv6|udp|tcp|sctp | io,stat,INTERVAL[,FILTER...] | expert | blank,types | "
                   "blank,seq | follow,udp|tcp,ascii|hex|raw|yaml,N (or ADDR:PORT,ADDR:PORT) | "
                   "follow,blank,MODE,N (each blank message of UDP stream N: its summary and the reassembled "
                   "and inflated chunk buffers). Game sessions: enet,peers | iceball,files | rutentoy,objects | "
                   "freeblox,assets | players | follow,enet|iceball|rutentoy|websocket|freeblox,MODE|decoded,N"
                   "[,KEY=VALUE].")
@click.option("-l", "line_buffered", is_flag=True, help="Flush the output after each packet (for pipes).")
@click.option("-2", "two_pass", is_flag=True, help="Two passes (as tshark -2): show what later frames say, e.g. "
              "[Acknowledged in frame N] on ENet reliable commands; enables -R.")
@click.option("-R", "--read-filter", "read_filter", metavar="FILTER", shell_complete=completion.display_filter, help="With -2: a read filter; packets it rejects are dropped "
              "(from the output, -w and -z).")
@click.option("-n", "no_resolve", is_flag=True, help="Disable name resolution, as tshark -n (protodump resolves only "
              "MAC vendor names, from Wireshark's manuf file; addresses and ports are always numeric).")
@click.option("-N", "resolve", metavar="FLAGS", callback=lambda _c, _p, v: check_resolve_flags(v),
              help="Name resolution flags (d m n N t v s g): accepted and checked; protodump resolves only MAC "
                   "vendor names (m), which stay on unless -n.")
@click.option("--format", "stats_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Statistics format (text: tshark's layout, rich tables on a terminal).")
@capture_opts.capture_options          # -i -f -a -w -P -D (live capture and writing pcapng)
@export_opts.export_options            # --export-objects PROTO,DIR
@sets_opts.set_options                 # several files, --concatenate, --dask, --parquet
@jobs_opts.jobs_option                 # --jobs N (-j N: a number)
def read(file, read_file, verbose, hexdump, count, output_format, only, decode_as, prefs, quiet, fields_e,
         fields_opts, zstats=(), stats_format="text", display_filter=None, line_buffered=False, two_pass=False,
         read_filter=None, no_resolve=False, resolve=None, json_filter=None, json_filter_all=None,
         time_format="r", seconds_format="s", separator="", hexdump_options=()):
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
    path = sets_opts.input_path(read_file, file)      # one path, or a CaptureSet for several files / directories
    hexdump = errors.hexdump_options(hexdump_options) or hexdump      # (sources, ASCII column): -x with options
    json_filter = jobs_opts.take_count(json_filter)   # -j N: processes (api/jobs.py), not protocols
    if json_filter and json_filter_all:
        # tshark: a warning; the last list given wins, and -J's "every field under them" stays on
        click.echo("protodump: -j or -J was already specified. Overwriting previous protocol filter.", err=True)
        if [a[:2] for a in sys.argv if a[:2] in ("-j", "-J")][-1:] == ["-j"]:
            json_filter_all = json_filter
        json_filter = None
    source = capture_opts.current()
    source.check(path)
    if not path and source.interface is None:
        raise click.UsageError("no capture file: give FILE or -r FILE (or -i IFACE to capture live)")
    quiet = capture_opts.quiet_asked(click.get_current_context().params) or source.quiet
    manuf.set_resolution(not no_resolve)
    text.set_seconds_format(seconds_format)
    taps = stats_taps(zstats)        # -z: bad arguments fail here, before any output
    details = bool(verbose or only or output_format in ("json", "jsonraw", "ek", "pdml"))     # (-q too)
    for tap in taps:
        tap.tree_shown = details      # (-z expert: what Wireshark adds only to a tree it prints)
        tap.capture_name = str(path or "")      # (-z hosts: "Host data gathered from FILE")
    for tap in taps:
        if hasattr(tap, "prime"):    # io,stat functions: the fields some filter of the run names
            tap.prime([display_filter, read_filter, *zstats])
        if hasattr(tap, "prime_from"):     # proto,colinfo: its field, if a filter names it
            tap.prime_from(display_filter, read_filter, taps)
            tap.columns_shown = columns_shown(output_format, quiet, verbose or only or hexdump,
                                              capture_opts.current().print_too, fields_e)
    exporter = export_opts.current()  # --export-objects: fed every packet, as a tap
    if read_filter is not None and not two_pass:
        fail("-R without -2 is deprecated. For single-pass filtering use -Y.", 1)
    shows = _compile_or_exit(display_filter)    # -Y: a bad filter fails here (exit 2)
    keeps = _compile_or_exit(read_filter)       # -2 -R
    settings = Settings(parse_prefs(prefs), parse_decode_as(decode_as))
    dispatcher = None
    while dispatcher is None:
        try:
            dispatcher = Dispatcher(PROTOCOLS, settings)
        except DispatchError as exc:
            if exc.preference is not None and exc.preference in settings.prefs and "is not one of" in str(exc):
                del settings.prefs[exc.preference]    # tshark ignores a bad Lua enum value silently
                continue
            bad_setting(exc, prefs)
    for tap in taps:
        if hasattr(tap, "tree"):      # the *,tree statistics' limit (-o protodump.stats_tree_nodes)
            tap.tree.limit = dispatcher.stats_tree_nodes
    # -2: a first pass (with -R and -c it picks the frames the second pass sees: no filter to apply again)
    dispatcher = two_pass_opts.dispatcher(path, PROTOCOLS, settings, dispatcher, two_pass, keeps, count)
    if getattr(dispatcher, "selected", None) is not None:
        keeps = dispatcher.selected.keeps
    out = sys.stdout
    writer = make_writer(out, output_format, fields_e, fields_opts, verbose=verbose, hexdump=hexdump, only=only,
                         json_filter=json_filter, json_filter_all=json_filter_all, time_format=time_format,
                         capture_file=path if isinstance(path, str) else None, summary=source.print_too,
                         separator=separator)
    if sets_opts.divert(path):         # --dask / --parquet: the job runs on shards
        return
    first_ns = None
    # nothing printed and no filter (-q, or only -w), statistics of the standard layers only and no object export
    # (--export-objects reads the game layers): no game dissection
    dispatcher.standard_only = bool(quiet and shows is None and exporter is None
                                    and all(tap.standard_only() for tap in taps))
    dispatcher.demand = run_demand(taps, display_filter, exporter, two_pass, quiet, output_format, fields_e)
    n = 0
    capture_path = path
    if source.interface is None and not sets_opts.is_set(path):
        capture_path = open_or_exit(path)   # a missing or non-capture file: one clear line, before any output
    if quiet and taps and _fused(path, source, quiet, shows, keeps, exporter, two_pass, settings, taps):
        from ..analysis.stats_fused import run_taps
        capture_path.close()          # (opened to fail early on a missing file or a non-capture)
        try:
            run_taps(path, dispatcher, taps, count or None)   # io,phs alone: analysis/stats_fused.py
            _write_stats(taps, out, stats_format)
            return
        except CaptureError:          # a damaged file: the plain pass below says how far it read
            capture_path = open_or_exit(path)
            dispatcher = Dispatcher(PROTOCOLS, settings)
            dispatcher.demand = run_demand(taps, display_filter, exporter, two_pass, quiet, output_format, fields_e)
    # a few game fields asked (-T fields -e ..., or -q -z <proto>,types): the fused machine, else the plain pass
    fused_run = _fused_items(path, source, quiet, taps, shows, keeps, exporter, two_pass, settings, output_format,
                             fields_e, dispatcher.demand, line_buffered)
    resume = None                     # the frame from which the plain pass prints (the machine printed the others)
    if fused_run is not None:
        capture_path.close()          # (opened to fail early on a missing file or a non-capture)
        try:
            machine = fused_run(path, dispatcher, writer, taps, count or None)
        except CaptureError:          # a damaged file: the plain pass below says how far it read
            machine = None
        if machine is not None and machine.resume is None:
            _write_stats(taps, out, stats_format)
            return
        resume = machine and machine.resume
        capture_path = open_or_exit(path)
        dispatcher = Dispatcher(PROTOCOLS, settings)
        dispatcher.demand = run_demand(taps, display_filter, exporter, two_pass, quiet, output_format, fields_e)
    # --- -j N: the conversations decoded by N processes, merged back in frame order (api/jobs.py) ---
    if jobs_opts.divert(path, capture_path, source=source, two_pass=two_pass, exporter=exporter,
                        fake_items=output_format in ("ek", "pdml"),
                        line_buffered=line_buffered, display_filter=display_filter, zstats=zstats,
                        make_writer=lambda o: make_writer(
                            o, output_format, fields_e, fields_opts, verbose=verbose, hexdump=hexdump, only=only,
                            json_filter=json_filter, json_filter_all=json_filter_all, time_format=time_format,
                            summary=source.print_too, separator=separator),
                        dispatcher=dispatcher, shows=shows, quiet=quiet, count=count, taps=taps,
                        stats_format=stats_format):
        return
    # --- end of -j N ---
    try:
        # a progress bar (stderr, terminals only, after a moment) when the packets are not what is printed
        slow = source.interface is None and (quiet or taps or source.write_path is not None)
        shown_path = None if sets_opts.is_set(path) or path == "-" else path      # a set or a pipe: no one size
        with track(source.packets(capture_path, dispatcher), shown_path if slow else None) as stream:
            for packet in stream:     # a file, or live frames with -i
                if keeps is not None and not keeps(packet):
                    continue
                n += 1
                if first_ns is None:          # the Time column counts from the capture's first frame
                    first_ns = writer.first_ns = packet.frame.ts_ns
                if resume is not None and packet.frame.number < resume:
                    if count and n >= count:  # (printed by the fused machine: decoded for their state only)
                        break
                    continue
                for tap in reversed(taps):    # (tshark runs the last registered first: -z proto,colinfo)
                    tap.add(packet)
                if exporter is not None:
                    exporter.add(packet)
                shown = shows is None or shows(packet)
                packet.decoded.displayed(shown)   # frame.time_delta_displayed, -t dd of the next frames
                if shown and not quiet:
                    writer.write(packet)
                if shown:
                    source.passed(packet, out)    # -w; live: flush now
                    if line_buffered:
                        out.flush()
                if count and n >= count:
                    break
    except StatsError as exc:       # a tap stops the run (-z proto,colinfo with no Info column printed)
        if hasattr(writer, "interrupted"):
            writer.interrupted()
        out.flush()
        click.echo(str(exc), err=True)
        sys.exit(1)
    except CaptureError as exc:
        writer.close()
        out.flush()
        click.echo(f"protodump: {path}: {exc} after {n} packets", err=True)
        _write_stats(taps, out, stats_format)
        sys.exit(1)
    finally:
        source.finish()                   # closes -w; live: "N packets captured"
    writer.close()
    _write_stats(taps, out, stats_format)
    export_opts.finish(exporter)
    sets_opts.finish(path)              # a set with an unreadable file: exit 2


def columns_shown(output_format, quiet, details, print_too, fields_e) -> bool:
    """Whether the run prints the Info column (tshark computes the columns only then): the summary lines (by
    default, or -P), -T psml, or a `_ws.col.` field."""
    summary = output_format in ("text", "tabs") and not quiet and not details
    return bool(summary or print_too or output_format == "psml"
                or any(name.startswith("_ws.col.") for name in fields_e or ()))


def run_demand(taps, display_filter, exporter, two_pass, quiet, output_format, fields_e):
    """What this run reads of the game layers (engine.demand): the taps', the filter's and -e's fields when the
    packets printed are none or -T fields; None (every tree in full) when anything reads whole trees."""
    if exporter is not None or two_pass:
        return demand.EVERYTHING
    printed = demand.EVERYTHING if not quiet and output_format != "fields" else \
        demand.of_fields(fields_e) if not quiet else frozenset()
    names = demand.combine([printed, demand.of_filter(display_filter), *(tap.demand() for tap in taps)])
    if names is demand.EVERYTHING:
        return None
    from ..output import fields_out
    return demand.Demand(names | {part for name in names for part in fields_out.ALIASES.get(name, ())})


def bad_setting(exc, prefs) -> None:
    """A bad -o or -d: tshark's line, exit 1."""
    bad = exc.preference
    if bad is not None:     # tshark: an unknown name and a bad value are both "unknown preference"
        errors.fail(f'-o flag "{next(p for p in prefs if p.partition(":")[0] == bad)}" specifies unknown '
                    "preference")
    if exc.protocol is not None:
        errors.fail(f'Unknown protocol -- "{exc.protocol}"')
    errors.fail(str(exc))


def make_writer(out, output_format, fields_e, fields_opts, *, verbose, hexdump, only, json_filter,
                json_filter_all, time_format="r", capture_file=None, summary=False, separator=""):
    """The packet writer for -T (and -e, -x, -j/-J, -V, -O, -P, -S); a bad combination is one line and exit 1
    (tshark's)."""
    names = json_filter or json_filter_all      # (tshark ignores them in the forms that are no tree)
    if fields_e and output_format not in ("fields", "json", "ek", "jsonraw", "pdml"):
        fail('Output fields were specified with "-e", but "-Tek, -Tfields, -Tjson or -Tpdml" was not specified.', 1)
    if fields_e or output_format in ("fields", "pdml", "ek"):
        from ..output import fields_out
    if fields_e or output_format == "fields":
        try:
            fields_out.check_fields(fields_e, fields_out.known_fields(PROTOCOLS))
            if output_format == "fields":
                writer = fields_out.make_writer(out, fields_e, fields_opts, PROTOCOLS)
                writer.time_format = time_format
                return writer
        except ValueError as exc:
            fail(str(exc), 1)
    if output_format == "psml":
        from ..output.psml import PsmlWriter
        writer = PsmlWriter(out, creator=CREATOR)
        writer.time_format = time_format
        return writer
    if output_format == "pdml":
        from ..output.pdml import PdmlWriter
        return PdmlWriter(out, creator=CREATOR, capture_file=capture_file, fields=fields_e or None,
                          values_of=fields_out.field_values,
                          names=frozenset(names.split()) if names is not None else None,
                          include_children=bool(json_filter_all))
    if output_format == "ek":
        from ..output import ek
        flt = ek.ProtocolFilter(names, include_children=bool(json_filter_all)) if names is not None else None
        return ek.EkWriter(out, flt, fields=fields_e or None, hexdump=hexdump,
                           values_of=lambda p, n, first: fields_out.field_values(p, n, first, time_format))
    if output_format in ("json", "jsonraw"):
        from ..output import json_forms
        if fields_e:
            return json_forms.JsonFormWriter(out, lambda p, first_ns: json_forms.fields_text(
                p, fields_e, lambda pk, name: fields_out.field_values(pk, name, first_ns, time_format)))
        if output_format == "json" and not hexdump and names is None:
            from ..output.json_out import JsonWriter
            return JsonWriter(out)
        opts = json_forms.Options(text=output_format == "json", raw=hexdump or output_format == "jsonraw",
                                  names=names, include_children=bool(json_filter_all))
        return json_forms.JsonFormWriter(out, lambda p, _first: json_forms.packet_text(p, opts))
    only_set = set(only.split(",")) if only else None
    return text.TextWriter(out, detail=verbose or only_set is not None, hexdump=hexdump, only=only_set,
                           time_format=time_format, summary=summary, separator=separator,
                           tabs=output_format == "tabs")


def fail(message: str, code: int = 2):
    """One line on stderr, tshark's exit code, no traceback."""
    click.echo(f"protodump: {message}", err=True)
    sys.exit(code)


def open_or_exit(path):
    """The open capture (a file, or "-": the standard input, read once); a missing or unreadable file or a
    non-capture is one line and exit 2, as tshark."""
    name = errors.source_name(path)
    try:
        return open_capture(path)
    except FileNotFoundError:
        fail(f"{name} doesn't exist.")
    except IsADirectoryError:
        fail(f"{name} is a directory (folder), not a file.")
    except PermissionError:
        fail(f"{name} could not be opened: permission denied.")
    except OSError as exc:
        fail(f"{name} could not be read: {exc.strerror or exc}.")
    except CaptureError as exc:
        fail(f"{name} isn't a capture file in a format protodump understands: {exc}.")


RESOLVE_FLAGS = "dmnNtvsg"


def check_resolve_flags(value):
    """-N FLAGS: tshark's letters; an unknown one is an error (exit 1, as tshark)."""
    for letter in value or "":
        if letter not in RESOLVE_FLAGS:
            fail(f"-N specifies unknown resolving option '{letter}'; valid options are: "
                 + " ".join(RESOLVE_FLAGS), 1)
    return value


def _compile_or_exit(text):
    """A -Y or -R filter compiled (cli.filter_cli: a bad one exits 2), or None without one."""
    if text is None:
        return None
    from . import filter_cli
    return filter_cli.compile_or_exit(text)


def _fused(path, source, quiet, shows, keeps, exporter, two_pass, settings, taps) -> bool:
    """Whether the run is -q -z io,phs alone on one plain capture file: analysis/stats_fused.py answers it
    without building layers."""
    from ..analysis.stats_fused import applies
    return bool(quiet and applies(taps) and shows is None and _plain_file(path, source, keeps, exporter, two_pass,
                                                                           settings))


def _fused_items(path, source, quiet, taps, shows, keeps, exporter, two_pass, settings, output_format, fields_e,
                 asked, line_buffered=False):
    """The fused machine's run (a function of path, dispatcher, writer, taps, limit: the machine, or None when
    it printed and counted nothing) for -T fields of a few fields (output/fields_fused.py) or -q -z <proto>,types
    alone (analysis/types_fused.py) on one plain capture file, else None. Not with -l: the machine's lines come
    after its first pass over the whole file, and -l asks for each packet's line as soon as it is decoded."""
    if shows is not None or not _plain_file(path, source, keeps, exporter, two_pass, settings):
        return None
    if output_format == "fields" and not quiet and not taps and not line_buffered:
        from ..output import fields_fused
        if fields_fused.applies(fields_e, asked, PROTOCOLS):
            return lambda p, d, w, _t, n: fields_fused.write_fields(p, d, w, PROTOCOLS, n)
    if quiet and taps:
        from ..analysis import types_fused
        if types_fused.applies(taps, asked, PROTOCOLS):
            return lambda p, d, _w, t, n: types_fused.count_types(p, d, t, PROTOCOLS, n)
    return None


def _plain_file(path, source, keeps, exporter, two_pass, settings) -> bool:
    """One capture file (or its first -c frames: no read filter counts them) read without -2, -w, object export,
    anything that changes the decode (-d, -o), in one process (no --jobs N above 1): what the fused machine
    (analysis/stats_fused.py, analysis/fused_items.py) models. A regular file: the machine reads it twice, and a
    named pipe (`-r fifo`) can be read once."""
    jobs = click.get_current_context().meta.get(jobs_opts._KEY)
    return bool(keeps is None and exporter is None and not two_pass and source.interface is None
                and source.write_path is None and path != "-" and not sets_opts.is_set(path) and not settings.prefs
                and not settings.decode_as and jobs in (None, 1) and os.path.isfile(path))


def _write_stats(taps, out, stats_format) -> None:
    if taps:
        from ..output import stats_out
        stats_out.write([t.result() for t in taps], out, stats_format)


def stats_taps(args) -> list:
    """The -z taps; an unknown statistic is tshark's list of them, a bad argument one line (exit code 1)."""
    if not args:
        return []
    from ..analysis import stats, stats_base
    from ..output import colinfo  # noqa: F401 - registers -z proto,colinfo (it writes the Info column)
    taps = []
    for arg in args:
        try:
            taps.append(stats.make_tap(arg))
        except stats.StatsError as exc:
            unknown = exc.unknown
            if unknown is not None:
                errors.statistic(unknown, stats_base.TAPS)
            if exc.report is not None:          # tshark's own words for its statistic
                text, to_stdout = exc.report
                click.echo(text, err=not to_stdout)
                if not exc.fatal:
                    continue                    # tshark goes on without it
                sys.exit(1)
            errors.fail(str(exc))
    return taps
