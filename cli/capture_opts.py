"""The read command's capture options: -i IFACE, -f BPF, -a duration:S|packets:N, -w FILE, -F FORMAT, -P, -D.

Kept out of read_cmd.py: the options store their values in the click context (no extra parameters for `read`),
and `current()` gives read() one object that chooses the frame source (a file or a live interface), writes
-w, and reports the end of a live capture as tshark does ("N packets captured" on stderr).
"""
from __future__ import annotations

import sys

import click

from ..capture.writer import FORMATS

_KEY = "protodump.capture_opts"


class CaptureStartError(click.ClickException):
    """A capture that cannot start (no privilege, no such interface, bad filter, unwritable -w): one line, exit 2."""

    exit_code = 2


def _store(name):
    def callback(ctx, _param, value):
        ctx.meta.setdefault(_KEY, {})[name] = value
    return callback


def _list_interfaces(ctx, _param, value):
    if not value or ctx.resilient_parsing:
        return
    from ..capture.live import interfaces
    for number, (name, description) in enumerate(interfaces(), 1):
        click.echo(f"{number}. {name}" + (f" ({description})" if description else ""))
    ctx.exit(0)


def _parse_autostop(values) -> dict:
    """-a duration:SECONDS / -a packets:N (tshark's capture autostop conditions)."""
    stops = {}
    for value in values:
        kind, _, number = value.partition(":")
        try:
            if kind == "duration":
                stops["duration"] = float(number)
                ok = stops["duration"] > 0
            elif kind == "packets":
                stops["packets"] = int(number, 10)
                ok = stops["packets"] > 0
            else:
                ok = False
        except ValueError:
            ok = False
        if not ok:
            raise click.BadParameter(f"{value!r}: expected duration:SECONDS or packets:N (positive)", param_hint="-a")
    return stops


def capture_options(command):
    """Decorator: adds the capture options to a click command without adding parameters to its function."""
    options = [
        click.option("-i", "--interface", "interface", metavar="IFACE", expose_value=False, callback=_store("interface"),
                     help="Capture live on this interface (name or -D number) instead of reading a file."),
        click.option("-f", "capture_filter", metavar="BPF", expose_value=False, callback=_store("bpf"),
                     help='Capture filter in BPF syntax, e.g. "udp port 12354" (with -i).'),
        click.option("-a", "--autostop", "autostop", multiple=True, metavar="duration:S|packets:N", expose_value=False,
                     callback=_store("autostop"), help="Stop a live capture after S seconds or N packets."),
        click.option("-w", "write_file", metavar="FILE", type=click.Path(dir_okay=False, allow_dash=True),
                     expose_value=False, callback=_store("write"),
                     help="Write the packets (those passing -Y) to FILE; - is the standard output."),
        click.option("-F", "write_format", type=click.Choice(FORMATS), expose_value=False, callback=_store("format"),
                     help="Format of -w: pcapng or pcap (microseconds) or nsecpcap. Default: pcap for a "
                          "NAME.pcap (.cap, .dmp), else pcapng."),
        click.option("-P", "--print", "print_too", is_flag=True, expose_value=False, callback=_store("print"),
                     help="With -w: print the packets as well."),
        click.option("-D", "--list-interfaces", "list_ifaces", is_flag=True, expose_value=False, is_eager=True,
                     callback=_list_interfaces, help="List the interfaces live capture can use, and exit."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


class CaptureSource:
    """What read() reads (file or live interface) and where -w writes."""

    def __init__(self, values: dict):
        self.interface = values.get("interface")
        self.bpf = values.get("bpf")
        self.stops = _parse_autostop(values.get("autostop") or ())
        self.write_path = values.get("write")
        self.write_format = values.get("format")
        self.print_too = bool(values.get("print"))
        self.live = None            # capture.live.LiveCapture once started
        self.dump = None            # capture.writer.PcapngWriter with -w

    @property
    def quiet(self) -> bool:
        """As tshark: writing a file prints no packets, unless -P."""
        return self.write_path is not None and not self.print_too

    def check(self, path) -> None:
        """Option combinations, before anything starts."""
        if self.interface is not None and path:
            raise click.UsageError("give either a capture file or -i IFACE, not both")
        if self.write_format and self.write_path is None:
            raise click.UsageError("-F needs -w FILE")
        if self.interface is None and (self.bpf or self.stops):
            raise click.UsageError("-f and -a are for live capture: they need -i IFACE (use -Y to filter a file)")

    def packets(self, path, dispatcher):
        """Dissected packets from the file, or from the interface (capture started here: errors exit 2)."""
        from ..session import packets, packets_from_frames
        if self.interface is None:
            self._open_dump(None, None)
            return packets(path, dispatcher=dispatcher)
        from ..capture.live import LiveError, open_live
        try:
            self.live = open_live(self.interface, self.bpf, duration=self.stops.get("duration"),
                                  limit=self.stops.get("packets"))
        except LiveError as exc:
            raise CaptureStartError(str(exc)) from None
        self._open_dump(self.live.linktype, self.live.interface)
        click.echo(f"Capturing on '{self.live.interface}'", err=True)
        sys.stderr.flush()
        return packets_from_frames(self.live, dispatcher=dispatcher)

    def _open_dump(self, linktype, name) -> None:
        if self.write_path is None:
            return
        from ..capture.writer import open_writer
        try:
            self.dump = open_writer(self.write_path, self.write_format, linktype=linktype, interface_name=name)
        except OSError as exc:
            if self.live is not None:
                self.live.close()
                self.live = None          # never started, as far as the user is concerned: no count
            raise CaptureStartError(f"cannot write {self.write_path}: {exc.strerror or exc}") from None

    def passed(self, packet, out) -> None:
        """A packet that passed the display filter: write it (-w); on a live capture, show it now."""
        if self.dump is not None:
            from ..capture.writer import WriteError
            try:
                self.dump.write(packet.frame)
            except WriteError as exc:
                raise CaptureStartError(str(exc)) from None
            if self.live is not None:
                self.dump.flush()
        if self.live is not None:
            out.flush()

    def finish(self) -> None:
        """Close the -w file; a live capture says how many packets it captured (stderr, as tshark)."""
        if self.dump is not None:
            self.dump.close()
        if self.live is not None:
            self.live.close()
            n = self.live.captured
            click.echo(f"{n} packet{'' if n == 1 else 's'} captured", err=True)


def current() -> CaptureSource:
    """The capture options of the running command."""
    return CaptureSource(click.get_current_context().meta.get(_KEY, {}))


def quiet_asked(params: dict) -> bool:
    """-q as tshark 4.0 takes it: it drops the default summary lines only. With -V, -x, -O, -P or any -T form
    the packets print all the same (measured: `tshark -q -V`, `-q -T fields -e F`, `-q -T text` print as
    without -q); `params`: the read command's."""
    if not params.get("quiet"):
        return False
    ctx = click.get_current_context()
    form_given = ctx.get_parameter_source("output_format") == click.core.ParameterSource.COMMANDLINE
    return not (form_given or params.get("verbose") or params.get("hexdump") or params.get("hexdump_options")
                or params.get("only") or current().print_too)
