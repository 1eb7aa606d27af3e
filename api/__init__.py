"""protodump: a Wireshark-style dissector for the network protocols of small open-source voxel games."""
from __future__ import annotations

from collections.abc import Iterator

__version__ = "0.1.0"
__all__ = ["read", "compile_filter", "FilterError"]


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

    A capture that is cut short raises protodump.capture.files.CaptureError after its readable packets.
    """
    from .analysis.filter import DisplayFilter, compile_filter as _compile
    from .engine.dispatch import Settings
    from .session import packets

    shows = None
    if filter is not None:
        shows = filter if isinstance(filter, DisplayFilter) else _compile(filter)
    table = {}
    for key, proto in (decode_as or {}).items():
        table[key if isinstance(key, tuple) else ("udp.port", int(key))] = proto
    settings = Settings(dict(prefs or {}), table)

    def generate():
        for packet in packets(path, settings):
            if shows is None or shows(packet):
                yield packet
    return generate()


def compile_filter(text: str):
    """Compile a display filter once (to reuse with read(), or to test packets: f(packet) -> bool)."""
    from .analysis.filter import compile_filter as _compile
    return _compile(text)


def __getattr__(name: str):
    if name == "FilterError":            # imported lazily: `import protodump` stays light for the CLI
        from .analysis.filter_lex import FilterError
        return FilterError
    raise AttributeError(name)
