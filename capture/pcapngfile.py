"""pcapng files: several sections and interfaces, each interface with its own link type, snaplen and
timestamp resolution (if_tsresol) and offset (if_tsoffset); EPB, SPB and the obsolete PB carry packets;
every other block type is skipped, once its length is checked against its type's minimum (MIN_BLOCK).

Interface description blocks are parsed with dpkt's block classes (they are rare, so dpkt's per-object cost
does not matter; dpkt is imported at the first one, not with the module: it is a tenth of the start-up). The block loop is our own because dpkt.pcapng.Reader honours only the first interface
(one link type and one timestamp resolution for the whole file), ignores SPBs, uses float timestamps and
cannot say where a damaged block starts.
"""
from __future__ import annotations

import struct

from .files import Interface, RawFrame, precision

SHB_TYPE = 0x0A0D0D0A          # the block types (dpkt.pcapng's PCAPNG_BT_*)
_IDB, _EPB, _SPB, _PB = 1, 6, 3, 2
PCAPNG_VERSION_MAJOR = 1
# A block longer than this is a corrupt length field (Wireshark's own limit is 16 MiB of packet data).
MAX_BLOCK = 64 * 1024 * 1024
_NS = 1_000_000_000
# The smallest total length of each known block type (header, fixed fields, trailing length), as wiretap's
# pcapng.c checks them: a shorter block of a known type makes the file damaged (tshark: "appears to be damaged
# or corrupt"), even when the type is one we skip.
MIN_BLOCK = {
    SHB_TYPE: (28, "section header block"), _IDB: (20, "interface description block"),
    _EPB: (32, "enhanced packet block"), _SPB: (16, "simple packet block"), _PB: (32, "packet block"),
    0x00000004: (16, "name resolution block"), 0x00000005: (24, "interface statistics block"),
    0x00000009: (35, "systemd journal export block"), 0x0000000A: (20, "decryption secrets block"),
    0x00000BAD: (16, "custom block"), 0x40000BAD: (16, "custom block"),
}


class _Iface:
    __slots__ = ("linktype", "snaplen", "mul", "div", "offset_ns", "prec", "info")

    def __init__(self, linktype: int, snaplen: int, tsresol: int, tsoffset: int, info: Interface | None = None):
        self.linktype = linktype
        self.snaplen = snaplen
        # ticks -> ns as an exact integer ratio mul/div (10^-6 s by default; MSB set: a power of 2)
        units = 1 << (tsresol & 0x7F) if tsresol & 0x80 else 10 ** tsresol
        self.mul, self.div = (_NS // units, 1) if _NS % units == 0 else (_NS, units)
        self.prec = precision(units)
        self.offset_ns = tsoffset * _NS
        self.info = info


def _text(data: bytes) -> str:
    """A pcapng string option (UTF-8; some writers add a NUL)."""
    return data.split(b"\0", 1)[0].decode("utf-8", "replace")


def _parse_idb(block: bytes, order: str, section: int) -> _Iface:
    import dpkt.pcapng as dng
    idb = (dng.InterfaceDescriptionBlockLE if order == "<" else dng.InterfaceDescriptionBlock)(block)
    tsresol, tsoffset, name, description = 6, 0, None, None
    for opt in idb.opts:
        if opt.code == dng.PCAPNG_OPT_IF_TSRESOL and len(opt.data) >= 1:
            tsresol = opt.data[0]
        elif opt.code == dng.PCAPNG_OPT_IF_TSOFFSET and len(opt.data) >= 8:
            (tsoffset,) = struct.unpack(order + "q", opt.data[:8])
        elif opt.code == dng.PCAPNG_OPT_IF_NAME and name is None:
            name = _text(opt.data)
        elif opt.code == dng.PCAPNG_OPT_IF_DESCRIPTION and description is None:
            description = _text(opt.data)
    return _Iface(idb.linktype, idb.snaplen, tsresol, tsoffset, Interface(section, name, description, tsresol))


def _epb_options(frame: RawFrame, body: bytes, p: int, end: int, order: str) -> None:
    """An enhanced packet block's options: opt_comment (1) and epb_flags (2); a damaged list ends quietly."""
    comments = []
    while p + 4 <= end:
        code, n = struct.unpack_from(order + "HH", body, p)
        if code == 0 or p + 4 + n > end:
            break
        value = body[p + 4:p + 4 + n]
        if code == 1:
            comments.append(_text(value))
        elif code == 2 and n == 4:
            frame.flags = struct.unpack(order + "I", value)[0]
        p += 4 + n + (-n % 4)
    frame.comments = tuple(comments)


def read(s, head: bytes, offsets=None, jumps=None):
    """Generator: yields None once the first section header is good, then RawFrames; raises CaptureError.
    offsets: an array to which each packet block's offset is appended, and -1 - offset for every block a reader
    needs to read packet blocks after the first section header (later section headers, interface descriptions),
    in file order (the planning pass of -j, api/planning.py).
    jumps: an iterator of block offsets (packet blocks, and those others): after the first section header, only
    those blocks are read, seeking to each (a -j worker)."""
    read = s.read
    offset = 0
    number = 0
    order = ">"
    hdr_unpack = struct.Struct(">II").unpack_from
    u32 = struct.Struct(">I").unpack_from
    epb_unpack = struct.Struct(">IIIII").unpack_from
    ifaces: list[_Iface] = []     # this section's interfaces
    base = 0                      # interfaces of earlier sections: RawFrame.interface is file-wide
    section = 0                   # 1-based number of the current section
    first = True
    while True:
        if jumps is not None and not first:
            offset = s.jump(jumps, offset)
            if offset is None:
                return
        hdr = head if first else read(8)
        if first:
            hdr += read(4)
        if len(hdr) < 8:
            if hdr or (s.gunzip is not None and (s.gunzip.truncated or s.gunzip.error)):
                raise s.error(f"truncated pcapng block header ({len(hdr)} of 8 bytes)", offset)
            return
        btype = hdr_unpack(hdr)[0]
        if btype == SHB_TYPE:
            bom = read(4)
            if len(bom) < 4:
                raise s.error("truncated pcapng section header", offset)
            if bom == b"\x1a\x2b\x3c\x4d":
                order = ">"
            elif bom == b"\x4d\x3c\x2b\x1a":
                order = "<"
            else:
                raise s.error(f"corrupt pcapng section header (byte-order magic 0x{bom.hex()})", offset)
            hdr_unpack = struct.Struct(order + "II").unpack_from
            u32 = struct.Struct(order + "I").unpack_from
            epb_unpack = struct.Struct(order + "IIIII").unpack_from
            hdr += bom
        btype, blen = hdr_unpack(hdr)
        if blen < 12 or blen % 4 or blen > MAX_BLOCK:
            raise s.error(f"corrupt pcapng block (type 0x{btype:08x}, length {blen})", offset)
        body = hdr[8:] + read(blen - len(hdr))
        if len(body) < blen - 8:
            raise s.error(f"truncated pcapng block (type 0x{btype:08x}: {8 + len(body)} of {blen} bytes)",
                          offset)
        if u32(body, len(body) - 4)[0] != blen:
            raise s.error(f"corrupt pcapng block (type 0x{btype:08x}: trailing length differs)", offset)
        least, name = MIN_BLOCK.get(btype, (12, ""))
        if blen < least:
            raise s.error(f"corrupt pcapng {name} (total length {blen}, less than the minimum {least})", offset)

        if btype == _EPB:
            iid, ts_hi, ts_lo, caplen, length = epb_unpack(body)
            if caplen > blen - 32:
                raise s.error(f"corrupt pcapng enhanced packet block: captured length {caplen}"
                              f" exceeds the block", offset)
            if iid >= len(ifaces):
                raise s.error(f"pcapng packet for undefined interface {iid}", offset)
            i = ifaces[iid]
            number += 1
            if offsets is not None:
                offsets.append(offset)
            frame = RawFrame(number, ((ts_hi << 32 | ts_lo) * i.mul) // i.div + i.offset_ns, caplen, length,
                             i.linktype, base + iid, body[20:20 + caplen], i.prec, i.info)
            opts = 20 + caplen + (-caplen % 4)
            if opts < len(body) - 4:
                _epb_options(frame, body, opts, len(body) - 4, order)
            yield frame
        elif btype == _SPB:
            # No timestamp and no captured length: the data is min(original length, snaplen, block room).
            if not ifaces:
                raise s.error("pcapng simple packet block before any interface", offset)
            i = ifaces[0]
            length = u32(body)[0]
            caplen = min(length, blen - 16)
            if i.snaplen:
                caplen = min(caplen, i.snaplen)
            number += 1
            if offsets is not None:
                offsets.append(offset)
            yield RawFrame(number, 0, caplen, length, i.linktype, base, body[4:4 + caplen], i.prec, i.info)
        elif btype == _PB:
            iid = struct.unpack_from(order + "H", body)[0]
            _, ts_hi, ts_lo, caplen, length = epb_unpack(body)
            if caplen > blen - 32 or iid >= len(ifaces):
                raise s.error("corrupt pcapng packet block", offset)
            i = ifaces[iid]
            number += 1
            if offsets is not None:
                offsets.append(offset)
            yield RawFrame(number, ((ts_hi << 32 | ts_lo) * i.mul) // i.div + i.offset_ns, caplen, length,
                           i.linktype, base + iid, body[20:20 + caplen], i.prec, i.info)
        elif btype == _IDB:
            if offsets is not None:
                offsets.append(-1 - offset)
            import dpkt
            try:
                ifaces.append(_parse_idb(hdr[:8] + body, order, section))
            except (dpkt.Error, struct.error, IndexError) as e:
                raise s.error(f"corrupt pcapng interface description block ({e!r})", offset) from e
        elif btype == SHB_TYPE:
            major = struct.unpack_from(order + "H", body, 4)[0]
            if major != PCAPNG_VERSION_MAJOR:
                raise s.error(f"unsupported pcapng version {major}", offset)
            base += len(ifaces)
            ifaces = []
            section += 1
            if offsets is not None and not first:
                offsets.append(-1 - offset)
            if first:
                first = False
                yield None
        offset += blen
