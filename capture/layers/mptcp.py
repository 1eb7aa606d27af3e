"""Multipath TCP (RFC 8684, RFC 6824): the item tshark 4.0 makes for TCP option kind 30 (packet-tcp.c's
dissect_tcpopt_mptcp: an "mptcp" protocol item inside the TCP options), one small builder per subtype in a table,
and the "[MPTCP analysis]" subtree of the TCP layer (capture/mptcp_analysis.py keeps the state).

Reads go through `_Option`, which raises IndexError past the option's length, as tshark's subset tvb raises its
exception there (the caller ends the option walk: [Malformed Packet]).
"""
from __future__ import annotations


from ...engine import tree
from ...engine.tree import ExpertInfo, Item
from .. import fields as f
from .common import bits


class _Option:
    """The option's bytes data[p:p + n], read as tshark's subset tvb of its length."""

    def __init__(self, data: bytes, p: int, n: int):
        self.data, self.p, self.end = data, p, p + n

    def uint(self, at: int, size: int) -> int:
        if at + size > self.end or at + size > len(self.data):
            raise IndexError("MPTCP option field past its length")
        return int.from_bytes(self.data[at:at + size], "big")

    def raw(self, at: int, size: int) -> bytes:
        self.uint(at, size)
        return self.data[at:at + size]


def _expert(item: Item, abbrev: str) -> None:
    group, severity, message = f.MPTCP_EXPERTS[abbrev]
    item.expert(ExpertInfo(abbrev, getattr(tree, group), getattr(tree, severity), message))


def _masked(field, value: int, at: int, width: int = 8, hexa: bool = False, length: int = 1) -> Item:
    """A field of a flags byte: its bit picture, name and value (shifted by the mask, as tshark shows it)."""
    mask = field.mask
    v = (value & mask) >> ((mask & -mask).bit_length() - 1)
    text = f"0x{v:0{(mask.bit_length() - (mask & -mask).bit_length() + 4) // 4}x}" if hexa else str(v)
    return Item(field, v, at, length, f"{bits(value, mask, width)} = {field.name}: {text}")


def _num(field, o: _Option, at: int, size: int, suffix: str = "") -> Item:
    v = o.uint(at, size)
    return Item(field, v, at, size, f"{field.name}: {v}{suffix}")


def _flags(mptcp: Item, o: _Option, at: int, kids) -> int:
    """The flags byte (hex) and its bit fields [(field, hex?)]."""
    v = o.uint(at, 1)
    flags = mptcp.add(Item(f.mptcp_flags, v, at, 1, f"Multipath TCP flags: 0x{v:02x}"))
    for field, hexa in kids:
        flags.add(_masked(field, v, at, hexa=hexa))
    return v


def _generated(field, v: int, at: int, label: str) -> Item:
    return Item(field, v, at, 0, f"[{label}]", generated=True)


# -- the subtypes -------------------------------------------------------------------------------------------------

def _capable(mptcp: Item, o: _Option, p: int, n: int, vals: dict) -> None:
    version = o.uint(p + 2, 1) & 0x0F
    mptcp.add(_masked(f.mptcp_version, o.data[p + 2], p + 2))
    kids = ([(f.mptcp_checksum_flag, False), (f.mptcp_extensibility_flag, False), (f.mptcp_nomoresubflows_flag, False),
             (f.mptcp_sha256_flag, False), (f.mptcp_reserved_flag, True)] if version == 1 else
            [(f.mptcp_checksum_flag, False), (f.mptcp_extensibility_flag, False), (f.mptcp_sha1_flag, False),
             (f.mptcp_reserved_flag_v0, True)])
    flags = _flags(mptcp, o, p + 3, kids)
    if not flags & 0x01:
        _expert(mptcp.children[-1], "mptcp.connection.missing_algorithm")
        _expert(mptcp.children[-1], "mptcp.connection.unsupported_algorithm")
    if n not in (12, 20, 22, 24):
        return
    mptcp.add(_num(f.mptcp_sendkey, o, p + 4, 8))
    if "token" in vals:
        mptcp.add(_generated(f.mptcp_expected_token, vals["token"], p + 12,
                             f"Subflow token generated from key: {vals['token']}"))
        mptcp.add(_generated(f.mptcp_expected_idsn, vals["idsn"], p + 12,
                             f"Subflow expected IDSN: {vals['idsn']} (64bits version)"))
    if n >= 20:
        recv = mptcp.add(_num(f.mptcp_recvkey, o, p + 12, 8))
        if vals.get("mismatch"):
            _expert(recv, "mptcp.connection.echoed_key_mismatch")
    if n >= 22:
        mptcp.add(_num(f.mptcp_datalvllen, o, p + 20, 2))
    if n == 24:
        v = o.uint(p + 22, 2)
        mptcp.add(Item(f.mptcp_checksum, v, p + 22, 2, f"Checksum: 0x{v:04x}"))


def _join(mptcp: Item, o: _Option, p: int, n: int, vals: dict) -> None:
    if n == 12:
        _flags(mptcp, o, p + 2, [(f.mptcp_backup_flag, False)])
        mptcp.add(_num(f.mptcp_addrid, o, p + 3, 1))
        mptcp.add(_num(f.mptcp_recvtok, o, p + 4, 4))
        mptcp.add(_num(f.mptcp_sendrand, o, p + 8, 4))
    elif n == 16:
        _flags(mptcp, o, p + 2, [(f.mptcp_backup_flag, False)])
        mptcp.add(_num(f.mptcp_addrid, o, p + 3, 1))
        mptcp.add(_num(f.mptcp_sendtrunchmac, o, p + 4, 8))
        mptcp.add(_num(f.mptcp_sendrand, o, p + 12, 4))
    elif n == 24:
        _reserved(mptcp, o, p + 2)
        mac = o.raw(p + 4, 20)
        mptcp.add(Item(f.mptcp_sendhmac, mac, p + 4, 20, f"Sender's HMAC: {mac.hex()}"))


def _reserved(mptcp: Item, o: _Option, at: int) -> None:
    v = o.uint(at, 2)
    mptcp.add(Item(f.mptcp_reserved, v & 0x0FFF, at, 2, f"{bits(v, 0x0FFF, 16)} = Reserved: 0x{v & 0x0FFF:03x}"))


def _dss(mptcp: Item, o: _Option, p: int, n: int, vals: dict) -> None:
    flags = _flags(mptcp, o, p + 3, [(f.mptcp_datafin_flag, False), (f.mptcp_dseqn8_flag, False),
                                     (f.mptcp_dseqnpresent_flag, False), (f.mptcp_dataack8_flag, False),
                                     (f.mptcp_dataackpresent_flag, False)])
    q = p + 4
    if flags & 0x01:
        size = 8 if flags & 0x02 else 4
        mptcp.add(_num(f.mptcp_rawdataack, o, q, size, " (64bits)" if size == 8 else ""))
        q += size
        if vals.get("ack") is not None:
            # (packet-tcp.c adds it at offset 0 of the option's own tvb: the option's start)
            mptcp.add(_generated(f.mptcp_ack, vals["ack"], p, f"Multipath TCP Data ACK: {vals['ack']} (Relative)"))
    if flags & 0x04:
        size = 8 if flags & 0x08 else 4
        mptcp.add(_num(f.mptcp_rawdataseqno, o, q, size, f"  ({size * 8}bits version)"))
        q += size
        mptcp.add(_num(f.mptcp_subflowseqno, o, q, 4))
        mptcp.add(_num(f.mptcp_datalvllen, o, q + 4, 2))
        q += 6
        if vals.get("dsn") is not None:
            mptcp.add(_generated(f.mptcp_dss_dsn, vals["dsn"], p, f"DSS Data Sequence Number: {vals['dsn']} (Relative)"))
        if n >= q - p + 4:          # tshark's test (two bytes more than the checksum needs)
            v = o.uint(q, 2)
            mptcp.add(Item(f.mptcp_checksum, v, q, 2, f"Checksum: 0x{v:04x}"))


def _add_addr(mptcp: Item, o: _Option, p: int, n: int, vals: dict) -> None:
    b = o.uint(p + 2, 1)
    ipver = b & 0x0F
    if ipver in (4, 6):                     # version 0: the IP version in the low nibble
        mptcp.add(_masked(f.mptcp_ipver, b, p + 2))
    else:
        mptcp.add(_masked(f.mptcp_echo, b, p + 2))
    mptcp.add(_num(f.mptcp_addrid, o, p + 3, 1))
    v6 = ipver == 6 or ipver not in (4, 6) and n in (20, 22, 28, 30)
    import ipaddress            # (an MPTCP address option is rare: not imported at start-up)
    if v6:
        addr = ipaddress.IPv6Address(o.raw(p + 4, 16))
        mptcp.add(Item(f.mptcp_ipv6, str(addr), p + 4, 16, f"Advertised IPv6 Address: {addr}"))
        q = p + 20
    else:
        addr = ipaddress.IPv4Address(o.raw(p + 4, 4))
        mptcp.add(Item(f.mptcp_ipv4, str(addr), p + 4, 4, f"Advertised IPv4 Address: {addr}"))
        q = p + 8
    if n % 4 == 2:
        mptcp.add(_num(f.mptcp_port, o, q, 2))
        q += 2
    if ipver not in (4, 6) and not b & 0x01 and q + 8 <= p + n:
        mptcp.add(_num(f.mptcp_addaddrtrunchmac, o, q, 8))


def _remove_addr(mptcp: Item, o: _Option, p: int, n: int, vals: dict) -> None:
    mptcp.add(_generated(f.mptcp_rm_addr_count, n - 3, p + 2, f"Number of removed addresses: {n - 3}")).length = 1
    for q in range(p + 3, p + n):
        mptcp.add(_num(f.mptcp_addrid, o, q, 1))


def _prio(mptcp: Item, o: _Option, p: int, n: int, vals: dict) -> None:
    _flags(mptcp, o, p + 2, [(f.mptcp_backup_flag, False)])
    if n == 4:
        mptcp.add(_num(f.mptcp_addrid, o, p + 3, 1))


def _fail(mptcp: Item, o: _Option, p: int, n: int, vals: dict) -> None:
    _reserved(mptcp, o, p + 2)
    mptcp.add(_num(f.mptcp_rawdataseqno, o, p + 4, 8))


def _fastclose(mptcp: Item, o: _Option, p: int, n: int, vals: dict) -> None:
    _reserved(mptcp, o, p + 2)
    mptcp.add(_num(f.mptcp_recvkey, o, p + 4, 8))


def _tcprst(mptcp: Item, o: _Option, p: int, n: int, vals: dict) -> None:
    v = o.uint(p + 2, 1)
    names = "".join(f", {name}" for _, mask, name in f.mptcp_rst_flags if v & mask)
    flags = mptcp.add(Item(f.mptcp_flags, v, p + 2, 1, f"Multipath TCP flags: 0x{v:02x}{names}"))
    for field, mask, name in f.mptcp_rst_flags:
        flags.add(Item(field, bool(v & mask), p + 2, 1, f"{bits(v, mask, 4)} = {name}: "
                                                        f"{'Set' if v & mask else 'Not set'}"))
    r = o.uint(p + 3, 1)
    mptcp.add(Item(f.mptcp_rst_reason, r, p + 3, 1, f"TCPRST Reason: {f.MPTCP_RST_REASONS.get(r, 'Unknown')} "
                                                     f"(0x{r:02x})"))


SUBTYPES = {0: _capable, 1: _join, 2: _dss, 3: _add_addr, 4: _remove_addr, 5: _prio, 6: _fail, 7: _fastclose,
            8: _tcprst}


def option_item(parent: Item, data: bytes, p: int, n: int, vals: dict | None) -> Item:
    """Add to `parent` the "mptcp" item of the MPTCP option data[p:p + n] (n >= 2: the walk checked it), with
    the derived values `vals` of capture.mptcp_analysis. Raises IndexError where tshark's dissector meets the
    end of the option, the item then holding what came before."""
    o = _Option(data, p, n)
    mptcp = parent.add(Item(f.mptcp, None, p, n, f.mptcp.name))
    mptcp.add(Item(f.tcp_option_kind, 30, p, 1, "Kind: Multipath TCP (30)"))
    mptcp.add(Item(f.tcp_option_len, n, p + 1, 1, f"Length: {n}"))
    sub = o.uint(p + 2, 1) >> 4
    mptcp.add(Item(f.mptcp_subtype, sub, p + 2, 1, f"{bits(data[p + 2], 0xF0, 8)} = Multipath TCP subtype: "
                                                    f"{f.MPTCP_SUBTYPES.get(sub, 'Unknown')} ({sub})"))
    mptcp.label += f": {f.MPTCP_SUBTYPES.get(sub, f'Unknown ({sub})')}"
    build = SUBTYPES.get(sub)
    if build is not None:
        build(mptcp, o, p, n, vals or {})
    return mptcp


def analysis_item(analysis: tuple, off: int) -> Item:
    """The TCP layer's "[MPTCP analysis]" subtree: master flow, MPTCP stream index, the subflows' TCP streams."""
    stream, master, master_stream, subflows = analysis
    top = Item(f.mptcp_analysis, None, off, 0, "[MPTCP analysis]", generated=True)
    label = f"Master is tcp stream {master_stream}" if master_stream is not None else str(master)
    top.add(Item(f.mptcp_master, master, off, 0, f"[Master flow: {label}]", generated=True))
    top.add(Item(f.mptcp_stream, stream, off, 0, f"[Stream index: {stream}]", generated=True))
    top.add(Item(f.mptcp_analysis_subflows, subflows, off, 0, f"[TCP subflow stream id(s): {subflows}]",
                 generated=True))
    return top


def throws(data: bytes, p: int, end: int) -> bool:
    """Whether one of the MPTCP options among TCP options data[p:end] (whole in the captured bytes) ends
    tshark's dissection in an exception: a field past the option's length ([Malformed Packet: MPTCP])."""
    from ..mptcp_analysis import mptcp_spans
    for q, n in mptcp_spans(data, p, end):
        if q + n > len(data):
            return False                # the snap length's cut comes first
        try:
            option_item(Item(None), data, q, n, None)
        except IndexError:
            return True
    return False
