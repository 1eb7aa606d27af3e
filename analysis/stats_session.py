"""What a game session did, per conversation: statistics no generic tool has.

-z enet,peers      per ENet peer (each side of a conversation): datagrams, commands by kind (reliable, unreliable,
                   unsequenced, fragments, acknowledgements), retransmissions (a reliable command sent again with
                   the same channel and sequence number), unacknowledged reliable commands, loss inferred from
                   retransmissions (as libenet counts packetsLost: a reliable command that timed out), late commands (a
                   reliable sequence number skipped, seen later: lost before the capture point), range-coder ratio, round-trip times measured by that peer from the acknowledgements it
                   received (capture-time min/avg/max, and libenet's own smoothed figure: protocol.c
                   enet_protocol_handle_acknowledge, integer milliseconds, mean and variance)
-z iceball,files   every file transfer: name, type, compressed / inflated size, request, start and end frames,
                   duration, throughput; aborted (by whom) or refused (a FILE_ABORT answering a FILE_REQUEST with
                   no transfer: the requested name)
-z rutentoy,objects  reassembled messages (cookie, channel, length, text) and textures (cookie, length,
                   xxHash32, digest ok, size)
-z freeblox,assets   streamed assets (name, type, size, format) and chat
-z players         players per session for every game: who logged in, joined or was announced, when they left
                   (or the session ended), and what was said

Each is bounded: at most ROW_LIMIT rows of a kind per conversation, time series thinned to SERIES_LIMIT points;
what is left out is counted (`omitted`). The results keep time series (RTT over time, bytes per message type)
that the session report (analysis.report_data / output.report_html) plots.
"""
from __future__ import annotations

from collections import OrderedDict

from ..dissectors.iceball import FILE_TYPES
from .stats_base import Tap, register
from .tree_walk import child, child_value, child_values, value_name

ROW_LIMIT = 2000            # rows of one kind kept per conversation
SERIES_LIMIT = 1000         # points of one time series kept (every other one dropped when full)
PENDING_LIMIT = 4096        # reliable ENet commands awaiting their acknowledgement, per peer
CONV_LIMIT = 100_000        # conversations tracked by one statistic


def seconds(packet) -> float:
    ns = packet.frame.ts_ns
    return ns // 1_000_000_000 + (ns % 1_000_000_000) / 1e9


class Series(list):
    """A bounded time series: when full, every other point is dropped (the shape stays, the size halves)."""

    def add(self, point) -> None:
        if len(self) >= SERIES_LIMIT:
            del self[::2]
        self.append(point)


class Rows(list):
    """A bounded list of rows; `omitted` counts the rest."""

    def __init__(self):
        super().__init__()
        self.omitted = 0

    def add(self, row) -> dict | None:
        if len(self) >= ROW_LIMIT:
            self.omitted += 1
            return None
        self.append(row)
        return row


class SessionTap(Tap):
    """Per-conversation state for one game protocol's layers (`proto`; "" for every game layer)."""

    proto = ""

    def __init__(self, args):
        super().__init__(args)
        self.convs: dict = {}
        self.omitted_convs = 0
        self.firsts: dict = {}     # every conversation's first source: the client (a TCP SYN, an ENet CONNECT)

    def conversation(self, packet, key):
        conv = self.convs.get(key)
        if conv is None:
            if len(self.convs) >= CONV_LIMIT:
                self.omitted_convs += 1
                return None, None
            a = self.firsts.get(key, key[0])
            conv = self.convs[key] = self.new_conversation(a, key[1] if a == key[0] else key[0], packet)
        a = f"{packet.decoded.src}:{packet.decoded.sport}"
        conv["last_frame"], conv["end"] = packet.number, seconds(packet)
        return conv, ("c2s" if a == conv["client"] else "s2c")

    def new_conversation(self, client, server, packet) -> dict:
        return {"client": client, "server": server, "first_frame": packet.number, "start": seconds(packet)}

    def add(self, packet):
        d = packet.decoded
        if d.sport is None:
            return
        a, b = f"{d.src}:{d.sport}", f"{d.dst}:{d.dport}"
        key = (a, b) if a < b else (b, a)
        if key not in self.firsts and len(self.firsts) < CONV_LIMIT:
            self.firsts[key] = a
        layers = [layer for layer in packet.games if not self.proto or layer.proto == self.proto]
        if layers:
            conv, direction = self.conversation(packet, key)
            if conv is not None:
                self.count(packet, conv, direction, layers)

    def count(self, packet, conv, direction, layers) -> None:
        raise NotImplementedError

    def rows(self, conv, key) -> Rows:
        rows = conv.get(key)
        if rows is None:
            rows = conv[key] = Rows()
        return rows

    def result(self):
        convs = [self.finish(c) for c in self.convs.values()]
        return {"kind": self.kind, "proto": self.proto, "conversations": convs,
                "omitted_conversations": self.omitted_convs}

    def finish(self, conv) -> dict:
        out = {k: v for k, v in conv.items() if not k.startswith("_")}
        for k, v in conv.items():
            if isinstance(v, Rows) and v.omitted:
                out[f"{k}_omitted"] = v.omitted
        return out


# --- ENet ------------------------------------------------------------------------------------------------------------

ENET_KINDS = {1: "acknowledgements", 6: "reliable", 7: "unreliable", 8: "fragments", 9: "unsequenced",
              12: "unreliable_fragments"}


def libenet_rtt(state: dict, sample_ms: float) -> None:
    """libenet's smoothed round-trip time and variance after one acknowledgement (unsigned integer ms)."""
    rtt = max(int(sample_ms + 0.5), 1)
    if "rtt" not in state:
        state["rtt"], state["var"] = rtt, (rtt + 1) // 2
        return
    state["var"] -= state["var"] // 4
    if rtt >= state["rtt"]:
        diff = rtt - state["rtt"]
        state["var"] += diff // 4
        state["rtt"] += diff // 8
    else:
        diff = state["rtt"] - rtt
        state["var"] += diff // 4
        state["rtt"] -= diff // 8


def new_peer() -> dict:
    return {"datagrams": 0, "bytes": 0, "commands": 0, **{k: 0 for k in ENET_KINDS.values()}, "other": 0,
            "ack_requested": 0, "retransmissions": 0, "late": 0, "acknowledged": 0, "range_coded": 0, "coded_bytes": 0, "decoded_bytes": 0,
            "_pending": OrderedDict(), "_acked": OrderedDict(), "_top": {}, "_missing": OrderedDict(), "_rtt": [0, 0.0, None, None], "_libenet": {},
            "rtt_series": Series(), "retransmission_series": Series()}     # (time, retransmissions + late so far)


@register
class EnetPeers(SessionTap):
    name = "enet,peers"
    kind = "enet_peers"
    proto = "enet"

    def new_conversation(self, client, server, packet):
        conv = super().new_conversation(client, server, packet)
        conv.update(c2s=new_peer(), s2c=new_peer())
        return conv

    def count(self, packet, conv, direction, layers):
        me, other = conv[direction], conv["s2c" if direction == "c2s" else "c2s"]
        t = seconds(packet)
        for layer in layers:
            top = layer.item
            me["datagrams"] += 1
            me["bytes"] += top.length
            coded = top.find("enet.compressed_data")
            if coded is not None:
                me["range_coded"] += 1
                me["coded_bytes"] += len(coded.value or b"")
                length = top.find("enet.decompressed_length")
                me["decoded_bytes"] += (length.value or 0) if length is not None else 0
            for cmd in top.children or ():
                if cmd.field is not None and cmd.field.abbrev == "enet.command":
                    self.command(packet, t, me, other, cmd)

    def command(self, packet, t, me, other, cmd):
        kind = cmd.find("enet.command.type")
        if kind is None:
            return
        me["commands"] += 1
        name = ENET_KINDS.get(kind.value, "other")
        me[name] += 1
        channel = child_value(cmd, "enet.command.channel")
        if kind.value == 1:                      # an acknowledgement: of a command the other side sent
            key = (channel, child_value(cmd, "enet.acknowledge.received_reliable_seq"))
            if other["_pending"].pop(key, None) is not None:
                other["acknowledged"] += 1
                bounded(other["_acked"], key, t)
            rtt = child_value(cmd, "enet.acknowledge.rtt")
            if rtt is not None:
                r = other["_rtt"]                 # count, sum, min, max: constant memory
                r[0], r[1] = r[0] + 1, r[1] + rtt
                r[2] = rtt if r[2] is None else min(r[2], rtt)
                r[3] = rtt if r[3] is None else max(r[3], rtt)
                libenet_rtt(other["_libenet"], rtt)
                other["rtt_series"].add((t, rtt))
            return
        ack = cmd.find("enet.command.acknowledge")
        if ack is None or not ack.value:
            return
        me["ack_requested"] += 1
        key = (channel, child_value(cmd, "enet.command.reliable_seq"))
        if key in me["_pending"] or key in me["_acked"]:
            me["retransmissions"] += 1
            me["retransmission_series"].add((t, me["retransmissions"] + me["late"]))
            me["_acked"].pop(key, None)
        elif key[1] is not None:
            self.sequence(me, t, key)
        bounded(me["_pending"], key, packet.number)

    @staticmethod
    def sequence(me, t, key) -> None:
        """Reliable sequence numbers of a channel go up by one: a number skipped and seen later is a command lost
        (or overtaken) before the capture point, then sent again: counted as `late`."""
        channel, seq = key
        top = me["_top"].get(channel)
        if top is None:
            me["_top"][channel] = seq
            return
        ahead = (seq - top) & 0xFFFF
        if 0 < ahead < 0x8000:
            for skipped in range(top + 1, top + min(ahead, 64)):        # a big jump: not a loss we can count
                bounded(me["_missing"], (channel, skipped & 0xFFFF), t)
            me["_top"][channel] = seq
        elif me["_missing"].pop(key, None) is not None:
            me["late"] += 1
            me["retransmission_series"].add((t, me["retransmissions"] + me["late"]))

    def finish(self, conv):
        out = {k: v for k, v in conv.items() if k not in ("c2s", "s2c")}
        for direction, (src, dst) in (("c2s", (conv["client"], conv["server"])),
                                      ("s2c", (conv["server"], conv["client"]))):
            p = conv[direction]
            row = {k: v for k, v in p.items() if not k.startswith("_")}
            n, total, low, high = p["_rtt"]
            reliable_sent = p["ack_requested"]
            unacked = len(p["_pending"])
            row.update(peer=src, to=dst, unacknowledged=unacked,
                       rtt_min=low, rtt_max=high, rtt_avg=total / n if n else None, rtt_samples=n,
                       libenet_rtt=p["_libenet"].get("rtt"), libenet_rtt_variance=p["_libenet"].get("var"),
                       compression_ratio=(p["coded_bytes"] / p["decoded_bytes"]) if p["decoded_bytes"] else None,
                       loss=(p["retransmissions"] + p["late"]) / reliable_sent if reliable_sent else 0.0)
            out[direction] = row
        return out


def bounded(table: OrderedDict, key, value) -> None:
    table[key] = value
    table.move_to_end(key)
    while len(table) > PENDING_LIMIT:
        table.popitem(last=False)


# --- Iceball file transfers ------------------------------------------------------------------------------------------

FILE_IDS = {0x30: "request", 0x31: "start", 0x32: "end", 0x33: "block", 0x34: "abort_client", 0x35: "abort_server"}


@register
class IceballFiles(SessionTap):
    name = "iceball,files"
    kind = "iceball_files"
    proto = "iceball"

    def count(self, packet, conv, direction, layers):
        t = seconds(packet)
        requests = conv.setdefault("_requests", [])
        files = self.rows(conv, "files")
        for layer in layers:
            top = layer.item
            pid = child_value(top, "iceball.id")
            step = FILE_IDS.get(pid)
            if step is None:
                continue
            node = child(top, "iceball.file")
            current = conv.get("_current")
            if step == "request":
                flags = child_value(top, "iceball.file_request.flags", 0) or 0
                requests.append({"name": child_value(top, "iceball.file_request.name"), "type_id": flags & 0xF,
                                 "request_frame": packet.number, "request_time": t})
                del requests[:-16]
            elif step == "start":
                req = requests.pop(0) if requests else {
                    "name": child_value(node, "iceball.file.name") if node is not None else None,
                    "type_id": None, "request_frame": None, "request_time": None}
                kind = child(node, "iceball.file.type") if node is not None else None
                row = {**req, "type": value_name(kind) if kind is not None else None,
                       "compressed_size": child_value(top, "iceball.file_start.clen"),
                       "announced_size": child_value(top, "iceball.file_start.ulen"), "inflated_size": None,
                       "start_frame": packet.number, "start_time": t, "end_frame": None, "end_time": None,
                       "blocks": 0, "status": "in progress"}
                conv["_current"] = files.add(row) or {}
            elif step == "block" and current is not None:
                current["blocks"] = current.get("blocks", 0) + 1
            elif step == "end" and current is not None:
                conv["_current"] = None
                inflated = child_value(node, "iceball.file.inflated_size") if node is not None else None
                received = child_value(node, "iceball.file.received") if node is not None else None
                current.update(end_frame=packet.number, end_time=t, inflated_size=inflated,
                               status="complete" if inflated is not None else
                               "incomplete" if received is not None else "does not inflate")
                self.timing(current)
            elif step.startswith("abort"):
                who = "client" if step == "abort_client" else "server"
                if current is not None:
                    conv["_current"] = None
                    current.update(end_frame=packet.number, end_time=t, status=f"aborted by {who}")
                    self.timing(current)
                elif node is not None and child(node, "iceball.file.request_frame") is not None:
                    # the dissector linked this abort to the request it refuses (the tree says which)
                    frame = child_value(node, "iceball.file.request_frame")
                    req = next((r for r in requests if r["request_frame"] == frame), None)
                    if req is None:
                        req = {"name": child_value(node, "iceball.file.name"), "type_id": None,
                               "request_frame": frame, "request_time": t}
                    else:
                        requests.remove(req)
                    files.add({**req, "type": FILE_TYPES.get(req["type_id"]), "compressed_size": None,
                               "announced_size": None,
                               "inflated_size": None, "start_frame": None, "start_time": None,
                               "end_frame": packet.number, "end_time": t, "blocks": 0,
                               "status": "refused", "duration": t - req["request_time"], "throughput": None})

    @staticmethod
    def timing(row):
        if row.get("start_time") is not None and row.get("end_time") is not None:
            row["duration"] = row["end_time"] - row["start_time"]
            size = row.get("compressed_size") or 0
            row["throughput"] = size / row["duration"] if row["duration"] > 0 else None


# --- Rutentoy messages and textures ----------------------------------------------------------------------------------

@register
class RutentoyObjects(SessionTap):
    name = "rutentoy,objects"
    kind = "rutentoy_objects"
    proto = "rutentoy"

    def count(self, packet, conv, direction, layers):
        t = seconds(packet)
        for layer in layers:
            cookie = channel = None
            for node in layer.item.walk():
                f = node.field
                if f is None:
                    continue
                a = f.abbrev
                if a in ("rutentoy.message.cookie", "rutentoy.texture.cookie"):
                    cookie = node.value
                elif a == "rutentoy.message.channel":
                    channel = node.value
                elif a == "rutentoy.message.reassembled":
                    text = node.find("rutentoy.message.text")
                    self.rows(conv, "messages").add({
                        "frame": packet.number, "time": t, "direction": direction, "cookie": cookie,
                        "channel": channel, "length": child_value(node, "rutentoy.message.reassembled.length"),
                        "chunks": child_value(node, "rutentoy.message.reassembled.chunks"),
                        "text": (text.value[:120] if text is not None and text.value else "")})
                elif a == "rutentoy.texture.image":
                    image = child_values(node, "rutentoy.texture.image", (
                        "length", "xxh32", "announced", "digest_ok", "width", "height", "valid", "frame"))
                    image["first_frame"] = image.pop("frame")
                    self.rows(conv, "textures").add({
                        "frame": packet.number, "time": t, "direction": direction, "cookie": cookie, **image})


# --- Freeblox assets and chat ----------------------------------------------------------------------------------------

@register
class FreebloxAssets(SessionTap):
    name = "freeblox,assets"
    kind = "freeblox_assets"
    proto = "freeblox"

    def count(self, packet, conv, direction, layers):
        t = seconds(packet)
        for layer in layers:
            top = layer.item
            buf = child(top, "freeblox.stream_asset.buffer")
            if buf is not None:
                asset = child_values(top, "freeblox.stream_asset", ("asset_name", "asset_path", "asset_type"))
                self.rows(conv, "assets").add({
                    "frame": packet.number, "time": t, "name": asset["asset_name"], "path": asset["asset_path"],
                    "type": asset["asset_type"], **child_values(buf, "freeblox.stream_asset.buffer", ("size", "format"))})
            for kind in ("stream_chat", "player_chat"):
                msg = child(top, f"freeblox.{kind}.message")
                if msg is not None:
                    self.rows(conv, "chat").add({
                        "frame": packet.number, "time": t, "direction": direction,
                        "player": child_value(top, f"freeblox.{kind}.player_name")
                        or child_value(top, f"freeblox.{kind}.player_uuid"),
                        "chat_type": child_value(top, f"freeblox.{kind}.chat_type"), "message": msg.value})


# --- players per session, every game ---------------------------------------------------------------------------------

JOINS = {"blank.login.name": "login", "iceball.auth.name": "auth", "iceball.plr_add.name": "announced",
         "freeblox.player_join.player_name": "joined", "freeblox.player.entry.player_name": "listed",
         "rutentoy.ipc.user": "login"}
LEAVES = {"freeblox.player_quit.player_name": "quit", "iceball.quit.msg": "quit"}
CHATS = {"blank.message.text", "iceball.chat_send.msg", "iceball.chat_send_team.msg", "iceball.chat_add_text.msg",
         "freeblox.stream_chat.message", "freeblox.player_chat.message"}


@register
class Players(SessionTap):
    """Players per session (every game protocol): login/join/announcement to leave/quit (or session end)."""
    name = "players"
    kind = "players"

    def count(self, packet, conv, direction, layers):
        t = seconds(packet)
        conv.setdefault("protocols", [])
        players = self.rows(conv, "players")
        by_name = conv.setdefault("_by_name", {})
        for layer in layers:
            if layer.proto not in conv["protocols"]:
                conv["protocols"].append(layer.proto)
            pid = None
            for node in layer.item.walk():
                f = node.field
                if f is None:
                    continue
                a = f.abbrev
                if a == "iceball.plr_add.pid":
                    pid = node.value
                if a in JOINS and node.value and node.value not in by_name:
                    row = players.add({"name": node.value, "how": JOINS[a], "joined_frame": packet.number,
                                       "joined": t, "left_frame": None, "left": None, "left_how": None,
                                       "pid": pid if a == "iceball.plr_add.name" else None})
                    if row is not None:
                        by_name[node.value] = row
                elif a in LEAVES:
                    self.leave(by_name, players, node.value if a.startswith("freeblox") else None, packet, t,
                               LEAVES[a], direction)
                elif a == "iceball.plr_rm.pid":
                    for row in players:
                        if row.get("pid") == node.value and row["left"] is None:
                            self.mark(row, packet, t, "removed")
                elif a == "rutentoy.ipc.command" and node.value == "LEAVE":
                    self.leave(by_name, players, None, packet, t, "leave", direction)
                elif a == "blank.type" and value_name(node) == "Part":
                    self.leave(by_name, players, None, packet, t, "part", direction)
                elif a in CHATS and node.value:
                    self.rows(conv, "chat").add({"frame": packet.number, "time": t, "direction": direction,
                                                 "protocol": layer.proto, "text": str(node.value)[:200]})

    def leave(self, by_name, players, name, packet, t, how, direction):
        if name is not None:
            row = by_name.get(name)
            if row is not None and row["left"] is None:
                self.mark(row, packet, t, how)
            return
        if direction == "c2s":          # the client leaves: its own login (the first player of the session)
            for row in players:
                if row["how"] in ("login", "auth") and row["left"] is None:
                    self.mark(row, packet, t, how)
                    return

    @staticmethod
    def mark(row, packet, t, how):
        row.update(left_frame=packet.number, left=t, left_how=how)

    def finish(self, conv):
        out = super().finish(conv)
        for row in out.get("players", ()):
            if row["left"] is None:
                row.update(left_frame=conv["last_frame"], left=conv["end"], left_how="session end")
        return out
