"""ENet: libenet 1.3.x's reliable transport over UDP (specs/NOTES.md, "ENet"). All multi-byte fields big-endian.

A datagram is a protocol header (peer id, session id, COMPRESSED and SENT_TIME flags in one u16; the sent time
when flagged), an optional CRC-32 (a preference: nothing on the wire announces it), then commands to the end of
the datagram, range-coded as a whole when COMPRESSED is set. The tables below read like the spec; the analysis a
table cannot hold (conversation memory, acknowledgements, fragment reassembly, hand-off of payloads) is in
dissectors/enet_analysis.py, written once in Python and once in lua/rt_enet.lua.
"""
from __future__ import annotations

from ..engine.blocks_bits import BitSplit, Part
from ..engine.context import Ctx
from ..engine.fields import U8, U16BE, U32BE, Binder, Bytes, Packet, Struct
from ..engine.protocol import EXPERTS
from ..engine.rangecoder import RangeCoderError, decompress
from ..engine.tree import CHECKSUM as CHECKSUM_GROUP
from ..engine.tree import ERROR, FieldInfo, Item

COMMAND_NAMES = {
    1: "ACKNOWLEDGE", 2: "CONNECT", 3: "VERIFY_CONNECT", 4: "DISCONNECT", 5: "PING", 6: "SEND_RELIABLE",
    7: "SEND_UNRELIABLE", 8: "SEND_FRAGMENT", 9: "SEND_UNSEQUENCED", 10: "BANDWIDTH_LIMIT",
    11: "THROTTLE_CONFIGURE", 12: "SEND_UNRELIABLE_FRAGMENT",
}
PEER_NONE = 0xFFF           # the peer id before a connection exists
CHANNEL_NONE = 0xFF         # the channel of connection-level commands

HEADER = BitSplit(U16BE("header", "Header", base="HEX"), (
    Part("sent_time_flag", "Sent time present", 0x8000),
    Part("compressed", "Compressed", 0x4000),
    Part("session_id", "Session ID", 0x3000),
    Part("peer_id", "Peer ID", 0x0FFF, base="HEX"),
))
SENT_TIME = U16BE("sent_time", "Sent time")
CHECKSUM = U32BE("checksum", "Checksum", base="HEX")

# Every command starts with these 4 bytes (fields enet.command.*).
COMMAND_HEADER = Struct(
    "command", None,
    BitSplit(U8("code", "Command", base="HEX"), (
        Part("acknowledge", "Acknowledge requested", 0x80),
        Part("unsequenced", "Unsequenced", 0x40),
        Part("type", "Type", 0x0F, values=COMMAND_NAMES),
    )),
    U8("channel", "Channel ID"),
    U16BE("reliable_seq", "Reliable sequence number"),
)

CONNECT_FIELDS = (
    U16BE("outgoing_peer_id", "Outgoing peer ID", base="HEX"),
    U8("incoming_session_id", "Incoming session ID", base="HEX"),
    U8("outgoing_session_id", "Outgoing session ID", base="HEX"),
    U32BE("mtu", "MTU"),
    U32BE("window_size", "Window size"),
    U32BE("channel_count", "Channel count"),
    U32BE("incoming_bandwidth", "Incoming bandwidth"),
    U32BE("outgoing_bandwidth", "Outgoing bandwidth"),
    U32BE("throttle_interval", "Packet throttle interval"),
    U32BE("throttle_acceleration", "Packet throttle acceleration"),
    U32BE("throttle_deceleration", "Packet throttle deceleration"),
    U32BE("connect_id", "Connect ID", base="HEX"),
)

FRAGMENT_FIELDS = (
    U16BE("start_seq", "Start sequence number"),
    U16BE("data_length", "Data length"),
    U32BE("fragment_count", "Fragment count"),
    U32BE("fragment_number", "Fragment number"),
    U32BE("total_length", "Total length"),
    U32BE("fragment_offset", "Fragment offset"),
    Bytes("data", "Fragment data", length="data_length"),
)

# The body of each command type (after the 4-byte command header); sizes as NOTES.md lists them.
COMMANDS = {
    1: Packet("acknowledge", "ACKNOWLEDGE",
              U16BE("received_reliable_seq", "Received reliable sequence number"),
              U16BE("received_sent_time", "Received sent time")),
    2: Packet("connect", "CONNECT", *CONNECT_FIELDS, U32BE("data", "Connect data", base="HEX")),
    3: Packet("verify_connect", "VERIFY_CONNECT", *CONNECT_FIELDS),
    4: Packet("disconnect", "DISCONNECT", U32BE("data", "Disconnect data", base="HEX")),
    5: Packet("ping", "PING"),
    6: Packet("send_reliable", "SEND_RELIABLE",
              U16BE("data_length", "Data length"),
              Bytes("data", "Data", length="data_length")),
    7: Packet("send_unreliable", "SEND_UNRELIABLE",
              U16BE("unreliable_seq", "Unreliable sequence number"),
              U16BE("data_length", "Data length"),
              Bytes("data", "Data", length="data_length")),
    8: Packet("send_fragment", "SEND_FRAGMENT", *FRAGMENT_FIELDS),
    9: Packet("send_unsequenced", "SEND_UNSEQUENCED",
              U16BE("unsequenced_group", "Unsequenced group"),
              U16BE("data_length", "Data length"),
              Bytes("data", "Data", length="data_length")),
    10: Packet("bandwidth_limit", "BANDWIDTH_LIMIT",
               U32BE("incoming_bandwidth", "Incoming bandwidth"),
               U32BE("outgoing_bandwidth", "Outgoing bandwidth")),
    11: Packet("throttle_configure", "THROTTLE_CONFIGURE",
               U32BE("throttle_interval", "Packet throttle interval"),
               U32BE("throttle_acceleration", "Packet throttle acceleration"),
               U32BE("throttle_deceleration", "Packet throttle deceleration")),
    12: Packet("send_unreliable_fragment", "SEND_UNRELIABLE_FRAGMENT", *FRAGMENT_FIELDS),
}

# Fixed sizes including the command header (libenet's commandSizes); data commands add dataLength bytes.
COMMAND_SIZES = {1: 8, 2: 48, 3: 44, 4: 8, 5: 4, 6: 6, 7: 8, 8: 24, 9: 8, 10: 12, 11: 16, 12: 24}
DATA_COMMANDS = {6, 7, 8, 9, 12}        # those whose dataLength is the u16 right before their data
DATA_LENGTH_AT = {6: 4, 7: 6, 8: 6, 9: 6, 12: 6}   # offset of dataLength inside a data command
FRAGMENT_COMMANDS = {8, 12}
MTU_MAX = 4096              # ENET_PROTOCOL_MAXIMUM_MTU: the receive buffer, and the decompressor's output bound
CONNECTION_COMMANDS = {2, 3, 4, 5, 10, 11}   # libenet sends these on channel 0xFF, data commands never


# the per-datagram walk and its analysis (dissectors/enet_analysis.py, which reads this module's tables: imported at
# the first datagram, kept here so that no datagram pays an import statement)
_DATAGRAM: list = [None]


def _datagram():
    from .enet_analysis import dissect_datagram
    _DATAGRAM[0] = dissect_datagram
    return dissect_datagram


def command_walk(data: bytes, pos: int) -> bool:
    """A strict structural check, what a receiver would accept: one or more commands of valid types, each
    complete, data lengths exact, ending exactly at the end of the datagram."""
    n, count = len(data), 0
    while pos < n:
        code = data[pos]
        kind = code & 0x0F
        size = COMMAND_SIZES.get(kind)
        if size is None or pos + size > n or (code & 0x40 and kind != 9) or (code & 0x80 and kind == 1):
            return False
        if (data[pos + 1] == CHANNEL_NONE) != (kind in CONNECTION_COMMANDS) and kind != 1:
            return False
        if kind in DATA_LENGTH_AT:
            at = pos + DATA_LENGTH_AT[kind]
            size += int.from_bytes(data[at:at + 2], "big")
            if pos + size > n:
                return False
        pos += size
        count += 1
    return count > 0


def looks_like_enet(payload: bytes) -> bool:
    """The heuristic: the datagram parses as ENet through its last byte (with or without a checksum). A peer id of
    0xFFF (no connection yet) must carry a CONNECT, as libenet requires."""
    if len(payload) < 2:
        return False
    word = int.from_bytes(payload[:2], "big")
    at = 4 if word & 0x8000 else 2
    for start in (at, at + 4):
        body = payload
        if word & 0x4000:          # range-coded: the commands are what the decoder gives back
            if start >= len(payload):
                continue
            try:
                body = payload[:start] + decompress(payload[start:], MTU_MAX - start)
            except RangeCoderError:
                continue
        if start < len(body) and command_walk(body, start):
            if (word & 0x0FFF) == PEER_NONE and body[start] & 0x0F != 2:
                continue
            return True
    return False


# --- the protocol --------------------------------------------------------------------------------------------------

class ENet:
    """The ENet layer: header, optional checksum, commands to the end (range-decoded first when COMPRESSED).
    Registration: a heuristic on any UDP port. Payloads go up through the tables "enet.connect_data" (the
    CONNECT's data) and "enet.port" (the UDP ports)."""

    name, description = "enet", "ENet"
    ports: dict[str, tuple[int, ...]] = {}
    heuristics = {"udp": looks_like_enet}
    heuristic_claims = True             # once recognised, the UDP conversation is ENet's (Lua: pinfo.conversation)
    type_field = "command.type"         # -z enet,types counts commands by type
    sequence = None                      # reliable sequence numbers are per channel: no datagram sequence
    revision_pref = None

    def __init__(self):
        b = Binder(self.name)
        self.experts = {**EXPERTS, "checksum": (CHECKSUM_GROUP, ERROR)}
        self.info = b.field(self.name, self.description, "protocol")
        self.header = HEADER.bind(b, self.name)
        self.sent_time = SENT_TIME.bind(b, self.name)
        self.checksum = CHECKSUM.bind(b, self.name)
        g = self.generated = _Generated(b)
        self.command_header = COMMAND_HEADER.bind(b, f"{self.name}.command")
        self.commands = {code: p.bind(b, self.name) for code, p in COMMANDS.items()}
        g.command_fields(b)
        self.fields: dict[str, FieldInfo] = b.fields

    def preferences(self) -> dict[str, tuple[str, str, list[str]]]:
        return {
            # nothing on the wire says whether both hosts called enet_host_checksum
            "checksum": ("CRC-32 after the header", "off", ["off", "on"]),
            # auto: by the CONNECT's data, then by UDP port; port: by port only; off: payloads stay data
            "handoff": ("Payload hand-off", "auto", ["auto", "port", "off"]),
            # tshark 4.0 has no Decode As for tables a Lua plugin creates: this is its stand-in there
            "payload": ("Payload protocol", "", []),
        }

    def heuristic_match(self, payload: bytes) -> bool:
        return looks_like_enet(payload)

    @property
    def lua_limits(self) -> dict[str, int]:
        """The limits lua/rt_enet.lua reads from the plugin's LIMITS table: the same values as Python's."""
        from . import enet_analysis as a
        return {"ENET_SENT_LIMIT": a.SENT_LIMIT, "ENET_MESSAGE_LIMIT": a.MESSAGE_LIMIT,
                "ENET_MESSAGE_MAX": a.MESSAGE_MAX, "ENET_FRAGMENT_COUNT_MAX": a.FRAGMENT_COUNT_MAX,
                "ENET_FRAGMENT_LIMIT": a.FRAGMENT_LIMIT, "ENET_ACKED_IN_LIMIT": a.ACKED_IN_LIMIT}

    def dissect(self, ctx: Ctx, prefs: dict):
        return (_DATAGRAM[0] or _datagram())(self, ctx, prefs)

    # --- tests and capture making -----------------------------------------------------------------------------
    def encode(self, values: dict, commands: list[dict], *, compress: bool = False, checksum: bool = False) -> bytes:
        """Wire bytes of one datagram from field values: header values flat (peer_id, session_id, sent_time ...),
        one dict per command (type, channel, reliable_seq, acknowledge, its fields; data_length defaults to the
        data's length). compress: range-code the commands (engine.rangecoder.compress, libenet's coder);
        checksum: put values["checksum"] (0 when missing) after the header."""
        from ..engine.rangecoder import compress as range_compress
        body = bytearray()
        for command in commands:
            command = dict(command)
            if isinstance(command.get("data"), bytes) and "data_length" not in command:
                command["data_length"] = len(command["data"])
            self.command_header.encode(command, body)
            packet = self.commands.get(command.get("type", 0))
            if packet is not None:
                packet.encode(command, body)
        if compress:
            body = bytearray(range_compress(bytes(body)))
        values = {**values, "compressed": int(compress), "sent_time_flag": int("sent_time" in values)}
        out = bytearray()
        self.header.encode(values, out)
        if "sent_time" in values:
            self.sent_time.encode(values, out)
        if checksum:
            self.checksum.encode(values, out)
        return bytes(out + body)

    def decode_values(self, payload: bytes, prefs: dict | None = None) -> tuple[dict, Item]:
        """Decode one datagram on its own (fresh conversation): header values with "commands" (one dict per
        command), and the tree. For tests and scripts."""
        tree = Item(self.info, self.description, 0, len(payload), self.description)
        ctx = Ctx(payload, 0, len(payload), tree, self, {}, "a:1>b:2", 1, [])
        self.dissect(ctx, prefs or {})
        return ctx.scopes[0], tree

    def emit_lua(self, gen, var: str) -> None:
        from .enet_lua import emit_enet
        emit_enet(self, gen, var)


class _Generated:
    """The fields protodump computes (no bytes of their own): conversation memory, acknowledgements, round-trip
    time, decompression, reassembly."""

    def __init__(self, b: Binder):
        f = b.field
        self.checksum_status = f("enet.checksum.status", "Checksum status", "uint8",
                                 values={0: "Bad", 1: "Good", 2: "Unverified"})
        self.connection = f("enet.connection", "Connection", "none")
        self.conn_frame = f("enet.connection.frame", "CONNECT in frame", "uint32")
        self.conn_data = f("enet.connection.connect_data", "Connect data", "uint32", base="HEX")
        self.conn_channels = f("enet.connection.channel_count", "Channel count", "uint32")
        self.conn_mtu = f("enet.connection.mtu", "MTU", "uint32")
        self.compressed_data = f("enet.compressed_data", "Range-coded commands", "bytes")
        self.decompressed_length = f("enet.decompressed_length", "Decompressed length", "uint32")
        self.ratio = f("enet.compression_ratio", "Compression ratio", "double")
        self.data = f("enet.data", "Undecoded data", "bytes")

    def command_fields(self, b: Binder):
        f = b.field
        self.command = f("enet.command", "Command", "none")
        self.acked_frame = f("enet.acknowledge.frame", "Acknowledges frame", "uint32")
        self.rtt = f("enet.acknowledge.rtt", "Round-trip time (ms)", "double")
        self.acked_in = f("enet.acknowledged_in", "Acknowledged in frame", "uint32")   # second pass only
        self.reassembled = f("enet.reassembled", "Reassembled ENet message", "none")
        self.reassembled_frame = f("enet.reassembled.frame", "Fragment in frame", "uint32")
        self.reassembled_length = f("enet.reassembled.length", "Reassembled length", "uint32")
        self.reassembled_in = f("enet.reassembled_in", "Reassembled in frame", "uint32")


PROTOCOL = ENet()
