"""The Python API's packet: one decoded frame, its fields by abbrev, typed, and its tshark renderings.

`protodump.read()` and `protodump.live()` yield these. A Packet wraps the pipeline's packet (engine.dispatch.Packet)
and adds what a library user needs on top of the decode: typed values, each item's shown value and value name,
the -V text, tshark's JSON as a dict, the reassembled and inflated buffers by name.
"""
from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from .analysis.filter_fields import ADDRESS_KINDS
from .output import json_out, text
from .output import tshark_values as tv

_MISSING = object()


def typed(abbrev: str, value: Any) -> Any:
    """A field value as a Python object: integers and floats as they are, IPv4/IPv6 addresses as ipaddress
    objects (their str() is tshark's text), everything else unchanged."""
    kind = ADDRESS_KINDS.get(abbrev)
    if kind in ("ipv4", "ipv6") and isinstance(value, str):
        try:
            return ipaddress.ip_address(value)
        except ValueError:
            return value
    return value


@dataclass(frozen=True)
class Field:
    """One occurrence of a field in a packet's tree."""

    abbrev: str
    value: Any          # typed (see typed())
    shown: str          # the value as tshark -T json / -T fields shows it ("0x0800", "Login" is not here: "1")
    value_name: str | None     # the name of an enumerated value ("Login" for blank.type 1), else None
    label: str          # the -V line ("Type: Login (1)")
    offset: int         # byte offset in its buffer
    length: int
    generated: bool     # a computed item ([brackets] in -V)


class Packet:
    """A decoded packet. `pkt["blank.seq"]` is the first value of a field (KeyError if absent), `pkt.get(abbrev,
    default)`, `pkt.values(abbrev)` all of them, `"blank.login" in pkt` tests a protocol or field."""

    __slots__ = ("_p",)

    def __init__(self, packet):
        self._p = packet

    # --- identity -----------------------------------------------------------------------------------------------
    @property
    def number(self) -> int:
        return self._p.frame.number

    @property
    def frame(self):
        """The captured frame: .ts_ns, .length, .caplen, .data, .linktype, .interface."""
        return self._p.frame

    @property
    def time(self) -> datetime:
        """The capture time (UTC; microseconds: a datetime holds no nanoseconds, frame.ts_ns does)."""
        return datetime.fromtimestamp(self._p.frame.ts_ns // 1000 / 1e6, tz=timezone.utc)

    @property
    def info(self) -> str:
        """The Info column."""
        return self._p.info

    @property
    def protocol(self) -> str:
        """The Protocol column (the innermost protocol)."""
        return self._p.protocol

    @property
    def summary(self) -> str:
        """The summary line, as `protodump` prints it (time relative to the capture's first frame: the frame's
        own times, stamped by the capture's clock, capture/clock.py)."""
        return text.summary_line(self._p)

    def __repr__(self) -> str:
        return f"<Packet {self.number} {self.protocol} {self._p.frame.length} bytes: {self.info}>"

    # --- fields -------------------------------------------------------------------------------------------------
    def layers(self):
        """Each layer: .proto and .item (the tree: .field.abbrev, .value, .children)."""
        return self._p.layers()

    def index(self) -> dict[str, list]:
        """Every tree item by abbrev (what filters read)."""
        return self._p.index()

    def __contains__(self, abbrev: str) -> bool:
        return abbrev in self._p or abbrev == "frame.time"

    def _typed(self, abbrev: str, value: Any) -> Any:
        # frame.time's tree value is tshark's text (capture/layers/frame.py): the API gives the datetime
        return self.time if abbrev == "frame.time" else typed(abbrev, value)

    def __getitem__(self, abbrev: str):
        value = self.get(abbrev, _MISSING)
        if value is _MISSING:
            raise KeyError(abbrev)
        return value

    def get(self, abbrev: str, default=None):
        """The first value of a field (typed), or `default`. `frame.time` is the capture time as a datetime."""
        if abbrev == "frame.time":
            return self.time
        items = self._p.index().get(abbrev)
        if not items:
            return default
        return typed(abbrev, items[0].value)

    def values(self, abbrev: str) -> list:
        """Every value of a field, in tree order (typed)."""
        if abbrev == "frame.time" and abbrev not in self._p.index():
            return [self.time]
        return [self._typed(abbrev, item.value) for item in self._p.index().get(abbrev, ())]

    def fields(self, abbrev: str) -> list[Field]:
        """Every occurrence of a field with its shown value, value name, label and position."""
        out = []
        for item in self._p.index().get(abbrev, ()):
            f = item.field
            if f is None:
                continue
            shown = tv.json_value(f, item.value) if f.ftype not in ("none", "protocol") else ""
            name = f.values.get(item.value) if f.values and isinstance(item.value, int) else None
            out.append(Field(abbrev, self._typed(abbrev, item.value), shown, name, text.item_label(item),
                             item.offset, item.length if item.length is not None else 0, item.generated))
        return out

    def field(self, abbrev: str) -> Field | None:
        """The first occurrence of a field (see fields()), or None."""
        found = self.fields(abbrev)
        return found[0] if found else None

    def __iter__(self) -> Iterator[str]:
        """The abbrevs present, in tree order."""
        return iter(self._p.index())

    # --- buffers ------------------------------------------------------------------------------------------------
    @property
    def buffers(self) -> dict[str, bytes]:
        """The packet's data sources by name: "Frame", and the reassembled and inflated buffers ("Reassembled
        chunk", "Inflated chunk", "Inflated file", ...; a second one of a name gets " #2")."""
        out: dict[str, bytes] = {}
        for source in self._p.sources or ():
            name, n = source.name, 2
            while name in out:
                name, n = f"{source.name} #{n}", n + 1
            out[name] = source.data
        out.setdefault("Frame", self._p.frame.data)
        return out

    # --- renderings ---------------------------------------------------------------------------------------------
    def text(self) -> str:
        """The -V text of this packet (its detail tree, as `protodump -V` prints it)."""
        return text.detail_text(self._p, None)

    def to_json(self) -> str:
        """This packet as one element of `tshark -T json` (text: duplicate keys kept, as tshark writes them)."""
        return json_out.packet_text(self._p, fakes=False)

    def to_dict(self) -> dict:
        """tshark's JSON shape as a dict: {"_index", "_type", "_score", "_source": {"layers": {...}}}. A key that
        repeats in an object (blank.ack_history.received) becomes a list of its values, as `tshark -T json
        --no-duplicate-keys` writes it."""
        return json.loads(self.to_json(), object_pairs_hook=_merge_duplicates)


def _merge_duplicates(pairs) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            if not isinstance(out[key], list) or not getattr(out[key], "_merged", False):
                out[key] = _Merged([out[key]])
            out[key].append(value)
        else:
            out[key] = value
    return {k: list(v) if isinstance(v, _Merged) else v for k, v in out.items()}


class _Merged(list):
    _merged = True
