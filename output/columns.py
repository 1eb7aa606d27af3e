"""tshark's default packet-list columns (No., Time, Source, Destination, Protocol, Length, Info): the summary line,
`-T psml`, and the `_ws.col.<Title>` pseudo-fields of `-e`. Time is seconds since the first frame of the capture
(not the first one shown), as tshark's default "Relative" time column."""
from __future__ import annotations

from .text import column_seconds, time_column

TITLES = ("No.", "Time", "Source", "Destination", "Protocol", "Length", "Info")
COLUMN_PREFIX = "_ws.col."


def values(packet, first_ns: int | None, time_format: str = "r") -> list[str]:
    """The columns' texts; the Time column as -t `time_format` says (r: from `first_ns`)."""
    frame, d = packet.frame, packet.decoded
    if time_format == "r":
        t = column_seconds(frame.ts_ns - (frame.ts_ns if first_ns is None else first_ns), frame.prec)
    else:
        t = time_column(packet, time_format)
    return [str(frame.number), t, d.src or "", d.dst or "", packet.protocol, str(frame.length),
            packet.info]


def column(packet, abbrev: str, first_ns: int | None, time_format: str = "r") -> str | None:
    """The value of `_ws.col.<Title>`, or None for a column tshark's default layout does not have (tshark accepts
    any `_ws.col.` name and prints nothing for it)."""
    title = abbrev[len(COLUMN_PREFIX):]
    if title not in TITLES:
        return None
    return values(packet, first_ns, time_format)[TITLES.index(title)]


def is_column(abbrev: str) -> bool:
    return abbrev.startswith(COLUMN_PREFIX) and len(abbrev) > len(COLUMN_PREFIX)
