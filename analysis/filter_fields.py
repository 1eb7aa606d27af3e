"""What a display filter can name: every registered field (game protocols and the standard layers), expert infos,
protocol names and tshark's convenience fields; with the comparison type ("kind") of each.

The standard layers keep addresses as the text tshark prints (ip.src = "127.0.0.1"); filters compare them as
addresses, as tshark's FT_IPv4/FT_IPv6/FT_ETHER fields, so those abbrevs get an address kind here.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..capture import fields as capture_fields
from ..capture.field_types import TSHARK_TYPES
from ..dissectors import PROTOCOLS
from ..engine.tree import GROUP_NAMES, INTEGER_TYPES, SEVERITY_NAMES, FieldInfo

# the addresses' filter kinds (their text compares as an address); the hosts' are names
ADDRESS_KINDS = {**{abbrev: {"FT_IPv4": "ipv4", "FT_IPv6": "ipv6"}[ft] for abbrev, ft in TSHARK_TYPES.items()
                    if ft in ("FT_IPv4", "FT_IPv6")},
                 "ip.src_host": "string", "ip.dst_host": "string", "ip.host": "string",
                 "eth.src": "ether", "eth.dst": "ether", "eth.addr": "ether", "sll.src.eth": "ether"}
# Derived from expert items, as tshark's _ws.expert.* fields
EXPERT_FIELDS = {"_ws.expert.severity": ("int", {v: k for v, k in SEVERITY_NAMES.items()}),
                 "_ws.expert.group": ("int", dict(GROUP_NAMES)),
                 "_ws.expert.message": ("string", None)}
# Kept as text by the standard layers, but numbers to tshark
NUMERIC_TEXT = {abbrev: "float" for abbrev, ft in TSHARK_TYPES.items() if ft == "FT_RELATIVE_TIME"}


@dataclass(frozen=True)
class Spec:
    """A nameable field: its comparison kind, value names, and (for integers) its range."""

    abbrev: str
    kind: str                        # int bool float string bytes ipv4 ipv6 ether none protocol
    values: dict | None = None
    ftype: str = ""
    expert: bool = False             # an expert info abbrev: existence only


def kind_of(info: FieldInfo) -> str:
    if info.abbrev in ADDRESS_KINDS:
        return ADDRESS_KINDS[info.abbrev]
    if info.abbrev in NUMERIC_TEXT:
        return NUMERIC_TEXT[info.abbrev]
    t = info.ftype
    if t in INTEGER_TYPES:
        return "int"
    if t in ("float", "double"):
        return "float"
    return t                          # bool string bytes none protocol


def _collect(obj, out: list) -> None:
    if isinstance(obj, FieldInfo):
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _collect(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _collect(v, out)


@lru_cache(maxsize=1)
def registry() -> dict[str, Spec]:
    infos: list[FieldInfo] = []
    for name in dir(capture_fields):
        if not name.startswith("_"):
            _collect(getattr(capture_fields, name), infos)
    for proto in PROTOCOLS:
        infos.extend(proto.fields.values())
    specs: dict[str, Spec] = {}
    for info in infos:
        specs.setdefault(info.abbrev, Spec(info.abbrev, kind_of(info), info.values, info.ftype))
    for proto in PROTOCOLS:
        specs.setdefault(proto.name, Spec(proto.name, "protocol", None, "protocol"))
        for kind in proto.experts:
            specs.setdefault(f"{proto.name}.{kind}", Spec(f"{proto.name}.{kind}", "none", None, "none", True))
    for abbrev in [*capture_fields.EXPERTS, "_ws.expert", "_ws.malformed", "_ws.short"]:
        specs.setdefault(abbrev, Spec(abbrev, "none", None, "none", True))
    for abbrev, (kind, values) in EXPERT_FIELDS.items():
        specs[abbrev] = Spec(abbrev, kind, values, "uint32" if kind == "int" else "string")
    return specs


def is_field(name: str) -> bool:
    return name in registry()
