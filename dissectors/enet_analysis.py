"""ENet's per-datagram walk and the analysis no table can hold: the range-coded body, the checksum, the commands to
the end of the datagram, and per conversation the CONNECT's facts, acknowledgement references with round-trip
times, fragment reassembly and the hand-off of payloads to the protocol above. The Lua twin is lua/rt_enet.lua
(same order of items, same texts, same limits)."""
from __future__ import annotations

import zlib
from functools import lru_cache

from ..engine.context import Ctx, Truncated, bounded_put, reverse_direction
from ..engine.rangecoder import RangeCoderError, decompress
from ..engine.stream_protocol import ports_of
from ..engine.tree import Item
from ..reassembly.budget import PENDING, PIECE_OVERHEAD, over_budget
from ..reassembly.offsets import OffsetReassembly, OutOfRange
from .enet import CHANNEL_NONE, COMMAND_NAMES, FRAGMENT_COMMANDS, MTU_MAX, PEER_NONE

SENT_LIMIT = 4096              # reliable commands remembered per conversation, awaiting their acknowledgement
MESSAGE_LIMIT = 256            # fragmented messages tracked per conversation (the oldest is forgotten)
MESSAGE_MAX = 32 << 20         # libenet's default maximum packet size: larger totals are refused
FRAGMENT_COUNT_MAX = 1 << 20   # ENET_PROTOCOL_MAXIMUM_FRAGMENT_COUNT
FRAGMENT_LIMIT = 4096          # fragments we hold for one message (~5.6 MB at the usual MTU): keeps each datagram's
                               # share of the coverage check bounded
ACKED_IN_LIMIT = 65536         # acknowledgements remembered per conversation for the second pass's reverse links
PAYLOAD_COMMANDS = {6: "reliable", 7: "unreliable", 9: "unsequenced"}
ACKED_IN = "enet_acked_in"     # a conversation's key for what a second pass shows (cli/two_pass_opts.py)
SECOND_PASS = "_second_pass.enet_acked_in"    # the prefs key under which a second pass gets what the first learnt


def dissect_datagram(p, ctx: Ctx, prefs: dict):
    if ctx.demand is not None and not ctx.demand:
        return scan_datagram(p, ctx, prefs)
    checksum_on = prefs.get("enet.checksum", "off") == "on"
    first = ctx.pos
    if not read_header(p, ctx, checksum_on):
        return "Malformed (truncated header)"
    values, head_end = ctx.values, ctx.pos
    coded = ctx.data[head_end:ctx.end] if values["compressed"] else None
    if coded is None:
        body, start, end = ctx.data, head_end, ctx.end
    else:               # libenet decodes into its receive buffer: at most the MTU bound minus the header
        body = range_decode(coded, MTU_MAX - (head_end - first))
        start, end = 0, len(body or b"")
    if checksum_on:
        check_crc(p, ctx, values, ctx.data[first:head_end], body[start:end] if body is not None else None)
    show_connection(p, ctx)
    source = ctx.source
    if coded is not None:
        source = show_range_coded(p, ctx, coded, body)
        if source is None:
            return "Malformed (range coder)"
    names = walk_commands(p, ctx, prefs, body, start, end, source)
    return lambda: " ".join([", ".join(names) or "No command", *ctx.notes])


def scan_datagram(p, ctx: Ctx, prefs: dict) -> str:
    """A run that reads nothing of ENet but its presence (engine.demand; Wireshark's NULL tree): the commands'
    values and everything they keep (CONNECT, acknowledgements, fragments) and hand up, no items, no experts."""
    values, first = ctx.scopes[0], ctx.pos
    try:
        p.header.scan(ctx)
        if values["sent_time_flag"]:
            p.sent_time.scan(ctx)
        if prefs.get("enet.checksum", "off") == "on":
            p.checksum.scan(ctx)
    except Truncated:
        return ""
    source = ctx.source
    if values["compressed"]:
        body = range_decode(ctx.data[ctx.pos:ctx.end], MTU_MAX - (ctx.pos - first))
        if body is None:
            return ""
        source = ctx.new_source("Decompressed ENet", body)
        sub = Ctx(body, 0, len(body), ctx.tree, ctx.proto, ctx.conv, ctx.direction, ctx.frame, ctx.sources)
        sub.source, sub.prefs = source, ctx.prefs
    else:
        body, sub = ctx.data, ctx     # the commands read on from the header, each in a scope of its own
    end = sub.end
    kept = values.setdefault("commands", [])
    header, commands, scopes = p.command_header, p.commands, sub.scopes
    while sub.pos < end:
        scope: dict = {}
        scopes.append(scope)
        kept.append(scope)
        try:
            header.scan(sub)
            kind = scope["type"]
            packet = commands.get(kind)
            if packet is None:
                break
            packet.scan(sub)
            analyse(p, ctx, prefs, sub, None, kind, scope, body, source)
        except Truncated:
            break
        finally:
            scopes.pop()
    return ""


def shown(ctx: Ctx, *infos) -> bool:
    """Whether items of these fields are read: always, unless the run reads only some fields (Ctx.asked)."""
    asked = ctx.asked
    return asked is None or any(info.abbrev in asked for info in infos)


def read_header(p, ctx: Ctx, checksum_on: bool) -> bool:
    """Peer id word, sent time when flagged, checksum when the preference says so; False when truncated."""
    try:
        p.header.decode(ctx, ctx.tree)
        if ctx.values["sent_time_flag"]:
            p.sent_time.decode(ctx, ctx.tree)
        if checksum_on:
            p.checksum.decode(ctx, ctx.tree)
    except Truncated:
        return False
    return True


def range_decode(coded: bytes, limit: int) -> bytes | None:
    try:
        return decompress(coded, limit)
    except RangeCoderError:
        return None


def show_range_coded(p, ctx: Ctx, coded: bytes, body: bytes | None) -> int | None:
    """The range-coded bytes, then (when they decode) the decompressed buffer as a data source of its own, its
    length and the compression ratio. Returns the source index, None when the data does not decode."""
    g, tree = p.generated, ctx.tree
    if not shown(ctx, g.compressed_data, g.decompressed_length, g.ratio):
        ctx.pos = ctx.end
        return None if body is None else ctx.new_source("Decompressed ENet", body)
    item = tree.add(Item(g.compressed_data, coded, ctx.pos, len(coded), None, False, ctx.source))
    ctx.pos = ctx.end
    if body is None:
        ctx.expert(item, "malformed", "Range-coded data does not decompress")
        return None
    source = ctx.new_source("Decompressed ENet", body)
    tree.add(Item(g.decompressed_length, len(body), item.offset, item.length, None, True, ctx.source))
    tree.add(Item(g.ratio, len(body) / len(coded), item.offset, item.length, None, True, ctx.source))
    ctx.notes.append(f"[range coder {len(coded)}→{len(body)} bytes]")
    return source


def check_crc(p, ctx: Ctx, values: dict, head: bytes, commands: bytes | None) -> None:
    """libenet's CRC-32 covers the header with the checksum field set to the peer's connect id (0 before the
    connection exists) and the commands before compression."""
    g = p.generated
    item = ctx.tree.children[-1]
    connect = ctx.conv.get("enet_connect")
    status = 2
    if commands is not None and (values["peer_id"] == PEER_NONE or connect is not None):
        cid = 0 if values["peer_id"] == PEER_NONE else connect["connect_id"]
        status = int(zlib.crc32(head[:-4] + cid.to_bytes(4, "big") + commands) == values["checksum"])
    ctx.tree.add(Item(g.checksum_status, status, item.offset, 4, None, True, ctx.source))
    if status == 0:
        ctx.expert(ctx.tree, "checksum", "Bad checksum")


def show_connection(p, ctx: Ctx) -> None:
    """On every datagram after the CONNECT: what it announced (connect data, channel count, MTU)."""
    connect = ctx.conv.get("enet_connect")
    if connect is None or connect["frame"] >= ctx.frame:
        return
    g = p.generated
    if not shown(ctx, g.connection, g.conn_frame, g.conn_data, g.conn_channels, g.conn_mtu):
        return
    at, src = ctx.pos, ctx.source
    node = ctx.tree.add(Item(g.connection, None, at, 0, f"Connection (CONNECT in frame {connect['frame']})", True,
                             src))
    node.add(Item(g.conn_frame, connect["frame"], at, 0, None, True, src))
    node.add(Item(g.conn_data, connect["data"], at, 0, None, True, src))
    node.add(Item(g.conn_channels, connect["channel_count"], at, 0, None, True, src))
    node.add(Item(g.conn_mtu, connect["mtu"], at, 0, None, True, src))


def walk_commands(p, ctx: Ctx, prefs: dict, body: bytes, start: int, end: int, source: int) -> list[str]:
    """Commands to the end of the (decompressed) datagram; stops where libenet's receiver stops."""
    g, names = p.generated, []
    kept = ctx.scopes[0].setdefault("commands", [])      # each command's values (the Python API, tests)
    sub = Ctx(body, start, end, ctx.tree, ctx.proto, ctx.conv, ctx.direction, ctx.frame, ctx.sources)
    sub.source, sub.prefs, sub.asked = source, ctx.prefs, ctx.asked     # the commands: items for the asked fields
    while sub.pos < sub.end:
        at = sub.pos
        item = ctx.tree.add(Item(g.command, None, at, 0, "Command", False, source))
        scope: dict = {}
        sub.scopes.append(scope)
        kept.append(scope)
        stop = True
        try:
            p.command_header.decode(sub, item)
            kind = scope["type"]
            packet = p.commands.get(kind)
            if packet is None:
                ctx.expert(item, "malformed", f"Invalid command type {kind}: the receiver stops here")
                item.add(Item(g.data, body[sub.pos:end], sub.pos, end - sub.pos, None, False, source))
                sub.pos = end
            else:
                names.append(packet.label)
                packet.decode(sub, item)
                analyse(p, ctx, prefs, sub, item, kind, scope, body, source)
                stop = False
        except Truncated:
            pass
        finally:
            sub.scopes.pop()
            item.length = sub.pos - at
            item.label = command_label(scope)
            if source:
                for node in item.walk():
                    node.source = source
        if stop:
            break
    return names


def command_label(scope: dict) -> str:
    kind = scope.get("type")
    name = COMMAND_NAMES.get(kind, f"Invalid ({kind})" if kind is not None else "Truncated")
    channel = scope.get("channel")
    text = f"Command: {name}"
    if channel is not None:
        text += ", channel " + ("none" if channel == CHANNEL_NONE else str(channel))
    if "reliable_seq" in scope:
        text += f", seq {scope['reliable_seq']}"
    return text


# --- per-command analysis ------------------------------------------------------------------------------------------

def analyse(p, ctx: Ctx, prefs: dict, sub: Ctx, item: Item, kind: int, scope: dict, body: bytes, source: int) -> None:
    conv, g = ctx.conv, p.generated
    values = ctx.scopes[0]
    if kind == 2:
        conv["enet_connect"] = {"frame": ctx.frame, "data": scope["data"], "channel_count": scope["channel_count"],
                                "mtu": scope["mtu"], "connect_id": scope["connect_id"]}
    acked = scope["acknowledge"]
    if acked and "sent_time" in values:
        key = (ctx.direction, scope["channel"], scope["reliable_seq"], values["sent_time"])
        bounded_put(conv.setdefault("enet_sent", {}), key, (ctx.frame, ctx.time), SENT_LIMIT)
    if kind == 4:
        ctx.end_conversation()          # DISCONNECT: the peers' state is freed shortly after (engine.lifetime)
    if kind == 1:
        acknowledge(g, ctx, item, scope)
    if acked and item is not None and prefs:
        learnt = prefs.get(SECOND_PASS)     # tshark -2 / a GUI click: the ack's reverse link
        frame = learnt.get((ctx.frame, scope["channel"], scope["reliable_seq"])) if learnt else None
        if frame is not None:
            item.add(Item(g.acked_in, frame, item.offset, 0, f"Acknowledged in frame {frame}", True))
    if kind in PAYLOAD_COMMANDS:
        data = scope["data"]
        hand_up(ctx, prefs, body, sub.pos - len(data), sub.pos, source, scope)
    elif kind in FRAGMENT_COMMANDS:
        fragment(p, ctx, prefs, item, kind, scope)


def acknowledge(g, ctx: Ctx, item: Item, scope: dict) -> None:
    """An ACKNOWLEDGE names (channel, reliable seq, sent time) of a command the other side sent."""
    key = (reverse_direction(ctx.direction), scope["channel"], scope["received_reliable_seq"],
           scope["received_sent_time"])
    sent = ctx.conv.get("enet_sent", {}).get(key)
    if sent is None:
        return
    frame, then = sent
    bounded_put(ctx.conv.setdefault(ACKED_IN, {}), (frame, scope["channel"], scope["received_reliable_seq"]),
                ctx.frame, ACKED_IN_LIMIT)
    if item is None or not shown(ctx, g.acked_frame, g.rtt):      # a NULL tree (scan_datagram), or not read
        return
    item.add(Item(g.acked_frame, frame, item.offset, 0, f"Acknowledges frame {frame}", True))
    now = getattr(ctx, "time", None)
    if now is not None and then is not None:
        rtt = (now - then) * 1000.0
        item.add(Item(g.rtt, rtt, item.offset, 0, f"Round-trip time: {rtt:.3f} ms", True))


def hand_up(ctx: Ctx, prefs: dict, data: bytes, start: int, end: int, source: int, scope: dict) -> str | None:
    """Give one message to the protocol above: by the CONNECT's data, then by UDP port (lowest first)."""
    mode = prefs.get("enet.handoff", "auto")
    if start >= end or mode == "off":
        return None
    meta = {"channel": scope["channel"], "enet_command": COMMAND_NAMES[scope["type"]]}
    named = prefs.get("enet.payload")
    chosen = named and ctx.stack and ctx.stack.dispatcher.protocols.get(named)
    if chosen is not None:            # the preference names the protocol (decode-as for every payload)
        ctx.stack.dissect(chosen, data, start, end, source, ctx.direction, meta)
        return chosen.name
    connect = ctx.conv.get("enet_connect")
    if mode == "auto" and connect is not None:
        name = ctx.handoff("enet.connect_data", (connect["data"],), start, end, data, source, meta)
        if name:
            return name
    return ctx.handoff("enet.port", handoff_ports(ctx.direction), start, end, data, source, meta)


@lru_cache(maxsize=4096)
def handoff_ports(direction: str) -> tuple[int, ...]:
    """The ports a payload is handed off by: the direction's, lowest first, each once (remembered: every message
    of a conversation asks again)."""
    return tuple(sorted(set(ports_of(direction))))


def fragment(p, ctx: Ctx, prefs: dict, item: Item, kind: int, scope: dict) -> None:
    """Reliable fragments belong together by (peer, channel, start seq); unreliable ones also by reliable seq.
    The message is shown, and handed up, in the frame whose fragment completes it."""
    g = p.generated
    count, number, total = scope["fragment_count"], scope["fragment_number"], scope["total_length"]
    offset, piece = scope["fragment_offset"], scope["data"]
    problem = fragment_problem(count, number, total, offset, len(piece))
    if problem:
        _expert(ctx, item, "malformed", problem)
        return
    if count > FRAGMENT_LIMIT:
        _expert(ctx, item, "reassembly", f"Not reassembled: {count} fragments exceed the limit of {FRAGMENT_LIMIT}")
        return
    key = (ctx.direction, scope["channel"], scope["start_seq"])
    if kind == 12:
        key += (scope["reliable_seq"],)
    messages = ctx.conv.setdefault("enet_messages", {})
    entry = messages.get(key)
    if entry is not None and (entry[1], entry[2]) != (count, total):
        if not entry[0].done:
            _expert(ctx, item, "reassembly", f"Fragment count {count} / total {total} differ from the message's "
                    f"{entry[1]} / {entry[2]}")
            return
        entry = None                    # a finished message's key in use again (sequence wrap): a new message
    if entry is None:
        if not PENDING.fits(len(piece) + PIECE_OVERHEAD):    # a new message refused outright: no entry kept
            _expert(ctx, item, "reassembly", over_budget())
            return
        entry = (OffsetReassembly(total, MESSAGE_MAX), count, total, set())
        bounded_put(messages, key, entry, MESSAGE_LIMIT)
    message, numbers = entry[0], entry[3]
    if message.done:
        if item is not None and shown(ctx, g.reassembled_in):
            item.add(Item(g.reassembled_in, message.done, item.offset, 0, f"Reassembled in frame {message.done}",
                          True))
        return
    if number in numbers:               # a fragment number seen before: ignored, as libenet does (and the
        return                          # pieces a message holds stay at most its fragment count)
    numbers.add(number)
    try:
        whole = message.add(offset, piece, ctx.frame)
    except OutOfRange as exc:           # the global reassembly budget is spent (reassembly/budget.py)
        _expert(ctx, item, "reassembly", str(exc))
        numbers.discard(number)
        return
    if whole is not None:
        show_message(g, ctx, prefs, item, whole, message.frames(), scope)


def _expert(ctx: Ctx, item: Item | None, kind: str, message: str) -> None:
    if item is not None:                # None: a NULL tree (scan_datagram), no experts
        ctx.expert(item, kind, message)


def fragment_problem(count: int, number: int, total: int, offset: int, length: int) -> str | None:
    """What libenet's receiver rejects (it drops the rest of the datagram); we report it and go on."""
    if count == 0 or count > FRAGMENT_COUNT_MAX:
        return f"Fragment count {count} is outside 1..{FRAGMENT_COUNT_MAX}"
    if number >= count:
        return f"Fragment number {number} is not below the fragment count {count}"
    if total > MESSAGE_MAX:
        return f"Total length {total} exceeds the limit of {MESSAGE_MAX}"
    if total < count:
        return f"Total length {total} is smaller than the fragment count {count}"
    if offset >= total or length > total - offset:
        return f"Fragment {offset}+{length} lies beyond the total length {total}"
    return None


def show_message(g, ctx: Ctx, prefs: dict, item: Item | None, whole: bytes, frames: list[int],
                 scope: dict) -> None:
    if item is None or not shown(ctx, g.reassembled, g.reassembled_frame, g.reassembled_length):
        hand_up(ctx, prefs, whole, 0, len(whole), ctx.new_source("Reassembled ENet", whole), scope)
        return
    label = f"Reassembled from frames {', '.join(map(str, frames))} ({len(whole)} bytes)"
    node = item.add(Item(g.reassembled, None, item.offset, 0, label, True))
    for frame in frames:
        node.add(Item(g.reassembled_frame, frame, item.offset, 0, None, True))
    node.add(Item(g.reassembled_length, len(whole), item.offset, 0, None, True))
    ctx.notes.append(f"[{len(whole)} bytes reassembled]")
    source = ctx.new_source("Reassembled ENet", whole)
    hand_up(ctx, prefs, whole, 0, len(whole), source, scope)
