"""-w FILE: RawFrames out to a pcapng file (dpkt's pcapng Writer) or a classic pcap file (dpkt's header classes),
readable by tshark and by protodump. "-" writes to the standard output (a pipe: nothing seeks).

One interface description block per (interface, link type) met, written just before its first frame (pcapng
allows that anywhere in a section), so a filtered copy of a multi-interface pcapng keeps each link type.
Timestamps keep nanoseconds (if_tsresol = 9) and frames keep their on-the-wire length, their comments (opt_comment)
and flags (epb_flags).
"""
from __future__ import annotations

import sys
from typing import Self

_LE = sys.byteorder == "little"             # dpkt's Writer writes the host's byte order and checks blocks for it
SNAPLEN = 262144


def _dpkt():
    """dpkt's pcap and pcapng modules, imported on first use (dpkt is a tenth of the start-up of a run that
    writes nothing)."""
    import dpkt.pcap
    import dpkt.pcapng
    return dpkt.pcap, dpkt.pcapng


STDOUT = "-"
FORMATS = ("pcapng", "pcap", "nsecpcap")      # tshark -F names
_PCAP_SUFFIXES = (".pcap", ".cap", ".dmp")


def _open_output(path):
    """The binary file `path` names; "-" is the standard output (closing it later closes only our handle)."""
    if str(path) == STDOUT:
        import os
        return os.fdopen(sys.stdout.fileno(), "wb", closefd=False)
    return open(path, "wb")      # noqa: SIM115 (closed by the writer's close(), which also finishes the file)


def format_for(path, fmt: str | None) -> str:
    """-F FORMAT, or else from -w's extension: NAME.pcap (.cap, .dmp) is pcap, anything else (and "-") pcapng."""
    if fmt:
        return fmt
    return "pcap" if str(path).lower().endswith(_PCAP_SUFFIXES) else "pcapng"


def open_writer(path, fmt: str | None = None, *, linktype: int | None = None, interface_name: str | None = None):
    """A PcapngWriter or PcapWriter for -w PATH -F FORMAT (see format_for)."""
    fmt = format_for(path, fmt)
    if fmt == "pcapng":
        return PcapngWriter(path, linktype=linktype, interface_name=interface_name)
    return PcapWriter(path, linktype=linktype, nano=fmt == "nsecpcap")


class _Output:
    """What both writers share: the open file, flush, close (finishing the file first), the with-block."""

    _file = None

    def _finish(self) -> None:
        """Make a file with no frames still valid (its header / interface block)."""

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        if self._file.closed:
            return
        self._finish()
        self._file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class WriteError(Exception):
    """Frames that the chosen format cannot hold (pcap has one link type per file)."""


class PcapWriter(_Output):
    """Classic pcap, as tshark -F pcap writes it: host byte order, version 2.4, snaplen 262144, one link type
    (taken from `linktype` or the first frame), microsecond timestamps (nsecpcap: nanoseconds). The header classes
    are dpkt's; dpkt's Writer itself takes float timestamps, which lose the nanoseconds we keep."""

    def __init__(self, path, *, linktype: int | None = None, nano: bool = False):
        self.path = str(path)
        self._file = _open_output(path)
        self._nano = nano
        self._linktype = None
        dpcap = _dpkt()[0]
        self._record = dpcap.LEPktHdr if _LE else dpcap.PktHdr
        self.written = 0
        if linktype is not None:
            self._header(linktype)

    def _header(self, linktype: int) -> None:
        self._linktype = linktype
        dpcap = _dpkt()[0]
        magic = dpcap.TCPDUMP_MAGIC_NANO if self._nano else dpcap.TCPDUMP_MAGIC
        header = (dpcap.LEFileHdr if _LE else dpcap.FileHdr)(magic=magic, snaplen=SNAPLEN, linktype=linktype)
        self._file.write(bytes(header))

    def write(self, frame) -> None:
        if self._linktype is None:
            self._header(frame.linktype)
        elif frame.linktype != self._linktype:
            raise WriteError(f"frame {frame.number} has link type {frame.linktype}, but a pcap file holds only one "
                             f"({self._linktype}): write pcapng (-F pcapng)")
        sec, ns = divmod(frame.ts_ns, 1_000_000_000)
        frac = ns if self._nano else ns // 1000
        self._file.write(bytes(self._record(tv_sec=sec, tv_usec=frac, caplen=len(frame.data), len=frame.length)))
        self._file.write(frame.data)
        self.written += 1

    def _finish(self) -> None:
        if self._linktype is None:
            self._header(1)


def _idb(linktype: int, name: str | None, prec: int = 9, description: str | None = None):
    """An interface block: time stamps in units of 10^-prec s (the frames' precision, as tshark keeps it)."""
    pcapng = _dpkt()[1]
    option = pcapng.PcapngOptionLE if _LE else pcapng.PcapngOption
    opts = [option(code=pcapng.PCAPNG_OPT_IF_TSRESOL, data=bytes([prec]))]
    if name:
        opts.append(option(code=pcapng.PCAPNG_OPT_IF_NAME, data=name.encode()))
    if description:
        opts.append(option(code=pcapng.PCAPNG_OPT_IF_DESCRIPTION, data=description.encode()))
    opts.append(option(code=pcapng.PCAPNG_OPT_ENDOFOPT))
    block = pcapng.InterfaceDescriptionBlockLE if _LE else pcapng.InterfaceDescriptionBlock
    return block(linktype=linktype, snaplen=SNAPLEN, opts=opts)


class PcapngWriter(_Output):
    """Write frames with `write(frame)`; `close()` (or the with-block) finishes the file.

    `linktype`/`interface_name` describe the first interface up front (live capture knows them before any
    frame, and an empty capture still gets its interface block)."""

    def __init__(self, path, *, linktype: int | None = None, interface_name: str | None = None):
        self.path = str(path)
        self._file = _open_output(path)
        self._writer = None
        self._ids: dict[tuple[int, int], int] = {}
        self._units: list[int] = []           # per written interface: nanoseconds per time stamp tick
        self._name = interface_name
        self.written = 0
        pcapng = self._ng = _dpkt()[1]
        self._epb = pcapng.EnhancedPacketBlockLE if _LE else pcapng.EnhancedPacketBlock
        self._option = pcapng.PcapngOptionLE if _LE else pcapng.PcapngOption
        if linktype is not None:
            self._interface(0, linktype)

    def _interface(self, interface: int, linktype: int, frame=None) -> int:
        key = (interface, linktype)
        if key not in self._ids:
            info = frame.iface if frame is not None else None
            prec = info.tsresol if info is not None and info.tsresol <= 9 else \
                frame.prec if frame is not None and 0 <= frame.prec <= 9 else 9
            name = self._name if not self._ids and self._name else info.name if info is not None else None
            idb = _idb(linktype, name, prec, info.description if info is not None else None)
            self._units.append(10 ** (9 - prec))
            if self._writer is None:
                self._writer = _dpkt()[1].Writer(self._file, idb=idb)
            else:
                self._file.write(bytes(idb))
            self._ids[key] = len(self._ids)
        return self._ids[key]

    def write(self, frame) -> None:
        iface = self._interface(frame.interface, frame.linktype, frame)
        ts = frame.ts_ns // self._units[iface]
        # Written as bytes, not with Writer.writepkt, which would replace a zero timestamp with the time now.
        option = self._option
        opts = [option(code=self._ng.PCAPNG_OPT_COMMENT, data=c.encode()) for c in frame.comments]
        if frame.flags is not None:          # epb_flags (as tshark -w keeps them)
            opts.append(option(code=2, data=frame.flags.to_bytes(4, sys.byteorder)))
        if opts:
            opts.append(option(code=self._ng.PCAPNG_OPT_ENDOFOPT))
        self._file.write(bytes(self._epb(iface_id=iface, ts_high=ts >> 32, ts_low=ts & 0xFFFFFFFF, opts=opts,
                                    caplen=len(frame.data), pkt_len=frame.length, pkt_data=frame.data)))
        self.written += 1

    def _finish(self) -> None:
        if self._writer is None:            # nothing written: still a valid pcapng with one (Ethernet) interface
            self._interface(0, 1)
