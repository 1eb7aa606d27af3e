"""Display-filter values: a literal converted to the type of the field it is compared with (as Wireshark converts
an "unparsed" word only once it knows the field), a field occurrence turned into a comparable value, slices.

Comparable values: int (ints, bools as 0/1, IPv4/IPv6 addresses as integers), float, str, bytes (bytes,
protocols, Ethernet addresses, slices). An address literal is a (network, mask) pair so CIDR and plain
addresses compare alike.
"""
from __future__ import annotations

import ipaddress
import re
from functools import lru_cache

from ..capture.field_types import TSHARK_TYPES
from .filter_fields import NUMERIC_TEXT, Spec
from .filter_lex import FilterError
from .filter_parse import Literal

HEX = frozenset("0123456789abcdefABCDEF")
TYPE_NAMES = {"float": "Floating point (single-precision)", "double": "Floating point (double-precision)",
              "string": "Character string", "bytes": "Sequence of bytes", "bool": "Boolean", "none": "Label",
              "protocol": "Protocol", "ipv4": "IPv4 address", "ipv6": "IPv6 address", "ether": "Ethernet or other MAC address"}


# tshark's enum ftenum names (its arithmetic errors: "FT_IPv4 cannot +."), where protodump keeps a simpler type:
# addresses and times as their text
FT_NAMES = {"ipv4": "FT_IPv4", "ipv6": "FT_IPv6", "ether": "FT_ETHER", "bool": "FT_BOOLEAN"}
ABSOLUTE_TIMES = frozenset(("frame.time", "frame.time_utc"))


TIME_OFFSET = re.compile(r"-?[0-9]+(\.[0-9]{1,9})?\Z")     # a relative time as tshark 4.0 reads one: [-]s[.ns]


def is_relative_time(spec: Spec) -> bool:
    """An FT_RELATIVE_TIME field (the standard layers keep its text; filters compare it as seconds)."""
    return spec.abbrev in NUMERIC_TEXT


# the type names tshark's errors give those of TSHARK_TYPES that are no plain protodump type
FT_TYPE_NAMES = {"FT_FRAMENUM": "Frame number", "FT_UINT24": "Unsigned integer (3 bytes)", "FT_BOOLEAN": "Boolean",
                 "FT_BYTES": "Sequence of bytes", "FT_STRING": "Character string"}


def ft_name(spec: Spec) -> str:
    if spec.abbrev in TSHARK_TYPES:
        return TSHARK_TYPES[spec.abbrev]
    if spec.kind in FT_NAMES:
        return FT_NAMES[spec.kind]
    if spec.abbrev in NUMERIC_TEXT:
        return "FT_RELATIVE_TIME"
    if spec.abbrev in ABSOLUTE_TIMES:
        return "FT_ABSOLUTE_TIME"
    return FT_NAMES.get(spec.ftype) or f"FT_{spec.ftype.upper()}"


def type_name(spec: Spec) -> str:
    if spec.kind in ("ipv4", "ipv6", "ether"):
        return TYPE_NAMES[spec.kind]
    if is_relative_time(spec):
        return "Time offset"
    if spec.abbrev in ABSOLUTE_TIMES:
        return "Date and time"
    if TSHARK_TYPES.get(spec.abbrev) in FT_TYPE_NAMES:
        return FT_TYPE_NAMES[TSHARK_TYPES[spec.abbrev]]
    t = spec.ftype
    if t.startswith("uint") or t.startswith("int"):
        width = {"8": 1, "16": 2, "24": 3, "32": 4, "64": 8}[t.lstrip("uint")]
        return f"{'Unsigned' if t.startswith('u') else 'Signed'} integer ({width} byte{'s' if width > 1 else ''})"
    return TYPE_NAMES.get(t, t)


def _err(msg: str, lit: Literal) -> FilterError:
    return FilterError(msg, lit.pos, lit.length)


def _shown(lit: Literal) -> str:
    return f'"{lit.text}"' if lit.kind != "STRING" else f'"{lit.text}"'


def parse_int(text: str) -> int | None:
    s, sign = text, 1
    if s[:1] in "+-":
        sign, s = (-1 if s[0] == "-" else 1), s[1:]
    low = s.lower()
    for prefix, base in (("0x", 16), ("0b", 2)):
        if low.startswith(prefix) and len(s) > 2:
            digits, s = s[2:], None
            break
    else:
        digits, base = s, (8 if len(s) > 1 and s.startswith("0") else 10)
    allowed = "0123456789abcdef"[:base]
    if not digits or any(c.lower() not in allowed for c in digits):
        return None
    return sign * int(digits, base)


class Negative(int):
    """A negative number given for an unsigned field: tshark 4.0 negates it at run time, which fails, so every
    comparison with it is false (`!=`, "all not equal", then holds); `&` takes its two's complement."""
    __slots__ = ()

    def __eq__(self, other):
        return False

    __ne__ = __lt__ = __gt__ = __le__ = __ge__ = __eq__
    __hash__ = int.__hash__


def literal(lit: Literal, spec: Spec, name: str):
    """Convert a literal to a comparable value of the field's kind, or raise FilterError as tshark words it."""
    kind = spec.kind
    if kind == "int":
        if lit.kind == "CHAR":
            return ord(lit.text)
        value = parse_int(lit.text) if lit.kind == "WORD" else None
        if value is None:
            for code, label in (spec.values or {}).items():
                if label.lower() == lit.text.lower():
                    return code
            if spec.values:
                raise _err(f'{_shown(lit)} cannot be found among the possible values for {name}.', lit)
            if lit.kind == "STRING":
                raise _err(f'{type_name(spec)} cannot be converted from a string ("{lit.text}").', lit)
            raise _err(f'"{lit.text}" is not a valid number.', lit)
        t = spec.ftype
        if t[:4] == "uint" or t[:3] == "int":
            bits = int(t.lstrip("uint")) if t.lstrip("uint").isdigit() else 32
            high = (1 << bits) - 1 if t.startswith("u") else (1 << (bits - 1)) - 1
            low = None if t.startswith("u") else -(1 << (bits - 1))
            if value > high:
                raise _err(f'"{lit.text}" too big for this field, maximum {high}.', lit)
            if low is not None and value < low:
                raise _err(f'"{lit.text}" too small for this field, minimum {low}.', lit)
            if low is None and value < 0:
                return Negative(value & high)
        return value
    if kind == "bool":
        if lit.text in ("True", "TRUE"):
            return 1
        if lit.text in ("False", "FALSE"):
            return 0
        value = parse_int(lit.text) if lit.kind == "WORD" else None
        if value is None:
            raise _err(f'"{lit.text}" cannot be found among the possible values for {name}.', lit)
        return int(bool(value))
    if kind == "float" and is_relative_time(spec) and lit.kind != "CHAR":
        if lit.kind == "STRING":
            raise _err(f'Time offset cannot be converted from a string ("{lit.text}").', lit)
        if not TIME_OFFSET.match(lit.text):
            raise _err(f'"{lit.text}" is not a valid time.', lit)
        return float(lit.text)
    if kind == "float":
        if lit.kind == "CHAR":
            return float(ord(lit.text))
        value = parse_int(lit.text) if lit.kind == "WORD" else None
        if value is not None:
            return float(value)
        try:
            if lit.kind != "WORD" or lit.text.lower().lstrip("+-") in ("inf", "nan", "infinity"):
                raise ValueError
            return float(lit.text)
        except ValueError:
            raise _err(f'"{lit.text}" is not a valid number.', lit) from None
    if kind == "string":
        return lit.text
    if kind in ("bytes", "protocol"):
        return literal_bytes(lit)
    if kind == "ether":
        if lit.kind == "WORD":
            digits = lit.text.replace(":", "").replace("-", "").replace(".", "")
            if len(digits) == 12 and all(c in HEX for c in digits) and _separated_ok(lit.text):
                return bytes.fromhex(digits)
            try:
                n = len(literal_bytes(lit))
            except FilterError:
                n = 6
            if n != 6:       # a byte string of another length
                raise _err(f'"{lit.text}" contains too {"few" if n < 6 else "many"} bytes to be a valid Ethernet '
                           f'address.', lit)
        raise _err(f'"{lit.text}" is not a valid Ethernet address.', lit)
    if kind in ("ipv4", "ipv6"):
        cls = ipaddress.IPv4Network if kind == "ipv4" else ipaddress.IPv6Network
        try:
            if lit.kind == "CHAR":
                raise ValueError
            net = cls(lit.text, strict=False)
        except ValueError:
            raise _err(f'"{lit.text}" is not a valid hostname or {"IPv4" if kind == "ipv4" else "IPv6"} address.',
                       lit) from None
        return (int(net.network_address), int(net.netmask))
    raise _err(f"{name} (type={type_name(spec)}) cannot be compared with a value.", lit)


def _separated_ok(text: str) -> bool:
    for sep in ":-.":
        if sep in text:
            return all(part and all(c in HEX for c in part) for part in text.split(sep))
    return True


def literal_bytes(lit: Literal) -> bytes:
    """"text" (its UTF-8 bytes), 'c', or a byte string: aa:bb:cc, aa-bb-cc, aa.bb.cc, aabbcc, or one byte a/aa."""
    if lit.kind == "STRING":
        return lit.text.encode("utf-8", "surrogatepass")
    if lit.kind == "CHAR":
        return lit.text.encode("latin-1", "replace")
    text = lit.text
    for sep in ":-.":
        if sep in text:
            parts = text.split(sep)
            if all(1 <= len(p) <= 2 and all(c in HEX for c in p) for p in parts):
                return bytes(int(p, 16) for p in parts)
            break
    else:
        if all(c in HEX for c in text) and (len(text) % 2 == 0 or len(text) == 1):
            return bytes.fromhex(text.zfill(2))
    raise _err(f'"{text}" is not a valid byte string.', lit)


# -- field occurrences as comparable values

@lru_cache(maxsize=4096)
def _ipv4(text: str) -> int:
    return int(ipaddress.IPv4Address(text))


@lru_cache(maxsize=4096)
def _ipv6(text: str) -> int:
    return int(ipaddress.IPv6Address(text))


@lru_cache(maxsize=1024)
def _mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


def item_bytes(packet, item) -> bytes:
    data = packet.frame.data if item.source == 0 else packet.sources[item.source].data
    return bytes(data[item.offset:item.offset + item.length])


def converter(kind: str):
    """item value -> comparable value, for a field of this kind (None: no conversion)."""
    return {"bool": lambda v: int(bool(v)), "float": float, "ipv4": _ipv4, "ipv6": _ipv6, "ether": _mac}.get(kind)


def raw_bytes(kind: str):
    """item value -> its bytes, for slicing; None when the kind cannot be sliced."""
    if kind == "string":
        return lambda v: v.encode("utf-8", "surrogatepass")
    if kind == "bytes":
        return bytes
    if kind == "ether":
        return _mac
    if kind == "ipv4":
        return lambda v: ipaddress.IPv4Address(v).packed
    if kind == "ipv6":
        return lambda v: ipaddress.IPv6Address(v).packed
    return None


def slicer(ranges: tuple):
    """bytes -> the bytes of the slice, or None when a range falls outside the value (no match, as tshark)."""
    def cut(data: bytes):
        n = len(data)
        out = b""
        for start, length, end in ranges:
            s = start if start >= 0 else n + start
            if length is not None:
                e = s + length
            elif end is not None:
                e = (end if end >= 0 else n + end) + 1
            else:
                e = n
            if s < 0 or e > n or s > e:
                return None
            out += data[s:e]
        return out
    return cut
