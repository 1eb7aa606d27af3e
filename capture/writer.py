"""-w FILE: RawFrames out to a pcapng file (dpkt's pcapng Writer), readable by tshark and by protodump.

One interface description block per (interface, link type) met, written just before its first frame (pcapng
allows that anywhere in a section), so a filtered copy of a multi-interface pcapng keeps each link type.
Timestamps keep nanoseconds (if_tsresol = 9) and frames keep their on-the-wire length.
"""
from __future__ import annotations

import sys
from typing import Self

from dpkt import pcapng

_LE = sys.byteorder == "little"             # dpkt's Writer writes the host's byte order and checks blocks for it
_IDB = pcapng.InterfaceDescriptionBlockLE if _LE else pcapng.InterfaceDescriptionBlock
_EPB = pcapng.EnhancedPacketBlockLE if _LE else pcapng.EnhancedPacketBlock
_OPT = pcapng.PcapngOptionLE if _LE else pcapng.PcapngOption
SNAPLEN = 262144


def _idb(linktype: int, name: str | None):
    opts = [_OPT(code=pcapng.PCAPNG_OPT_IF_TSRESOL, data=b"\x09")]   # 10^-9 s: nanosecond timestamps
    if name:
        opts.append(_OPT(code=pcapng.PCAPNG_OPT_IF_NAME, data=name.encode()))
    opts.append(_OPT(code=pcapng.PCAPNG_OPT_ENDOFOPT))
    return _IDB(linktype=linktype, snaplen=SNAPLEN, opts=opts)


class PcapngWriter:
    """Write frames with `write(frame)`; `close()` (or the with-block) finishes the file.

    `linktype`/`interface_name` describe the first interface up front (live capture knows them before any
    frame, and an empty capture still gets its interface block)."""

    def __init__(self, path, *, linktype: int | None = None, interface_name: str | None = None):
        self.path = str(path)
        self._file = open(path, "wb")      # noqa: SIM115 (closed by close(), which also finishes the file)
        self._writer = None
        self._ids: dict[tuple[int, int], int] = {}
        self._name = interface_name
        self.written = 0
        if linktype is not None:
            self._interface(0, linktype)

    def _interface(self, interface: int, linktype: int) -> int:
        key = (interface, linktype)
        if key not in self._ids:
            idb = _idb(linktype, self._name if not self._ids else None)
            if self._writer is None:
                self._writer = pcapng.Writer(self._file, idb=idb)
            else:
                self._file.write(bytes(idb))
            self._ids[key] = len(self._ids)
        return self._ids[key]

    def write(self, frame) -> None:
        iface = self._interface(frame.interface, frame.linktype)
        ts = frame.ts_ns
        # Written as bytes, not with Writer.writepkt, which would replace a zero timestamp with the time now.
        self._file.write(bytes(_EPB(iface_id=iface, ts_high=ts >> 32, ts_low=ts & 0xFFFFFFFF,
                                    caplen=len(frame.data), pkt_len=frame.length, pkt_data=frame.data)))
        self.written += 1

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        if self._file.closed:
            return
        if self._writer is None:            # nothing written: still a valid pcapng with one (Ethernet) interface
            self._interface(0, 1)
        self._file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
