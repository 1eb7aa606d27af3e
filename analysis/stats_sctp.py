"""-z sctp,stat: chunks of each type per direction of each SCTP association (source and destination address
and port), as tshark's tap-sctpchunkstat.c counts and prints them: the newest direction first, and a packet
that starts with INIT or INIT ACK counted by that chunk alone.

tshark 4.0 compares the argument with "sctp,stat," over 11 bytes, terminator included, so it never takes a
filter (`-z sctp,stat,FILTER` counts every packet): neither does protodump."""
from __future__ import annotations

from .stats_base import Tap, register

COLUMNS = (0, 3, 4, 5, 1, 2, 10, 11, 6, 9)    # DATA SACK HBEAT HBEATACK INIT INITACK COOKIE COOKIEACK ABORT ERROR
RULE = "-" * 135


@register
class SctpChunks(Tap):
    name = kind = "sctp,stat"

    def __init__(self, args):
        self.packets = 0
        self.directions: dict[tuple, dict[int, int]] = {}    # (src, sport, dst, dport) -> chunk type -> count

    def standard_only(self) -> bool:
        return True

    def add(self, packet):
        d = packet.decoded
        if d.transport != "sctp" or not d.chunks:       # (tshark's SCTP taps a packet from its chunks)
            return
        self.packets += 1
        key = (d.src, d.sport, d.dst, d.dport)
        counts = self.directions.get(key)
        if counts is None:
            counts = self.directions[key] = {}
        chunks = d.chunks
        if chunks[0].kind in (1, 2):      # INIT, INIT ACK: that chunk alone
            counts[chunks[0].kind] = counts.get(chunks[0].kind, 0) + 1
        else:
            for chunk in chunks:
                counts[chunk.kind] = counts.get(chunk.kind, 0) + 1

    def result(self):
        rows = [{"source": src, "source_port": sport, "destination": dst, "destination_port": dport,
                 "chunks": {str(kind): counts[kind] for kind in sorted(counts)},
                 "columns": [counts.get(k, 0) for k in COLUMNS]}
                for (src, sport, dst, dport), counts in reversed(self.directions.items())]
        return {"kind": self.kind, "layout": "sctp_stat", "packets": self.packets, "directions": rows}


def text_lines(r) -> list[str]:
    lines = ["-------------------------------------------- SCTP Statistics "
             "--------------------------------------------------------------------------",
             f"|  Total packets RX/TX {r['packets']}", RULE,
             "|   Source IP   |PortA|    Dest. IP   |PortB|  DATA  |  SACK  |  HBEAT |HBEATACK|  INIT  | INITACK| "
             "COOKIE |COOKIACK| ABORT  |  ERROR |", RULE]
    for row in r["directions"]:
        lines.append(f"|{row['source']:>15}|{row['source_port']:5}|{row['destination']:>15}|"
                     f"{row['destination_port']:5}|" + "".join(f"{n:8}|" for n in row["columns"]))
    return lines + [RULE]
