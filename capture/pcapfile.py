"""Classic libpcap files: micro- and nanosecond magic, either byte order, and the modified (Kuznetsov) form.

The 24-byte file header is one struct unpack (dpkt's header classes would make reading a file import all of
dpkt, a tenth of the start-up). The record loop is our own, on purpose:
dpkt.pcap.Reader reads `caplen` bytes and yields whatever came back, so a file cut mid-record silently
yields a short last packet (and a cut record header raises dpkt.NeedData with no position); it also gives
float timestamps (nanoseconds lost) and builds a dpkt header object per record (slow). A plain
struct.Struct unpack per record is fast and lets us name the offset of the bad record.
"""
from __future__ import annotations

import struct

from .files import RawFrame

# libpcap's magic numbers as read big-endian (dpkt.pcap's names): micro- and nanosecond, modified; swapped
TCPDUMP_MAGIC, TCPDUMP_MAGIC_NANO, MODPCAP_MAGIC = 0xA1B2C3D4, 0xA1B23C4D, 0xA1B2CD34
PMUDPCT_MAGIC, PMUDPCT_MAGIC_NANO, PACPDOM_MAGIC = 0xD4C3B2A1, 0x4D3CB2A1, 0x34CDB2A1
PCAP_VERSION_MAJOR = 2
_MICRO = {TCPDUMP_MAGIC: (">", 1000), PMUDPCT_MAGIC: ("<", 1000),
          TCPDUMP_MAGIC_NANO: (">", 1), PMUDPCT_MAGIC_NANO: ("<", 1),
          MODPCAP_MAGIC: (">", 1000), PACPDOM_MAGIC: ("<", 1000)}
_MODIFIED = {MODPCAP_MAGIC, PACPDOM_MAGIC}  # 24-byte record headers (ifindex, protocol, ...)

# Wireshark's largest packet for most link types (WTAP_MAX_PACKET_SIZE_STANDARD); a record claiming more than
# this (and more than the snaplen) is a corrupt length, not a big packet.
MAX_PACKET = 262144


def is_magic(magic: int) -> bool:
    return magic in _MICRO


def read(s, head: bytes, offsets=None, jumps=None):
    """Generator: yields None once the file header is good, then RawFrames; raises CaptureError.
    offsets: an array to which each frame's record offset is appended (the planning pass of -j, api/planning.py).
    jumps: an iterator of record offsets: only those records are read, seeking to each (a -j worker)."""
    (magic,) = struct.unpack(">I", head)
    order, ns_per_tick = _MICRO[magic]
    rest = s.read(20)
    if len(rest) < 20:
        raise s.error(f"truncated pcap file header ({4 + len(rest)} of 24 bytes)", 0)
    v_major, v_minor, _zone, _sigfigs, snaplen, linktype = struct.unpack(order + "HHIIII", rest)
    if v_major != PCAP_VERSION_MAJOR:
        raise s.error(f"unsupported pcap version {v_major}.{v_minor}", 0)
    linktype &= 0xFFFF                    # the upper bits carry FCS information, not the link type
    max_caplen = max(MAX_PACKET, snaplen)
    prec = 9 if ns_per_tick == 1 else 6
    yield None

    hsize = 24 if magic in _MODIFIED else 16
    unpack = struct.Struct(order + "IIII").unpack_from
    read = s.read
    offset = 24
    number = 0
    while True:
        if jumps is not None:
            offset = s.jump(jumps, offset)
            if offset is None:
                return
        hdr = read(hsize)
        if len(hdr) < hsize:
            if hdr or (s.gunzip is not None and (s.gunzip.truncated or s.gunzip.error)):
                raise s.error(f"truncated pcap record header for frame {number + 1}"
                              f" ({len(hdr)} of {hsize} bytes)", offset)
            return
        sec, frac, caplen, length = unpack(hdr)
        if caplen > max_caplen:
            raise s.error(f"corrupt pcap record for frame {number + 1}: captured length {caplen}"
                          f" exceeds the maximum {max_caplen}", offset)
        data = read(caplen)
        if len(data) < caplen:
            raise s.error(f"truncated pcap record for frame {number + 1}: {len(data)} of {caplen}"
                          f" data bytes", offset)
        number += 1
        if offsets is not None:
            offsets.append(offset)
        yield RawFrame(number, sec * 1_000_000_000 + frac * ns_per_tick, caplen, length, linktype, 0, data, prec)
        offset += hsize + caplen
