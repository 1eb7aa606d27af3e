"""protodump: a Wireshark-style dissector for the network protocols of small open-source voxel games."""
from __future__ import annotations

from collections.abc import Iterator

from .hot_path import install as _install_compiled

_install_compiled()        # the optional compiled hot path (protodump/compiled.py), before any hot module loads

__version__ = "0.1.0"
__all__ = ["read", "live", "encode", "compile_filter", "FilterError", "EncodeError", "Packet", "Field", "protocol",
           "to_dataframe"]


def _settings(prefs, decode_as):
    from .engine.dispatch import Settings
    table = {}
    for key, proto in (decode_as or {}).items():
        table[key if isinstance(key, tuple) else ("udp.port", int(key))] = proto
    return Settings(dict(prefs or {}), table)


def _compiled(filter):  # noqa: A002
    from .analysis.filter import DisplayFilter, compile_filter as _compile
    if filter is None:
        return None
    return filter if isinstance(filter, DisplayFilter) else _compile(filter)


def _shown(packets, shows) -> Iterator:
    from .packet import Packet
    for packet in packets:
        shown = shows is None or shows(packet)
        packet.decoded.displayed(shown)      # frame.time_delta_displayed of the next frames (capture/clock.py)
        if shown:
            yield Packet(packet)


def read(path, filter=None, prefs: dict | None = None, decode_as: dict | None = None) -> Iterator:  # noqa: A002
    """Decode a capture file (pcap, pcapng, gzip) and yield its packets, only those matching `filter` if given.

    filter: a display filter in Wireshark syntax (str, or one compiled by compile_filter); a bad one raises
    FilterError before any packet is read. prefs: {"blank.revision": "2015"}. decode_as: {("udp.port", 23456):
    "blank"} (or {23456: "blank"} for UDP). Each packet's fields are reachable by abbrev: packet["blank.seq"] is
    the first value (KeyError if absent), packet.values("blank.seq") all of them, "blank" in packet tests a
    protocol or field; packet.number, packet.info, packet.protocol, packet.layers() are there too.

    >>> import protodump
    >>> logins = protodump.read("captures/blank-bad.pcap", filter='blank.type == "Login" && blank.login.name')
    >>> [(p.number, p["blank.login.name"]) for p in logins][:2]
    [(1, 'mallory'), (21, 'mallory')]
    >>> next(protodump.read("captures/blank-bad.pcap", filter="blank.seq in {4..8} && !blank.malformed"))["blank.seq"]
    4

    path may also be "-" (the standard input) or an open binary file (a pipe: nothing seeks). Each packet is a
    protodump.Packet (see docs/api.md). A capture that is cut short raises protodump.capture.files.CaptureError
    after its readable packets.
    """
    from .session import packets
    shows = _compiled(filter)
    return _shown(packets(path, _settings(prefs, decode_as)), shows)


def live(interface: str, bpf: str | None = None, *, filter=None, count: int | None = None,  # noqa: A002
         duration: float | None = None, prefs: dict | None = None, decode_as: dict | None = None) -> Iterator:
    """Capture on `interface` (a name, or a number of `protodump -D`) and yield packets as they arrive, decoded
    (reassembly included). bpf: a capture filter ("udp port 12354"); filter: a display filter; count: stop after
    this many captured packets; duration: after this many seconds. Needs CAP_NET_RAW: without it,
    protodump.capture.live.LiveError says so before anything is yielded."""
    from .capture.live import open_live
    from .session import packets_from_frames
    shows = _compiled(filter)
    capture = open_live(interface, bpf, duration=duration, limit=count)

    def generate():
        try:
            yield from _shown(packets_from_frames(capture, _settings(prefs, decode_as)), shows)
        finally:
            capture.close()
    return generate()


def to_dataframe(paths, fields, filter=None, **options):  # noqa: A002
    """A pandas DataFrame of a capture or a capture set, one typed column per field (api/frames.py)."""
    from .frames import to_dataframe as frame
    return frame(paths, fields, filter, **options)


def protocol(name: str):
    """The game protocol `name` ("blank", "enet", "iceball", "rutentoy", "freeblox"): its field table, its fields
    (.fields: abbrev -> FieldInfo), and .encode(values)."""
    from .dissectors import PROTOCOLS
    for p in PROTOCOLS:
        if p.name == name:
            return p
    raise KeyError(f"no protocol {name!r} (known: {', '.join(p.name for p in PROTOCOLS)})")


def encode(name: str, values: dict, **options) -> bytes:
    """The wire bytes of one message of protocol `name` from its field values, with every field required:
    protodump.encode("blank", {"tag": 0xFB1AB1AF, "seq": 1, ...}). An unknown or missing field raises
    EncodeError naming it. protocol(name).encode(values) is the lenient form: missing fields take defaults."""
    return protocol(name).encode(values, strict=True, **options)


def compile_filter(text: str):
    """Compile a display filter once (to reuse with read(), or to test packets: f(packet) -> bool)."""
    from .analysis.filter import compile_filter as _compile
    return _compile(text)


def __getattr__(name: str):
    if name == "FilterError":            # imported lazily: `import protodump` stays light for the CLI
        from .analysis.filter_lex import FilterError
        return FilterError
    if name == "EncodeError":
        from .engine.value_keys import EncodeError
        return EncodeError
    if name in ("Packet", "Field"):
        from . import packet
        return getattr(packet, name)
    raise AttributeError(name)
