"""-z follow,PROTO,MODE,STREAM[,KEY=VALUE...] for the game streams: the messages a game layer carries, in order,
per direction, in tshark's follow modes (ascii, hex, raw, yaml: the message bytes, as follow,udp shows datagrams)
or "decoded" (each message's summary and detail tree).

  enet       the packets ENet delivers to the application, per channel: SEND_RELIABLE / UNRELIABLE / UNSEQUENCED
             data, and fragmented packets once reassembled (select one channel with channel=N)
  iceball    the Iceball message stream, over ENet or over TCP (each message once)
  rutentoy   the reassembled messages (select with cookie=N and/or channel=N) and textures (kind=texture)
  websocket  the messages, unmasked, reassembled and decompressed (permessage-deflate)
  freeblox   the Freeblox messages (decompressed)

STREAM is the number of the UDP, TCP or SCTP conversation (udp.stream / tcp.stream: whichever carries the
protocol first) or ADDR:PORT,ADDR:PORT. The messages come from what the dissectors built (layers, reassembled and
decompressed buffers), never decoded again.
"""
from __future__ import annotations

from .follow import MODES, Follow
from .stats_base import register
from .tree_walk import child, value_name


def layer_bytes(packet, item) -> bytes:
    """The bytes an item covers, in its own data source."""
    sources = packet.sources
    data = sources[item.source].data if item.source < len(sources) else packet.frame.data
    return bytes(data[item.offset:item.offset + (item.length or 0)])


def _source_under(packet, node, name: str) -> bytes | None:
    """The data of the first buffer named `name` an item under `node` points into."""
    sources = packet.sources
    for it in node.walk():
        if 0 < it.source < len(sources) and sources[it.source].name == name:
            return bytes(sources[it.source].data)
    return None


ENET_DATA = {6: "enet.send_reliable.data", 7: "enet.send_unreliable.data", 9: "enet.send_unsequenced.data"}


def enet_messages(packet):
    reassembled = iter([s.data for s in packet.sources if s.name == "Reassembled ENet"])
    for layer in packet.games:
        if layer.proto != "enet":
            continue
        for cmd in layer.item.children or ():
            if cmd.field is None or cmd.field.abbrev != "enet.command":
                continue
            kind, channel = cmd.find("enet.command.type"), child(cmd, "enet.command.channel")
            if kind is None or channel is None:
                continue
            data = None
            if kind.value in ENET_DATA:
                item = child(cmd, ENET_DATA[kind.value])
                data = bytes(item.value) if item is not None and isinstance(item.value, (bytes, bytearray)) else None
            elif child(cmd, "enet.reassembled") is not None:
                data = next(reassembled, None)
            if data is not None:
                yield {"channel": channel.value}, f"channel {channel.value} {value_name(kind)}", data, cmd


def layer_messages(proto: str):
    def messages(packet):
        for layer in packet.games:
            if layer.proto == proto:
                kind = next((c for c in layer.item.children or () if c.field is not None
                             and c.field.abbrev in (f"{proto}.id", f"{proto}.lua_id")), None)
                label = value_name(kind) if kind is not None else proto
                yield {"type": label}, label, layer_bytes(packet, layer.item), layer.item
    return messages


def rutentoy_messages(packet):
    for layer in packet.games:
        if layer.proto != "rutentoy":
            continue
        cookie = channel = None
        for node in layer.item.walk():
            f = node.field
            if f is None:
                continue
            if f.abbrev in ("rutentoy.message.cookie", "rutentoy.texture.cookie"):
                cookie = node.value
            elif f.abbrev == "rutentoy.message.channel":
                channel = node.value
            elif f.abbrev == "rutentoy.message.reassembled":
                data = _source_under(packet, node, "Reassembled message")
                if data is not None:
                    yield ({"kind": "message", "cookie": cookie, "channel": channel},
                           f"message cookie={cookie} channel={channel}", data, layer.item)
            elif f.abbrev == "rutentoy.texture.image":
                data = _source_under(packet, node, "Reassembled image")
                if data is not None:
                    yield {"kind": "texture", "cookie": cookie}, f"texture cookie={cookie}", data, layer.item


def websocket_messages(packet):
    games = packet.games
    for n, layer in enumerate(games):
        if layer.proto != "websocket":
            continue
        opcode = child(layer.item, "websocket.opcode")
        label = value_name(opcode) if opcode is not None else "websocket"
        upper = games[n + 1] if n + 1 < len(games) and games[n + 1].proto != "websocket" else None
        if upper is not None:                        # the message as handed up: unmasked, decompressed
            yield {"opcode": label}, label, layer_bytes(packet, upper.item), layer.item
            continue
        payload = child(layer.item, "websocket.payload")
        if payload is None:
            continue
        data = layer_bytes(packet, payload)
        key = child(layer.item, "websocket.masking_key")
        unmasked = _source_under(packet, layer.item, "Unmasked data")
        if unmasked is not None:
            data = unmasked
        elif key is not None and payload.source == 0:
            mask = bytes(key.value)
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        yield {"opcode": label}, label, data, layer.item


def selects(value, wanted: str) -> bool:
    """KEY=VALUE of a follow: numbers in any base (cookie=0x64 or cookie=100), else the text."""
    if isinstance(value, int):
        try:
            return value == int(wanted, 0)
        except ValueError:
            return False
    return str(value) == wanted


class FollowGame(Follow):
    """Follow the messages of one game protocol: one record per message (keys select some)."""

    modes = (*MODES, "decoded")
    transports = ("udp", "tcp", "sctp")
    messages = None

    def __init__(self, args):
        select = [a for a in args if "=" in a and ":" not in a]
        super().__init__([a for a in args if a not in select])
        self.select = {}
        for a in select:
            k, _, v = a.partition("=")
            self.select[k] = v

    def accepts(self, packet):
        return any(layer.proto == self.proto for layer in packet.games)

    def filter_text(self):
        return super().filter_text() + f" and {self.proto}" + "".join(
            f" [{k}={v}]" for k, v in self.select.items())

    def add(self, packet):
        node = self.in_stream(packet)
        if node is None or not packet.games:
            return
        for keys, label, data, tree in self.messages(packet):
            if all(selects(keys.get(k), v) for k, v in self.select.items()):
                self.record(packet, node, data, label=label, **({"tree": tree} if self.mode == "decoded" else {}))


def register_game_follows() -> None:
    finders = {"enet": enet_messages, "iceball": layer_messages("iceball"), "rutentoy": rutentoy_messages,
               "websocket": websocket_messages, "freeblox": layer_messages("freeblox")}
    for proto, finder in finders.items():
        register(type(f"Follow{proto.title()}", (FollowGame,), {
            "name": f"follow,{proto}", "proto": proto, "messages": staticmethod(finder)}))


register_game_follows()
