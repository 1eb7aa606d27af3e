"""IPv4 options (tshark's packet-ip.c dissect_ip_options): End of Options List, No-Operation, Record Route,
Time Stamp and Router Alert decoded; another option is shown as unknown. The walk stops at an option whose
length is unusable, with tshark's expert."""
from __future__ import annotations

import struct

from ...engine.tree import PROTOCOL, WARN, ExpertInfo, HiddenItem, Item, TextItem
from .. import fields as f
from ..network import v4_text
from .common import bits

CLASSES = {0: "Control", 1: "Reserved for future use", 2: "Debugging and measurement", 3: "Reserved for future use"}
NUMBERS = {0: "End of Option List (EOL)", 1: "No-Operation (NOP)", 2: "Security", 3: "Loose source route",
           4: "Time stamp", 5: "Extended security", 6: "Commercial IP security option", 7: "Record route",
           8: "Stream identifier", 9: "Strict source route", 10: "Experimental Measurement", 11: "MTU probe",
           12: "MTU Reply", 13: "Experimental Flow Control", 14: "Experimental Access Control", 15: "Ask Estrin",
           16: "IMI Traffic Descriptor", 17: "Extended Internet Protocol", 18: "Traceroute", 19: "Address Extension",
           20: "Router Alert", 21: "Selective Directed Broadcast", 22: "Unassigned", 23: "Dynamic Packet State",
           24: "Upstream Multicast Packet", 25: "Quick-Start", 30: "RFC 3692-style experiment"}
TS_FLAGS = {0: "Time stamps only", 1: "Time stamp and address", 3: "Time stamps for prespecified addresses"}
SHORT_NAMES = {7: "Record Route", 68: "Time Stamp", 148: "Router Alert"}


def _expert(item: Item, abbrev: str, message: str) -> Item:
    item.expert(ExpertInfo(abbrev, PROTOCOL, WARN, message))
    return item


def options_item(data: bytes, p: int, end: int) -> TextItem:
    """"Options: (N bytes)" and each option under it; the names of the options decoded are appended."""
    item = TextItem(None, None, p, end - p, f"Options: ({end - p} bytes)")
    names: list[str] = []
    nops = 0
    while p < end:
        opt = data[p]
        if opt in (0, 1):
            if opt == 1 and (nops == 0 or (p - item.offset + 20) % 4):
                nops += 1
                if nops == 4:
                    _expert(item, "ip.nop", "4 NOP in a row - a router may have removed some options")
            elif opt == 1:
                nops = 0
            field, label = ((f.ip_option_eol, "IP Option - End of Options List (EOL)") if opt == 0 else
                            (f.ip_option_nop, "IP Option - No-Operation (NOP)"))
            _type(item.add(Item(field, data[p:p + 1], p, 1, label)), opt, p)
            p += 1
            if opt == 0:
                break
            continue
        name = SHORT_NAMES.get(opt, f"Unknown (0x{opt:02x})")
        left = end - p - 1
        if left == 0:
            _expert(item.add(TextItem(None, None, p, 1, f"{name} (length byte past end of options)")),
                    "ip.opt.len.invalid", f"{name} (length byte past end of options)")
            break
        n = data[p + 1]
        s = "" if n == 1 else "s"
        if n < 2 or n - 2 > left - 1:
            text = (f"{name} (with too-short option length = {n} byte{s})" if n < 2 else
                    f"{name} (option length = {n} byte{s} says option goes past end of options)")
            _expert(item.add(TextItem(None, None, p, 2 if n < 2 else left - 1, text)), "ip.opt.len.invalid", text)
            break
        if opt not in SHORT_NAMES:
            item.add(TextItem(None, None, p, n, f"{name} ({n} byte{s})"))
        else:
            OPTIONS[opt](item, data, p, n)
            names.append(name)
        p += n
    item.label += "".join(", " + name for name in names)
    return item


def _type(o: Item, opt: int, p: int) -> None:
    t = o.add(Item(f.ip_opt_type, opt, p, 1, f"Type: {opt}"))
    t.add(Item(f.ip_opt_type_copy, bool(opt & 0x80), p, 1,
               f"{bits(opt, 0x80, 8)} = Copy on fragmentation: {'Yes' if opt & 0x80 else 'No'}"))
    cls, num = (opt >> 5) & 3, opt & 0x1F
    t.add(Item(f.ip_opt_type_class, cls, p, 1, f"{bits(opt, 0x60, 8)} = Class: {CLASSES[cls]} ({cls})"))
    t.add(Item(f.ip_opt_type_number, num, p, 1,
               f"{bits(opt, 0x1F, 8)} = Number: {NUMBERS.get(num, 'Unknown')} ({num})"))


def _header(top: Item, field, name: str, opt: int, p: int, n: int) -> tuple[Item, Item]:
    o = top.add(Item(field, None, p, n, f"IP Option - {name} ({n} bytes)"))
    _type(o, opt, p)
    return o, o.add(Item(f.ip_opt_len, n, p + 1, 1, f"Length: {n}"))


def _router_alert(top: Item, data: bytes, p: int, n: int) -> None:
    o, length = _header(top, f.ip_option_routeralert, "Router Alert", 148, p, 4)
    o.value = data[p:p + n]
    if n != 4:
        _expert(length, "ip.opt.len.invalid", f"Router Alert (with option length = {n} byte{'s' if n != 1 else ''};"
                                              f" should be 4)")
    (value,) = struct.unpack_from("!H", data, p + 2)
    text = f"{'Router shall examine packet' if value == 0 else 'Reserved'} ({value})"
    o.label += f": {text}"
    o.add(Item(f.ip_opt_ra, value, p + 2, 2, f"Router Alert: {text}"))


def _record_route(top: Item, data: bytes, p: int, n: int) -> None:
    o, _ = _header(top, f.ip_option_record_route, "Record Route", 7, p, n)
    o.value = data[p:p + n]
    ptr = data[p + 2]
    pointer = o.add(Item(f.ip_opt_ptr, ptr, p + 2, 1, f"Pointer: {ptr}"))
    if ptr < 4 or ptr & 3:
        _expert(pointer, "ip.opt.ptr.before_address" if ptr < 4 else "ip.opt.ptr.middle_address",
                "Pointer points before first address" if ptr < 4 else "Pointer points to middle of address")
        return
    at, left = 3, n - 3
    while left > 0:
        if left < 4:
            _expert(pointer, "ip.subopt_too_long", "Suboption would go past end of option")
            break
        addr = v4_text(data[p + at:p + at + 4])
        recorded = ptr > n or at + 1 < ptr
        field, host, name = ((f.ip_rec_rt, f.ip_rec_rt_host, "Recorded Route") if recorded else
                             (f.ip_empty_rt, f.ip_empty_rt_host, "Empty Route"))
        nxt = " <- (next)" if not recorded and at + 1 == ptr else ""
        o.add(Item(field, addr, p + at, 4, f"{name}: {addr}{nxt}"))
        o.add(HiddenItem(host, addr, p + at, 4, None, True))
        at, left = at + 4, left - 4


def _time_stamp(top: Item, data: bytes, p: int, n: int) -> None:
    o, _ = _header(top, f.ip_option_timestamp, "Time Stamp", 68, p, n)
    o.value = data[p:p + n]
    ptr, flg = data[p + 2], data[p + 3]
    why = (" (header is full)" if ptr == 1 else " (points before first address)" if ptr < 5 else
           " (points to middle of field)" if (ptr - 1) & 3 else "")
    o.add(Item(f.ip_opt_ptr, ptr, p + 2, 1, f"Pointer: {ptr}{why}"))
    o.add(Item(f.ip_opt_overflow, flg >> 4, p + 3, 1, f"{bits(flg, 0xF0, 8)} = Overflow: {flg >> 4}"))
    kind = flg & 15
    o.add(Item(f.ip_opt_flag, kind, p + 3, 1,
               f"{bits(flg, 0x0F, 8)} = Flag: {TS_FLAGS.get(kind, 'Unknown')} (0x{kind:x})"))
    at, left = 4, n - 4
    while left > 0:
        pair = kind in (1, 3)
        if left < (8 if pair else 4):
            _expert(o.add(TextItem(None, None, p + at, left, "Suboption would go past end of option")),
                    "ip.subopt_too_long", "Suboption would go past end of option")
            break
        if pair:
            addr = v4_text(data[p + at:p + at + 4])
            o.add(Item(f.ip_opt_time_stamp_addr, addr, p + at, 4, f"Address: {'-' if addr == '0.0.0.0' else addr}"))
            at, left = at + 4, left - 4
        (stamp,) = struct.unpack_from("!I", data, p + at)
        o.add(Item(f.ip_opt_time_stamp, stamp, p + at, 4, f"Time stamp: {stamp}"))
        at, left = at + 4, left - 4


OPTIONS = {7: _record_route, 68: _time_stamp, 148: _router_alert}
