"""Dissector dispatch: which game protocol a decoded frame carries (decode-as, then port table, then heuristics,
as tshark orders them), and the per-conversation state the game dissectors keep. Yields finished packets."""
from __future__ import annotations

from dataclasses import dataclass, field

from .context import Ctx
from .protocol import Protocol
from .tree import DataSource, Item, Layer


class DispatchError(ValueError):
    """A bad -d / -o argument (the CLI turns it into one clear line)."""


@dataclass
class Settings:
    prefs: dict[str, str] = field(default_factory=dict)        # "blank.revision" -> "2015"
    decode_as: dict[tuple[str, int], str] = field(default_factory=dict)   # ("udp", 23456) -> "blank"


class Packet:
    """One frame after dissection: the capture frame, the standard-layer decode, the game layer if any."""

    __slots__ = ("frame", "decoded", "game", "_info", "protocol", "sources", "_index")

    def __init__(self, frame, decoded, game: Layer | None, info: str, protocol: str, sources):
        self.frame, self.decoded, self.game = frame, decoded, game
        self._info, self.protocol, self.sources = info, protocol, sources
        self._index = None

    @property
    def info(self) -> str:
        """The Info column (made on first use: a dissector may hand over a function that makes it)."""
        if callable(self._info):
            self._info = self._info()
        return self._info

    @property
    def number(self) -> int:
        return self.frame.number

    def layers(self) -> list[Layer]:
        layers = list(self.decoded.layers())
        if self.game is not None:
            layers.append(self.game)
        return layers

    def index(self) -> dict[str, list]:
        """Every item of every layer by field abbrev, in tree order; protocols (layer names) map to their top
        item. What display filters, -T fields and the Python API (`packet["blank.seq"]`) read."""
        if self._index is None:
            index: dict[str, list] = {}
            for layer in self.layers():
                index.setdefault(layer.proto, []).append(layer.item)
                for item in layer.item.walk():
                    f = item.field
                    if f is not None and item is not layer.item:
                        index.setdefault(f.abbrev, []).append(item)
                    elif item.expert_info is not None:
                        index.setdefault("_ws.expert", []).append(item)
                        index.setdefault(item.expert_info.abbrev, []).append(item)
            self._index = index
        return self._index

    def values(self, abbrev: str) -> list:
        """The values of a field in this packet (all occurrences, in tree order)."""
        return [item.value for item in self.index().get(abbrev, ())]

    def __getitem__(self, abbrev: str):
        """The first value of a field: packet["blank.seq"]; KeyError when the packet has none."""
        items = self.index().get(abbrev)
        if not items:
            raise KeyError(abbrev)
        return items[0].value

    def __contains__(self, abbrev: str) -> bool:
        return abbrev in self.index()


class Dispatcher:
    def __init__(self, protocols: list[Protocol], settings: Settings | None = None):
        self.protocols = {p.name: p for p in protocols}
        self.settings = settings or Settings()
        self.udp_ports = {port: p for p in protocols for port in p.udp_ports}
        self.heuristics = [p for p in protocols if p.heuristic]
        self.conversations: dict[tuple, dict] = {}
        self.check_settings()

    def check_settings(self) -> None:
        for (transport, port), name in self.settings.decode_as.items():
            if name not in self.protocols:
                raise DispatchError(f"decode-as: unknown protocol {name!r} (known: {', '.join(self.protocols)})")
        for key, value in self.settings.prefs.items():
            proto, _, pref = key.partition(".")
            p = self.protocols.get(proto)
            if p is None or pref not in p.preferences():
                raise DispatchError(f"unknown preference {key!r}")
            choices = p.preferences()[pref][2]
            if value not in choices:
                raise DispatchError(f"preference {key}: {value!r} is not one of {', '.join(choices)}")

    def choose(self, d) -> Protocol | None:
        if d.transport != "udp" or not d.payload:    # tshark hands no empty payload to a sub-dissector
            return None
        decode_as = self.settings.decode_as
        if decode_as:
            for port in (d.sport, d.dport):
                name = decode_as.get(("udp", port))
                if name:
                    return self.protocols[name]
        p = self.udp_ports.get(d.sport) or self.udp_ports.get(d.dport)
        if p is not None:
            return p
        for p in self.heuristics:
            if p.heuristic_match(d.payload):
                return p
        return None

    def dissect(self, frame, d) -> Packet:
        """Dissect one frame's game layer (if any). Never raises for any packet content."""
        proto = self.choose(d)
        if proto is None:
            protocol = (d.protocols[-1] if d.protocols else "frame").upper()
            return Packet(frame, d, None, _plain_info(d), protocol, [])
        d.protocols.append(proto.name)        # frame.protocols, as tshark shows it ("eth:ethertype:ip:udp:blank")
        a, b = f"{d.src}:{d.sport}", f"{d.dst}:{d.dport}"
        key = (proto.name, a, b) if a < b else (proto.name, b, a)
        conv = self.conversations.setdefault(key, {})
        start = d.payload_offset
        end = start + len(d.payload)
        tree = Item(proto.info, proto.description, start, end - start, proto.description)
        sources: list[DataSource] = [DataSource("Frame", frame.data)]
        ctx = Ctx(frame.data, start, end, tree, proto, conv, f"{a}>{b}", frame.number, sources)
        try:
            info = proto.dissect(ctx, self.settings.prefs)
        except Exception as exc:  # noqa: BLE001 - a dissector bug must not lose the rest of the capture
            ctx.expert(tree, "malformed", f"Dissector error: {exc!r}")
            info = "Dissector error"
        return Packet(frame, d, Layer(proto.name, tree), info, proto.name, sources)


def _plain_info(d) -> str:
    if d.error:
        return f"[Malformed: {d.error}]"
    if d.transport in ("udp", "tcp"):
        return f"{d.sport} → {d.dport} Len={len(d.payload)}"
    return ""
