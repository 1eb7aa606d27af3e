"""The data of a session report (`protodump report`): per conversation, players and their timeline, bandwidth over
time by message type, ENet round-trip times and retransmissions over time, file / texture / asset transfers,
expert infos. Gathered by the game statistics' taps (analysis.stats_session) and one tap of its own (bandwidth by
message type and experts, per conversation), in one pass. Plain data: output/report_html.py draws it.

Large captures are summarised, not dumped: the DETAIL_LIMIT busiest conversations get plots, the others a row
in a table (at most TABLE_LIMIT rows; the rest are counted); every list in the data is bounded.
"""
from __future__ import annotations

from collections import Counter

from .stats_base import TAPS, Tap
from .stats_session import CONV_LIMIT, EnetPeers, FreebloxAssets, IceballFiles, Players, RutentoyObjects, seconds

DETAIL_LIMIT = 12          # conversations drawn in detail
TABLE_LIMIT = 500          # conversations listed in the summary table
BIN_LIMIT = 400            # time bins of a bandwidth series (the bin widens to keep under it)
TYPE_LIMIT = 8             # message types drawn per conversation (the rest is "other")
EXPERT_LIMIT = 50          # distinct expert messages kept per conversation


class Timeline(Tap):
    """Per conversation: bytes by message type in time bins, packet and byte totals, expert infos. A
    conversation starts with its first game message; its later packets without one (TCP segments of a message
    that ends in a later frame, acknowledgements) count under "<transport> (no game message)"."""

    name = "report,timeline"
    kind = "report_timeline"

    def __init__(self, args=()):
        super().__init__(list(args))
        self.convs: dict = {}
        self.first = None
        self.typers = {}
        self.omitted = 0

    def typer(self, proto):
        if proto not in self.typers:
            cls = TAPS.get(f"{proto},types")
            self.typers[proto] = cls([]) if cls is not None else None
        return self.typers[proto]

    def add(self, packet):
        t = seconds(packet)
        if self.first is None:
            self.first = t
        d = packet.decoded
        if d.sport is None:
            return
        a, b = f"{d.src}:{d.sport}", f"{d.dst}:{d.dport}"
        key = (a, b) if a < b else (b, a)
        conv = self.convs.get(key)
        if not packet.games:      # a segment of a message that ends later, an ACK: the conversation's bytes too
            if conv is not None:
                self.count(conv, t, f"{d.transport} (no game message)", len(packet.frame.data))
            return
        if conv is None:
            if len(self.convs) >= CONV_LIMIT:
                self.omitted += 1
                return
            conv = self.convs[key] = {"key": key, "start": t, "end": t, "packets": 0, "bytes": 0,
                                      "protocols": [], "bin": 0.001, "bins": Counter(), "types": Counter(),
                                      "experts": Counter(), "experts_omitted": 0}
        top = packet.games[-1].proto
        if top not in conv["protocols"]:
            conv["protocols"].append(top)
        typer = self.typer(top)
        layers = [layer for layer in packet.games if layer.proto == top]
        kind = top
        if typer is not None and layers:
            kinds = typer.layer_types(layers[0])
            kind = f"{top} {kinds[0]}" if kinds else top
        self.count(conv, t, kind, len(packet.frame.data))
        for layer in packet.games:
            for item in layer.item.walk():
                info = item.expert_info
                if info is not None:
                    k = (info.severity, layer.proto, info.message)
                    if k in conv["experts"] or len(conv["experts"]) < EXPERT_LIMIT:
                        conv["experts"][k] += 1
                    else:
                        conv["experts_omitted"] += 1

    def count(self, conv, t, kind, size):
        conv["end"] = t
        conv["packets"] += 1
        conv["bytes"] += size
        conv["types"][kind] += size
        self.put(conv, t - conv["start"], kind, size)

    @staticmethod
    def put(conv, rel, kind, size):
        bins = conv["bins"]
        while int(rel / conv["bin"]) >= BIN_LIMIT:        # widen the bins: the series keeps its shape
            conv["bin"] *= 2
            merged = Counter()
            for (i, k), v in bins.items():
                merged[(i // 2, k)] += v
            conv["bins"] = bins = merged
        bins[(int(rel / conv["bin"]), kind)] += size

    def result(self):
        return {"kind": self.kind, "first": self.first, "conversations": list(self.convs.values()),
                "omitted": self.omitted}


def gather(packets) -> dict:
    """One pass over the packets: everything the report shows."""
    taps = {"timeline": Timeline(), "enet": EnetPeers([]), "files": IceballFiles([]),
            "rutentoy": RutentoyObjects([]), "freeblox": FreebloxAssets([]), "players": Players([])}
    count = 0
    for packet in packets:
        count += 1
        for tap in taps.values():
            tap.add(packet)
    results = {name: tap.result() for name, tap in taps.items()}
    return shape(results, count)


def _by_key(result) -> dict:
    out = {}
    for c in result["conversations"]:
        a, b = c["client"], c["server"]
        out[(a, b) if a < b else (b, a)] = c
    return out


def shape(results: dict, count: int) -> dict:
    timeline = results["timeline"]
    first = timeline["first"] or 0.0
    extra = {name: _by_key(results[name]) for name in ("enet", "files", "rutentoy", "freeblox", "players")}
    convs = sorted(timeline["conversations"], key=lambda c: -c["bytes"])
    summary, detail = [], []
    for n, conv in enumerate(convs):
        key = conv["key"]
        players = extra["players"].get(key, {})
        row = {"client": players.get("client", key[0]), "server": players.get("server", key[1]),
               "protocols": conv["protocols"], "packets": conv["packets"], "bytes": conv["bytes"],
               "start": conv["start"] - first, "duration": conv["end"] - conv["start"],
               "players": [p["name"] for p in players.get("players", ())][:20],
               "experts": sum(conv["experts"].values())}
        if n < TABLE_LIMIT:
            summary.append(row)
        if n < DETAIL_LIMIT:
            detail.append(detail_of(conv, row, first, {k: v.get(key) for k, v in extra.items()}))
    return {"packets": count, "conversations": len(convs) + timeline["omitted"], "summary": summary,
            "summary_omitted": max(0, len(convs) - TABLE_LIMIT) + timeline["omitted"], "detail": detail,
            "first": first}


def detail_of(conv, row, first, extra) -> dict:
    """One conversation drawn in detail: series relative to the capture's first packet."""
    types = [k for k, _ in conv["types"].most_common(TYPE_LIMIT)]
    series = {}
    for (i, kind), size in conv["bins"].items():
        kind = kind if kind in types else "other"
        series.setdefault(kind, Counter())[i] += size
    width = conv["bin"]
    last = max((i for i, _ in conv["bins"]), default=0) + 1        # every bin, empty ones as 0 (< BIN_LIMIT)
    bandwidth = {kind: [(conv["start"] - first + i * width, 8 * c.get(i, 0) / width) for i in range(last + 1)]
                 for kind, c in series.items()}
    d = {**row, "bin": width, "bandwidth": bandwidth,
         "experts": [{"severity": s, "protocol": p, "message": m, "count": n}
                     for (s, p, m), n in conv["experts"].most_common()],
         "experts_omitted": conv["experts_omitted"]}
    enet = extra.get("enet")
    if enet:
        d["enet"] = [{"peer": enet[k]["peer"], "rtt": [(t - first, v) for t, v in enet[k]["rtt_series"]],
                      "retransmission_series": [(t - first, v) for t, v in enet[k]["retransmission_series"]],
                      **{f: enet[k][f] for f in ("rtt_min", "rtt_avg", "rtt_max", "libenet_rtt", "loss",
                                                  "retransmissions", "late", "datagrams", "unacknowledged")}}
                     for k in ("c2s", "s2c")]
    transfers = []
    files = extra.get("files") or {}
    for f in files.get("files", ()):
        start = f["start_time"] if f["start_time"] is not None else f["request_time"]
        transfers.append({"kind": "file", "name": f["name"], "start": (start or first) - first,
                          "end": (f["end_time"] or start or first) - first, "status": f["status"],
                          "size": f["inflated_size"] or f["compressed_size"]})
    rut = extra.get("rutentoy") or {}
    for t in rut.get("textures", ()):
        transfers.append({"kind": "texture", "name": f"texture {t['xxh32']}", "start": t["time"] - first,
                          "end": t["time"] - first, "size": t["length"],
                          "status": "ok" if t["digest_ok"] is not False else "hash mismatch"})
    fb = extra.get("freeblox") or {}
    for a in fb.get("assets", ()):
        transfers.append({"kind": "asset", "name": str(a["name"]), "start": a["time"] - first,
                          "end": a["time"] - first, "size": a["size"], "status": str(a["format"])})
    d["transfers"] = transfers[:200]
    d["transfers_omitted"] = max(0, len(transfers) - 200)
    players = extra.get("players") or {}
    d["player_timeline"] = [{"name": p["name"], "joined": p["joined"] - first, "left": p["left"] - first,
                             "how": p["how"], "left_how": p["left_how"]} for p in players.get("players", ())][:50]
    d["chat"] = [{"time": c["time"] - first, "direction": c["direction"], "text": c["text"]}
                 for c in players.get("chat", ())][:100]
    return d
