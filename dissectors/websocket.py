"""WebSocket (RFC 6455) over a TCP stream, as a layer any protocol can sit on.

The stream protocol of the connection (engine/streams.py): its first PDUs are the HTTP upgrade (ws_handshake.py,
shown as an `http` layer); after a 101 answer every PDU is one frame, shown as a `websocket` layer with tshark's
field names. Frames are unmasked; messages fragmented over continuation frames are reassembled; with
permessage-deflate (RFC 7692) compressed messages are inflated (raw DEFLATE + 00 00 ff ff, one context per
direction kept across messages unless `<side>_no_context_takeover` was negotiated). Each complete data message is
handed up with `ctx.handoff("ws.port", (server port,), ...)`: decode-as `-d ws.port==P,proto`, registrations
`ports["ws.port"]`, then the heuristic list "ws"; nobody takes it: a `data` layer, as tshark shows it.

Measured in tshark 4.0.17 (docs/tshark-formats.md 8): its ws dissector delivers unfragmented messages unmasked and
inflated in the frame that completes them; a fragmented message is only reassembled and delivered when its last
frame has a payload, and then without inflating it. The websocket layer shows what tshark's shows (its fragment
tree, its "Decompression failed", the bytes it delivers as `data` when nobody takes them); the game layers above
show every message, as the generated plugin does (lua/rt_websocket.lua assembles the messages itself): a message
tshark does not deliver goes to the game at the end of the frame, as the plugin's postdissector shows it.

protodump's own checks of the frames (RSV bits, opcode, masking, control frame size, a continuation without a
message): tshark's dissector makes none, and a Lua plugin cannot add items inside Wireshark's websocket tree, so
they are behind the preference `-o websocket.checks:TRUE` (default FALSE: the frame is tshark's).
"""
from __future__ import annotations

import zlib

from ..engine.fields import Binder
from ..engine.inflate import InflateError, deflate_walk, zlib_stands
from ..engine.protocol import EXPERTS
from ..engine.strings import TRAILING_STRAY, format_text, stray_after_nul
from ..engine.tree import NOTE, PROTOCOL, UNDECODED, WARN, bit_picture, DataSource, ExpertInfo, Item, TextItem
from ..reassembly.budget import INFLATE_COST
from . import ws_handshake

OPCODES = {0: "Continuation", 1: "Text", 2: "Binary", 8: "Connection Close", 9: "Ping", 10: "Pong"}
CLOSE_CODES = {1000: "Normal Closure", 1001: "Going Away", 1002: "Protocol error", 1003: "Unsupported Data",
               1004: "---Reserved----", 1005: "No Status Rcvd", 1006: "Abnormal Closure",
               1007: "Invalid frame payload data", 1008: "Policy Violation", 1009: "Message Too Big",
               1010: "Mandatory Ext.", 1011: "Internal Server", 1015: "TLS handshake"}
MESSAGE_LIMIT = 16 << 20      # a fragmented message or an inflated one larger than this is not decoded
FRAGMENT_LIMIT = 4096         # frames of one fragmented message
# the longest frame the stream is framed past (a header of up to 14 bytes and a payload up to a message's limit):
# a server sends a big asset in one frame (Node's ws does), which tshark's tcp_dissect_pdus reassembles whole; a
# longer one stops the direction, as a PDU over MAX_PDU does for the other stream protocols
MAX_FRAME = MESSAGE_LIMIT + 14
EARLY = "ws_early"                 # a conversation's key for what a -2 second pass shows (cli/two_pass_opts.py)
SECOND_PASS = "_second_pass.ws_early"      # the prefs key under which the second pass gets it
EARLY_LIMIT = 1 << 16              # such messages a conversation records (later ones show as in one pass)
FAILED = "Decompression failed"    # tshark's expert (ei_ws_decompression_failed) for a message zlib cannot inflate
UNKNOWN = ("Dissector for Websocket Opcode ({}) code not implemented, Contact Wireshark developers if you want this"
           " supported")       # tshark's expert (ei_ws_payload_unknown) on a control frame of an unknown opcode


class _Ended:
    """tshark's own context of a direction (context takeover) once a final deflate block ended its stream: zlib
    answers Z_STREAM_END at once, so packet-websocket.c takes every later message as inflated to nothing and hands
    it up as it came, with no "Decompression failed" (a sender may flush with a final block: RFC 7692 7.2.3.4)."""

    @staticmethod
    def decompress(data: bytes, max_length: int = 0) -> bytes:
        return b""


ENDED = _Ended()


def frame_length(data: bytes, pos: int) -> int:
    """pdu_length of one frame: header (2, +2/+8 extended length, +4 masking key) + payload; 0 = need more.
    As get_websocket_frame_length, the length is known once its own bytes are there (the masking key need not
    be: a length read from noise takes effect a segment earlier)."""
    n = len(data) - pos
    if n < 2:
        return 0
    b1 = data[pos + 1]
    size7 = b1 & 0x7F
    head = header_length(b1)
    if n < (4 if size7 == 126 else 10 if size7 == 127 else 2):
        return 0
    if size7 == 126:
        size = int.from_bytes(data[pos + 2:pos + 4], "big")
    elif size7 == 127:
        size = int.from_bytes(data[pos + 2:pos + 10], "big") & 0xFFFFFFFF    # tshark keeps 32 bits of it
    else:
        size = size7
    return head + size


def header_length(b1: int) -> int:
    """A frame's header length from its second byte: 2, +2/+8 extended length, +4 masking key."""
    size7 = b1 & 0x7F
    return 2 + (2 if size7 == 126 else 8 if size7 == 127 else 0) + (4 if b1 & 0x80 else 0)


def later_payloads(data: bytes, pos: int) -> list[bytes] | None:
    """The payloads of the continuation frames from `pos` up to the final one (control frames between them
    skipped), unmasked; None if the data does not hold them all (tshark -2's early message: WebSocket.shown_early)."""
    out: list[bytes] = []
    while len(out) < FRAGMENT_LIMIT:
        n = frame_length(data, pos)
        if n == 0 or pos + n > len(data):
            return None
        b0, b1 = data[pos], data[pos + 1]
        opcode, head = b0 & 0x0F, header_length(b1)
        if opcode < 8:
            if opcode:                   # a new message: not this one's frames
                return None
            payload = data[pos + head:pos + n]
            out.append(unmask(payload, data[pos + head - 4:pos + head]) if b1 & 0x80 else payload)
            if b0 & 0x80:
                return out
        pos += n
    return None


def own_layer(ctx):
    """The frame's layer this PDU is dissected into (its top item is ctx.tree), or None outside a frame's stack."""
    layers = ctx.stack.layers if ctx.stack is not None else None
    return layers[-1] if layers and layers[-1].item is ctx.tree else None


def unmask(payload: bytes, key: bytes) -> bytes:
    """XOR with the 4-byte key, done as one big-integer XOR (fast for 100 KB messages)."""
    if not payload:
        return payload
    n = len(payload)
    stream = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(stream, "big")).to_bytes(n, "big")


def encode_frame(opcode: int, payload: bytes, *, fin=True, rsv=0, mask: bytes | None = None,
                 length_bits: int | None = None) -> bytes:
    """One frame's wire bytes (tests and crafted captures). length_bits 7/16/64 forces the length form."""
    n = len(payload)
    bits = length_bits or (7 if n < 126 else 16 if n < 65536 else 64)
    out = bytearray([(0x80 if fin else 0) | (rsv << 4) | opcode])
    m = 0x80 if mask else 0
    if bits == 7:
        out.append(m | n)
    elif bits == 16:
        out += bytes([m | 126]) + n.to_bytes(2, "big")
    else:
        out += bytes([m | 127]) + n.to_bytes(8, "big")
    if mask:
        out += mask
        payload = unmask(payload, mask)
    return bytes(out + payload)


def _stored_head(size: int) -> bytes:
    """The header of a DEFLATE stored block of `size` bytes (at most 65535), not final: its bytes follow it."""
    return b"\0" + size.to_bytes(2, "little") + (65535 - size).to_bytes(2, "little")


_ZERO_BLOCK = _stored_head(65535) + bytes(65535)


class LazySource(DataSource):
    """A data source joined from parts only when read (-x): the plugin's inflate buffers, up to a few MB each,
    that nothing but the hex dump shows."""

    def __init__(self, name: str, parts: tuple):
        self.name, self._parts, self._data = name, parts, None

    @property
    def data(self) -> bytes:
        if self._data is None:
            self._data = b"".join(self._parts)
            self._parts = ()
        return self._data


class Inflater:
    """permessage-deflate for one direction: one raw-DEFLATE context kept across messages (context takeover),
    or a fresh one per message (`fresh`). Output bounded by MESSAGE_LIMIT.

    `last`: the two buffers the plugin's own inflate (lua/rt_websocket.lua rt.ws_inflate) adds in tshark for the
    message just inflated, as parts: `Compressed message` (a stored block of the last 32 KiB of output, the
    message, 00 00 ff ff; 16 stored blocks of zeros before them for a message that may inflate past the limit)
    and `Decompressed payload` (the zeros, the window and the message's output); None when it adds none."""

    COST = INFLATE_COST   # charged to the conversation's state budget (Ctx.charge_state; the plugin's
                          # rt.state_charge), given back when the conversation is freed
    WINDOW = 32768        # the deflate window the plugin keeps (WS_WINDOW)
    RATIO = 1032          # deflate's largest expansion (WS_RATIO)
    PAD_BLOCKS = 16       # the plugin's padding (WS_PAD): 16 stored blocks of 65535 zeros

    def __init__(self, fresh: bool):
        self.fresh = fresh
        self.z = None
        self.broken = False
        self.window = b""
        # a damaged message that ended inside a block: its input (tail included) and output, which the plugin
        # keeps and inflates again in front of the next message (lua/rt_websocket.lua z.carry, z.done)
        self.carry, self.carry_out = b"", b""
        self.last = None
        # tshark 4.0's own context (packet-websocket.c), only while it is out of step with ours: it inflates the
        # one-frame messages only, so after a fragmented one it goes on from another history (None: in step)
        self.wireshark = None
        self.wireshark_out = None     # what it made of the message just inflated (None: it failed)
        self.wireshark_ended = False  # it stood at the end of a stream before the message just inflated (ENDED)

    def inflate(self, data: bytes, single: bool = True) -> tuple[bytes | None, str | None]:
        self.last = None
        self.wireshark_out = None
        self.wireshark_ended = self.wireshark is ENDED
        if not self.fresh and not self.broken:
            if not single and self.wireshark is None:
                self.wireshark = self.z.copy() if self.z is not None else zlib.decompressobj(-15)
            elif single and self.wireshark is not None:
                try:
                    self.wireshark_out = self.wireshark.decompress(data + b"\x00\x00\xff\xff", MESSAGE_LIMIT + 1)
                except zlib.error:
                    self.wireshark = zlib.decompressobj(-15)
        return self._inflate(data, single)

    def _inflate(self, data: bytes, single: bool) -> tuple[bytes | None, str | None]:
        """The decisions: what a message inflates to, or why not, and where the stream then stands. What is kept
        of the output goes through the hooks below (analysis/fused_ws.LeanInflater keeps lengths only)."""
        if self.broken:                     # tshark 4.0 keeps the failed context: every later message fails too
            return None, f"{FAILED}: the shared context was lost earlier"
        if self.z is None or self.fresh:
            self.z = zlib.decompressobj(-15)
            self.carry = b""
            self._restart()
        z = self.z
        message = data + b"\x00\x00\xff\xff"      # (the tail the sender took off)
        try:
            out = z.decompress(message, MESSAGE_LIMIT + 1)
        except zlib.error as exc:
            self.z = None
            self.broken = not self.fresh    # with context takeover the stream cannot recover (zlib's BAD state)
            return None, f"{FAILED}: {exc}"
        over = f"Decompressed message exceeds the limit of {MESSAGE_LIMIT} bytes"
        if len(out) > MESSAGE_LIMIT or z.unconsumed_tail:
            self.z = None
            return None, over
        carry = self.carry
        self._shown(data, out, single)
        stands = self.stands(z, carry, message)
        if stands is None:
            return None, FAILED
        if stands == "clean":
            self._advance(out)
            self.carry = b""
        elif stands == "inside" and len(carry) + len(message) > MESSAGE_LIMIT:     # the plugin starts afresh
            self.z = None
            return None, over
        elif stands == "inside":            # zlib goes on with the next message's bytes
            self.carry = carry + message
            self._carry(out)
        return out, None

    # --- what is kept of the output: the window's bytes and the carried output (the plugin's buffers need them) ---
    def _restart(self) -> None:
        self.window, self.carry_out = b"", b""

    def _shown(self, data: bytes, out: bytes, single: bool) -> None:
        """The plugin's two buffers for this message (`last`), and tshark's own output when in step."""
        window, carry, carry_out = self.window, self.carry, self.carry_out
        if single and self.wireshark is None:
            self.wireshark_out = out
        if out or carry_out:        # the plugin inflates the carried input and the message from its window
            pad, zeros = b"", b""        # (the window's 32 KiB stay a part of their own: joined only for -x)
            if (len(carry) + len(data) + 4) * self.RATIO > MESSAGE_LIMIT:
                zeros = bytes(self.PAD_BLOCKS * 65535)
                pad = _ZERO_BLOCK * self.PAD_BLOCKS
            self.last = ((pad, _stored_head(len(window)), window, carry, data, b"\x00\x00\xff\xff"),
                         (zeros, window, carry_out, out))

    def _carried_out(self) -> int:
        return len(self.carry_out)

    def _window_len(self) -> int:
        return len(self.window)

    def _advance(self, out: bytes) -> None:
        """Between two blocks: the carried output and the message's join the window."""
        self.window = (self.window + self.carry_out + out)[-self.WINDOW:]
        self.carry_out = b""

    def _carry(self, out: bytes) -> None:
        """Inside a block: the message's output is carried to the next message."""
        self.carry_out += out

    def stands(self, z, carry: bytes, message: bytes) -> str | None:
        """Where the stream stands after a message (`carry`: the input carried from before it; `message`: the
        message and its tail), as the plugin finds it (rt.deflate_walk): "final" after a final block (the next
        message starts a new stream: the context goes), "clean" between two blocks on a byte boundary, "inside"
        a block; None when the walk refuses what zlib took (the plugin fails it, never seen: the context is
        lost). zlib's own state answers the common case (engine.inflate.zlib_stands); the walk the rest."""
        stands = zlib_stands(z)
        if stands is None:
            try:
                _, _, ended, clean = deflate_walk(carry + message, 0, MESSAGE_LIMIT + self._carried_out(),
                                                  self._window_len(), self.WINDOW, True)
            except InflateError:
                self.z = None
                self.broken = not self.fresh
                return None
            stands = "final" if ended == "final" else "clean" if clean else "inside"
        if stands == "final":
            self.z = None
            if not self.fresh and self.wireshark is None:     # tshark's context, in step, ends with ours
                self.wireshark = ENDED
        return stands

    def add_sources(self, ctx) -> None:
        """The plugin's two buffers for the message just inflated (tshark's -x lists them)."""
        if self.last is not None:
            ctx.sources.append(LazySource("Compressed message", self.last[0]))
            ctx.sources.append(LazySource("Decompressed payload", self.last[1]))
            self.last = None


class WebSocket:
    """The stream protocol: HTTP upgrade, then frames; messages handed to the "ws" tables."""

    name, description = "websocket", "WebSocket"
    type_field = "opcode"          # -z websocket,types counts frames by opcode
    sequence = None
    revision_pref = None
    lua = False                    # the plugin relies on Wireshark's own http and websocket dissectors
    lua_parity = False             # ... so tests/test_parity.py does not compare this layer
    info_afresh = True             # tshark's sets the Info column afresh at each frame: a segment shows its last
    listed_after = ("http",)       # Wireshark's websocket runs under http: frame.protocols "...:tcp:http:websocket"
    column_names = {"http": "HTTP", "websocket": "WebSocket"}     # tshark's Protocol column for these layers
    # the limits lua/rt_websocket.lua reads from the plugin's LIMITS table (its message assembly for Freeblox)
    lua_limits = {"WS_MESSAGE_LIMIT": MESSAGE_LIMIT, "WS_FRAGMENT_LIMIT": FRAGMENT_LIMIT, "WS_MAX_FRAME": MAX_FRAME}
    max_pdu = MAX_FRAME            # engine/streams.py: the longest PDU this protocol's stream is framed past

    def __init__(self):
        b = Binder("websocket")
        # tshark's own for a message that does not inflate (ei_ws_decompression_failed) and for the payload of an
        # unknown control opcode (ei_ws_payload_unknown), beside protodump's
        self.experts = {**EXPERTS, "decompression.failed.expert": (PROTOCOL, WARN),
                        "payload.unknown.expert": (UNDECODED, NOTE)}
        self.info = b.field("websocket", "WebSocket", "protocol")
        u8 = dict(bits=8)
        self.f = {
            "fin": b.field("websocket.fin", "Fin", "bool", mask=0x80, **u8),
            "rsv": b.field("websocket.rsv", "Reserved", "uint8", base="HEX", mask=0x70),
            "pmc": b.field("websocket.pmc", "Per-Message Compressed", "bool", mask=0x40, **u8),
            "opcode": b.field("websocket.opcode", "Opcode", "uint8", mask=0x0F, values=OPCODES),
            "mask": b.field("websocket.mask", "Mask", "bool", mask=0x80, **u8),
            "len7": b.field("websocket.payload_length", "Payload length", "uint8", mask=0x7F),
            "len16": b.field("websocket.payload_length_ext_16", "Extended Payload length (16 bits)", "uint16"),
            "len64": b.field("websocket.payload_length_ext_64", "Extended Payload length (64 bits)", "uint64"),
            "key": b.field("websocket.masking_key", "Masking-Key", "bytes"),
            "masked": b.field("websocket.masked_payload", "Masked payload", "none"),
            "payload": b.field("websocket.payload", "Payload", "none"),
            "continue": b.field("websocket.payload.continue", "Continue", "bytes"),
            "text": b.field("websocket.payload.text", "Text", "string"),
            "close": b.field("websocket.payload.close", "Close", "none"),
            "status": b.field("websocket.payload.close.status_code", "Status code", "uint16", values=CLOSE_CODES),
            "reason": b.field("websocket.payload.close.reason", "Reason", "string"),
            "ping": b.field("websocket.payload.ping", "Ping", "bytes"),
            "pong": b.field("websocket.payload.pong", "Pong", "bytes"),
            "unknown": b.field("websocket.payload.unknown", "Unknown", "bytes"),
            "fragments": b.field("websocket.fragments", "Reassembled websocket Fragments", "none"),
            "fragment": b.field("websocket.fragment", "Websocket Fragment", "uint32"),
            "frag_count": b.field("websocket.fragment.count", "Fragment count", "uint32"),
            "reassembled": b.field("websocket.reassembled.length", "Reassembled websocket Payload length", "uint32"),
        }
        self.data_info = b.field("websocket.data", "Undecoded data", "bytes")
        self.http = ws_handshake.register(b)
        self.fields = b.fields
        self.ports = {"tcp.port": ()}
        self.heuristics = {"tcp": self.upgrade_match}

    CHECKS = "websocket.checks"

    def preferences(self) -> dict:
        boolean = ["TRUE", "FALSE", "true", "false"]
        # tshark's own websocket pref (default TRUE): inflate permessage-deflate messages before handing them up;
        # then protodump's own (tshark has no such preference, and the plugin cannot place these items)
        return {"decompress": ("Decompress permessage-deflate messages", "TRUE", boolean),
                "checks": ("protodump's own checks of the frames (RSV bits, opcode, masking, control frames, "
                           "continuations), which tshark's websocket dissector does not make", "FALSE", boolean)}

    def check(self, ctx, item, kind: str, message: str) -> None:
        """One of protodump's own expert infos, shown only with -o websocket.checks:TRUE."""
        if ctx.conv.get("checks"):
            ctx.expert(item, kind, message)

    @staticmethod
    def upgrade_match(payload: bytes) -> bool:
        """A payload tshark's HTTP takes as a request (its TCP heuristic, then the request line: a damaged one is
        no HTTP, and then no WebSocket follows) that mentions WebSocket (tshark needs no Upgrade header in the
        request, only in the 101 answer; protodump leaves other HTTP alone)."""
        line = ws_handshake.first_line(payload[:ws_handshake.HEAD_LIMIT])
        return (line is not None and ws_handshake.is_http_start(payload) and ws_handshake.is_request_line(line)
                and b"websocket" in payload[:ws_handshake.HEAD_LIMIT].lower())

    # --- framing ----------------------------------------------------------------------------------------------
    def pdu_length(self, data: bytes, pos: int, conv: dict, direction: str, prefs: dict) -> int:
        if conv.get("upgraded"):
            return frame_length(data, pos)
        return ws_handshake.head_length(data, pos)

    # --- one PDU ----------------------------------------------------------------------------------------------
    def dissect(self, ctx, prefs):
        if not ctx.conv.get("upgraded"):
            self.become_http(ctx)
            if not ws_handshake.starts_message(ctx.data, ctx.pos):
                return self.http_continuation(ctx)
            return ws_handshake.dissect_http(ctx, self.http, ctx.conv, prefs.get(ws_handshake.SECOND_PASS))
        ctx.conv["decompress"] = prefs.get("websocket.decompress", "TRUE").upper() == "TRUE"
        ctx.conv["learnt_early"] = prefs.get(SECOND_PASS)
        ctx.conv["checks"] = prefs.get(self.CHECKS, "FALSE").upper() == "TRUE"
        return self.frame(ctx)

    def become_http(self, ctx) -> None:
        """This PDU is the HTTP upgrade: its layer is an `http` one (as tshark shows it)."""
        ctx.tree.field, ctx.tree.value, ctx.tree.label = self.http["http"], None, "Hypertext Transfer Protocol"
        layer = own_layer(ctx)
        if layer is not None:
            layer.proto = "http"

    @staticmethod
    def http_continuation(ctx) -> str:
        """Bytes of a connection not (yet) upgraded that start no HTTP message (WebSocket frames whose 101 answer
        is not in the capture: a capture of the client's side only, a lost answer): tshark's HTTP shows them as a
        "Continuation", a data item in its tree."""
        item = ctx.tree.add(Item(DATA.info, None, ctx.pos, ctx.end - ctx.pos, None, False, ctx.source))
        DATA.fill(item, ctx)
        layer = own_layer(ctx)
        if layer is not None:
            layer.nested = ("data",)
        return "Continuation"

    def frame(self, ctx) -> str:
        """One frame: its header fields, the payload unmasked, then a control frame's content or the message."""
        data, pos, src, tree = ctx.data, ctx.pos, ctx.source, ctx.tree
        self.pdu_size(ctx)
        b0, b1 = data[pos], data[pos + 1]
        fin, rsv, opcode, masked = b0 & 0x80, (b0 >> 4) & 7, b0 & 0x0F, b1 & 0x80
        deflate = ctx.conv.get("deflate")
        at, size, key, rsv_item, op_item = self.header(ctx, b0, b1, deflate is not None)
        tree.length = at - pos           # tshark's websocket item spans the frame's header only
        raw = data[at:ctx.end]
        payload = unmask(raw, key) if key else raw
        if key and raw:       # a masked payload: its items are in a buffer of its own, as tshark's tvb_unmasked
            tree.add(Item(self.f["masked"], None, at, len(raw), None, False, src))
            psrc, base = self.unmasked_source(ctx, payload), 0
        else:
            psrc, base = src, at
        # tshark shows no payload items for an empty payload; experts then go on the frame's item
        pl = tree.add(Item(self.f["payload"], None, base, len(raw), None, False, psrc)) if raw else tree
        self.check_header(ctx, rsv_item, op_item, rsv, opcode, fin, masked, size, deflate)
        # tshark 4.0's columns, spaces included: " %s" opcode, " [FIN]" or "[FRAGMENT] ", " [MASKED]" or " "
        info = f"WebSocket {OPCODES.get(opcode, 'Unknown Opcode')}{' [FIN]' if fin else '[FRAGMENT] '}" \
               f"{' [MASKED]' if masked else ' '}"
        if opcode >= 8:
            if opcode == 8:
                self.closing(ctx)
            if raw:
                self.control(ctx, pl, opcode, payload, base, psrc)
            return info
        self.data_frame(ctx, pl, opcode, fin, rsv, payload, at, (base, psrc, key is None), info)
        return info

    @staticmethod
    def closing(ctx) -> None:
        """A Close frame: once both sides have sent one (RFC 6455's closing handshake) the conversation is over
        and its state is freed shortly after (engine.lifetime; the plugin's twin is in rt.ws_messages)."""
        sides = ctx.conv.setdefault("closed", set())
        sides.add(ctx.direction)
        if len(sides) == 2:
            ctx.end_conversation()

    @staticmethod
    def pdu_size(ctx) -> None:
        """tshark frames websocket with tcp_dissect_pdus, which notes each PDU's size in the TCP layer: recorded
        on the frame's standard decode."""
        d = ctx.stack.d if ctx.stack is not None else None
        if d is not None and d.transport == "tcp":
            size = ctx.end - ctx.pos        # a PDU in a reassembled buffer: its place there too
            d.pdu_sizes = [*(d.pdu_sizes or ()), (size, ctx.source, ctx.pos) if ctx.source else size]

    def header(self, ctx, b0: int, b1: int, deflate: bool):
        """The header items (tshark's fields and order); returns (payload offset, length, key, rsv and opcode
        items)."""
        f, tree, pos, src, data = self.f, ctx.tree, ctx.pos, ctx.source, ctx.data
        tree.add(Item(f["fin"], b0, pos, 1, None, False, src))
        rsv_item = tree.add(Item(f["rsv"], (b0 >> 4) & 7, pos, 1, None, False, src))
        if deflate:
            tree.add(Item(f["pmc"], b0, pos, 1, None, False, src))
        op_item = tree.add(Item(f["opcode"], b0 & 0x0F, pos, 1, None, False, src))
        tree.add(Item(f["mask"], b1, pos + 1, 1, None, False, src))
        n7 = b1 & 0x7F
        extended = {126: " Extended Payload Length (16 bits)", 127: " Extended Payload Length (64 bits)"}.get(n7, "")
        tree.add(Item(f["len7"], n7, pos + 1, 1, f"{bit_picture(b1, 0x7F, 8)} = Payload length: {n7}{extended}",
                      False, src))
        at, size = pos + 2, b1 & 0x7F
        if size in (126, 127):
            width = 2 if size == 126 else 8
            size = int.from_bytes(data[at:at + width], "big")
            tree.add(Item(f["len16" if width == 2 else "len64"], size, at, width, None, False, src))
            at += width
        key = None
        if b1 & 0x80:
            key = data[at:at + 4]
            tree.add(Item(f["key"], key, at, 4, None, False, src))
            at += 4
        return at, size, key, rsv_item, op_item

    def check_header(self, ctx, rsv_item, op_item, rsv, opcode, fin, masked, size, deflate) -> None:
        if not ctx.conv.get("checks"):
            return
        allowed = 4 if deflate is not None and opcode in (1, 2) else 0
        if rsv & ~allowed:
            ctx.expert(rsv_item, "unexpected", f"Reserved bits 0x{rsv:x} set without a negotiated extension")
        if opcode not in OPCODES:
            ctx.expert(op_item, "undecoded", f"Unknown opcode {opcode}")
        if opcode >= 8 and (not fin or size > 125):
            ctx.expert(op_item, "malformed", "A control frame must be final and carry at most 125 bytes")
        from_client = ctx.direction == ctx.conv.get("client")
        if bool(masked) != from_client and "client" in ctx.conv:
            ctx.expert(op_item, "unexpected", "Frame from the client not masked" if from_client
                       else "Frame from the server masked")

    def control(self, ctx, pl, opcode, payload, base, src) -> None:
        """Close (status code and reason), ping, pong: shown in the payload item (payload at `base` of `src`)."""
        f = self.f
        if opcode == 8:
            close = pl.add(Item(f["close"], None, base, len(payload), None, False, src))
            if len(payload) >= 2:
                close.add(Item(f["status"], int.from_bytes(payload[:2], "big"), base, 2, None, False, src))
            if len(payload) > 2:
                reason = close.add(Item(f["reason"], payload[2:].decode("utf-8", "replace"), base + 2,
                                        len(payload) - 2, None, False, src))
                if stray_after_nul(payload[2:]):        # the expert Wireshark adds by itself to such a string item
                    reason.expert(ExpertInfo(TRAILING_STRAY, UNDECODED, WARN, "Trailing stray characters"))
            if len(payload) == 1:
                self.check(ctx, close, "malformed", "A close payload needs a 2-byte status code")
        elif opcode in (9, 10):
            pl.add(Item(f["ping" if opcode == 9 else "pong"], payload, base, len(payload), None, False, src))
        else:
            unknown = pl.add(Item(f["unknown"], payload, base, len(payload), None, False, src))
            ctx.expert(unknown, "payload.unknown.expert", UNKNOWN.format(opcode))

    @staticmethod
    def unmasked_source(ctx, payload: bytes) -> int:
        return ctx.new_source("Unmasked data", payload)

    # --- messages ------------------------------------------------------------------------------------------------
    def data_frame(self, ctx, pl, opcode, fin, rsv, payload, at, where, info) -> None:
        """A data frame's payload into its direction's message; `at`: its offset in the frame; `where`: (offset, data
        source, plain) of its unmasked bytes (plain: the frame was not masked, they are the frame's own)."""
        base, psrc, _ = where
        # what tshark's own dissector hands up here (its reassembly, not the plugin's: they part on a stream that
        # breaks the rules, such as one read from the middle of a frame after a lost segment)
        call = self.wireshark_call(ctx, opcode, fin, payload) if ctx.conv.get("deflate") is None else False
        states = ctx.conv.setdefault("messages", {})
        state = states.get(ctx.direction)
        if opcode == 0:
            if state is None:       # tshark 4.0 takes it as a whole message of its own: so do we
                self.check(ctx, pl, "unexpected", "Continuation frame without a message in progress")
                state = states[ctx.direction] = {"opcode": 2, "compressed": False, "parts": [], "size": 0,
                                                 "frames": [], "calls": []}
        else:
            if state is not None:
                self.check(ctx, pl, "unexpected", "New message before the previous one was finished: it is dropped")
            state = states[ctx.direction] = {"opcode": opcode, "compressed": bool(rsv & 4), "parts": [], "size": 0,
                                             "frames": [], "calls": []}
        later = None if fin else self.shown_early(ctx, state)
        if opcode == 0 and payload and not fin and later is None:
            # tshark puts it on the top level of the tree, after the websocket layer (the frame completing a
            # fragmented message shows the reassembly instead; a lone final one is a message: neither)
            ctx.top_level(Item(self.f["continue"], payload, base, len(payload), None, False, psrc))
        state["parts"].append(payload)
        state["frames"].append(ctx.frame)
        state["calls"].append((ctx.frame, ctx.source, ctx.pos))
        state["size"] += len(payload)
        if state["size"] > MESSAGE_LIMIT or len(state["frames"]) > FRAGMENT_LIMIT:
            ctx.expert(pl, "reassembly", f"Message over {MESSAGE_LIMIT} bytes or {FRAGMENT_LIMIT} frames: dropped")
            del states[ctx.direction]
            if call:
                self.hand_up(ctx, pl, call, None, where, info)
            return
        if later is not None:
            self.early_message(ctx, pl, state, rsv, later, info)
        if not fin:
            return
        del states[ctx.direction]
        state["final_pmc"] = bool(rsv & 4)
        handed = state.get("early") == "handed"
        if handed:
            # tshark -2 handed the message up from an earlier frame of this call: this last one is shown as a
            # continuation, and the plugin's postdissector shows the message at the end of the frame
            ctx.top_level(Item(self.f["continue"], payload, base, len(payload), None, False, psrc))
        else:
            self.learn_early(ctx, state)
        if call is False:           # permessage-deflate: one reassembly for both (the plugin's)
            self.message(ctx, pl, state, at, where, info, late=handed)
        else:
            self.hand_up(ctx, pl, None if handed else call, state, where, info)

    # --- tshark's own reassembly, and the plugin's messages on its calls --------------------------------------------
    # The plugin assembles each direction's messages itself (lua/rt_websocket.lua; the data frame above), and shows
    # them on Wireshark's calls: the n-th call of a frame shows the frame's n-th complete message (rt.ws_next), the
    # rest at the end of the frame (its postdissector). Wireshark's own dissector calls where its reassembly
    # (packet-websocket.c, reassemble.c) completes a message, by other rules; on a well-formed stream the two agree.

    @staticmethod
    def wireshark_call(ctx, opcode: int, fin: int, payload: bytes) -> dict | None:
        """tshark 4.0's own reassembly: the message its dissector hands up at this data frame ({opcode, frames,
        parts}), or None. A frame with an empty payload is skipped; one with FIN and a non-zero opcode is a message
        of its own and leaves a fragmented one in progress; any other joins the message in progress or starts one.
        The conversation keeps one opcode for all its reassemblies (websocket_conv->first_frag_opcode: a non-zero
        opcode without FIN sets it), and the message in progress is keyed by the address pair, not the
        direction (addresses_reassembly_table_functions). A continuation that completes nothing leaves the frame
        marked fragmented (pinfo->fragmented), and a message of one frame after it in that frame is not handed
        up."""
        if not payload:
            return None
        stack = ctx.stack
        if fin and opcode:     # skipped while the frame is marked fragmented (dissect_websocket_data_frame)
            fragmented = stack is not None and stack.fragmented
            return None if fragmented else {"opcode": opcode, "frames": [ctx.frame], "parts": [payload]}
        if opcode:
            ctx.conv["ws_opcode"] = opcode
        src, _, dst = ctx.direction.partition(">")
        key = (src.rpartition(":")[0], dst.rpartition(":")[0])
        table = ctx.conv.setdefault("ws_reassembly", {})
        m = table.get(key)
        if m is None:
            m = table[key] = {"opcode": 0, "frames": [], "parts": [], "size": 0}
        m["frames"].append(ctx.frame)
        m["parts"].append(payload)
        m["size"] += len(payload)
        if m["size"] > MESSAGE_LIMIT or len(m["frames"]) > FRAGMENT_LIMIT:
            del table[key]            # protodump's bound (tshark has none): it starts afresh
            return None
        if not fin:
            if not opcode and stack is not None:
                stack.fragmented = True      # its Continue item returns without restoring pinfo->fragmented
            return None
        del table[key]
        m["opcode"] = ctx.conv.get("ws_opcode", 0)
        return m

    def hand_up(self, ctx, pl, call: dict | None, state: dict | None, where, info) -> None:
        """A message the plugin completed here (state, or None) and tshark's call here (or None): tshark's items
        for its call (the fragment tree of a reassembled message), then what the plugin shows: on a call, the
        frame's first message not yet shown (an earlier one waiting, else this one); the others at the end of the
        frame. A call with no message of the plugin's shows nothing (the protocol is called and takes it); nobody
        to take it: tshark's own form of the bytes it delivered."""
        base, psrc, plain = where
        msg = b"".join(state["parts"]) if state is not None else b""
        name = "Unmasked data" if not plain else "Reassembled WebSocket message"
        table = self.table(ctx.conv)
        waiting = ctx.stack.late if ctx.stack is not None else []
        if call is None:
            if msg:         # the plugin's postdissector shows it, at the end of the frame, in a buffer of its own
                ctx.handoff(*table, 0, len(msg), msg, name, late=True)
            return
        parts = call["parts"]
        if len(parts) == 1:           # this frame's payload, where it is (the frame, or its unmasked buffer)
            data, start, source = (ctx.data, base, psrc) if plain else (parts[0], 0, psrc)
            n = len(parts[0])
        else:
            data = b"".join(parts)
            start, source, n = 0, self.fragment_tree(ctx, call, data), len(data)
        if waiting:
            _, keys, held, first, last, own, _, meta = waiting.pop(0)
            shown = held[first:last]
            if msg:
                ctx.handoff(*table, 0, len(msg), msg, name, late=True)
            if shown == data[start:start + n]:     # (rt.ws_tvb: Wireshark's buffer if it holds the message)
                taken = ctx.handoff(table[0], keys, start, start + n, data, source, meta)
            else:
                taken = ctx.handoff(table[0], keys, 0, len(shown), shown, ctx.new_source(own, shown), meta)
        elif msg != data[start:start + n]:
            taken = ctx.handoff(*table, 0, len(msg), msg, ctx.new_source(name, msg)) if msg else \
                ctx.stack.call_silently(*table, data, start, start + n) if ctx.stack is not None else None
        else:
            taken = ctx.handoff(*table, start, start + n, data, source)
        if taken is None:
            self.show_unclaimed(ctx, pl, call["opcode"], data, start, n, source, info)

    # --- tshark -2: a message whose last frame shares a dissector call with earlier frames of it ---------------
    # Wireshark's second pass finds a reassembled message by (frame, id) for every fragment in the frame that
    # completed it (reassemble.c's reassembled_table), and process_reassembled_data shows it where the layer number
    # equals the completing call's: the first of its frames in that call (tcp_dissect_pdus cuts a segment's
    # WebSocket frames in one call) shows the whole message and hands it up. A hand-up makes a new layer, so the
    # frames after it show as continuations; a "Decompression failed" makes none, so the next frame shows it again.

    @staticmethod
    def learn_early(ctx, state) -> None:
        """First pass: a delivered fragmented message whose last frame shares its call with earlier frames of it
        is recorded (the first of those: frame, data source, offset) for the second pass (cli/two_pass_opts.py)."""
        parts, calls = state["parts"], state["calls"]
        if len(parts) < 2 or not parts[-1]:
            return
        here = calls[-1][:2]
        first = next((c for c in calls[:-1] if c[:2] == here), None)
        if first is not None:
            early = ctx.conv.setdefault(EARLY, {})
            if len(early) < EARLY_LIMIT:
                early[first] = True

    @staticmethod
    def shown_early(ctx, state) -> list[bytes] | None:
        """Second pass: if this (not last) frame shows the whole message, the payloads of its frames after this
        one (all in this call's data), else None."""
        if state.get("early") != "again":
            learnt = ctx.conv.get("learnt_early")
            if not learnt or (ctx.frame, ctx.source, ctx.pos) not in learnt:
                return None
        return later_payloads(ctx.data, ctx.end)

    def early_message(self, ctx, pl, state, rsv: int, later: list[bytes], info) -> None:
        """Second pass: this frame (its payload the last of state's parts) shows the whole message, `later` the
        payloads of its frames to come: its fragment tree, then what tshark does with it here. This frame's own
        RSV1 asks to inflate, which finds no result stored for this frame: "Decompression failed", and the next
        frame shows it again. Else it is handed up as it came; the plugin, whose own assembly has not reached the
        last frame, shows nothing (its postdissector shows the message)."""
        shares = {"frames": [*state["frames"], *[ctx.frame] * len(later)], "parts": [*state["parts"], *later]}
        whole = b"".join(shares["parts"])
        src = self.fragment_tree(ctx, shares, whole)
        if rsv & 4 and ctx.conv.get("deflate") is not None and ctx.conv.get("decompress", True):
            failed = ctx.top_level(TextItem(None, None, 0, len(whole), FAILED, False, src))
            ctx.expert(failed, "decompression.failed.expert", FAILED)
            state["early"] = "again"
            return
        state["early"] = "handed"
        table = self.table(ctx.conv)
        if ctx.stack is not None and ctx.stack.call_silently(*table, whole, 0, len(whole)) is None:
            self.show_unclaimed(ctx, pl, state["opcode"], whole, 0, len(whole), src, info)

    def message(self, ctx, pl, state, at, where, info, late: bool = False) -> None:
        """A complete message: reassembled, inflated, handed up (or shown as data). What tshark 4.0's dissector
        does with it decides the websocket layer; the game layers get protodump's message, as the plugin's own
        assembly gives it to them (docs/tshark-formats.md 8). late: tshark does nothing more with it here (-2
        handed it up from an earlier frame): only the plugin's postdissector shows it."""
        parts = state["parts"]
        raw = msg = b"".join(parts)
        base, psrc, plain = where
        single = len(parts) == 1
        # tshark reassembles a fragmented message, and hands it up, only when its last frame has a payload; it
        # inflates it only when that last frame says it is compressed (RSV1), which a sender never sets
        delivered = (single or bool(parts[-1])) and not late
        reassembled = None if single or not delivered else self.fragment_tree(ctx, state, raw)
        inflater = None
        if state["compressed"] and ctx.conv.get("deflate") is not None and ctx.conv.get("decompress", True):
            inflater = self.inflater(ctx)
            msg, error = inflater.inflate(msg, single)
            tshark_inflates = (single or state["final_pmc"]) and not late
            if msg is None and error.startswith(FAILED) and tshark_inflates and not inflater.wireshark_ended:
                # zlib could not: tshark's expert item on the top level of the tree, over the (last frame's)
                # payload, without zlib's reason
                failed = ctx.top_level(TextItem(None, None, base, len(parts[-1]), FAILED, False, psrc))
                ctx.expert(failed, "decompression.failed.expert", FAILED)
                return
            if msg is None and not error.startswith(FAILED):         # over protodump's limit
                ctx.expert(pl, "unexpected", error)
                return
            if msg == b"":
                # inflated to nothing: the plugin has no message for it (below, as for one it could not inflate);
                # tshark makes no buffer of 0 bytes and hands the message up as it came (or, inflating from
                # another history, what it made of it)
                if single and inflater.wireshark_out:
                    ctx.new_source("Decompressed payload", inflater.wireshark_out)
                msg, inflater = None, None
            # the plugin inflates when it is called: after Wireshark's own buffer for a message it delivers
            # inflated as we do (one frame), before its own for one Wireshark delivers otherwise (compressed,
            # inflated from another history) or not at all
            if msg is not None and (not single or inflater.wireshark_out != msg):
                if single and inflater.wireshark_out:
                    ctx.new_source("Decompressed payload", inflater.wireshark_out)
                inflater.add_sources(ctx)
            single, name = False, "Decompressed payload"
        else:
            name = "Unmasked data" if not plain else "Reassembled WebSocket message"
        table = self.table(ctx.conv)
        if msg is None:
            # tshark hands the still compressed message up; the plugin, with no message of its own for it, keeps
            # the connection if its protocol took it before (a call that shows nothing); else it is data
            if delivered and ctx.stack is not None and ctx.stack.call_silently(*table, raw, 0, len(raw)) is None:
                self.show_unclaimed(ctx, pl, state["opcode"], raw, 0, len(raw), reassembled, info)
            return
        if single:            # this frame's payload, where it is (the frame, or its unmasked buffer)
            data, start, source = (ctx.data, base, psrc) if plain else (msg, 0, psrc)
        elif reassembled is not None and name != "Decompressed payload":
            data, start, source = msg, 0, reassembled
        else:
            data, start, source = msg, 0, ctx.new_source(name, msg)
        if inflater is not None:
            inflater.add_sources(ctx)
        if not msg:
            return
        if not delivered:     # the plugin's postdissector shows it, at the end of the frame
            ctx.handoff(*table, start, start + len(msg), data, source, late=True)
            return
        taken = ctx.handoff(*table, start, start + len(msg), data, source)
        if taken is None:     # nobody took it: what tshark delivered (a compressed message as it came)
            n = len(msg)      # (in the frame itself, more WebSocket frames may follow it)
            if inflater is not None and reassembled is not None:
                data, start, source, n = raw, 0, reassembled, len(raw)
            self.show_unclaimed(ctx, pl, state["opcode"], data, start, n, source, info)

    def fragment_tree(self, ctx, state, msg: bytes) -> int:
        """Wireshark's fragment tree (reassemble.c show_fragment_tree) on the top level of the tree after the
        websocket layer: each fragment (several may share a frame) as "#frame(bytes)" and "payload: first-last",
        its items spanning the fragments in tshark's "Reassembled Message" buffer (returned)."""
        f, shares, pos = self.f, [], 0
        for frame, part in zip(state["frames"], state["parts"]):
            shares.append((frame, pos, len(part)))
            pos += len(part)
        listed = ", ".join(f"#{frame}({n})" for frame, _, n in shares)
        src = ctx.new_source("Reassembled Message", msg)
        node = ctx.top_level(Item(f["fragments"], None, 0, len(msg), f"[{len(shares)} Reassembled websocket "
                                  f"Fragments ({len(msg)} bytes): {listed}]", True, src))
        for frame, first, n in shares:
            node.add(Item(f["fragment"], frame, first, n, f"Frame: {frame}, payload: {first}-{first + n - 1} "
                          f"({n} byte{'s' if n != 1 else ''})", True, src))
        node.add(Item(f["frag_count"], len(shares), 0, 0, None, True, src))
        node.add(Item(f["reassembled"], len(msg), 0, 0, None, True, src))
        return src

    @staticmethod
    def table(conv: dict) -> tuple[str, tuple]:
        """Where a message goes (tshark's order): the negotiated subprotocol's entry in `ws.protocol`, else the
        server port's in `ws.port`; then (in the dispatcher) the heuristic list "ws"."""
        if conv.get("subprotocol"):
            return "ws.protocol", (conv["subprotocol"],)
        return "ws.port", (int(conv.get("client", ":0>:0").rpartition(":")[2]),)

    def inflater(self, ctx) -> Inflater:
        """This direction's context: the client's compressor is the client's (client_no_context_takeover)."""
        inflaters = ctx.conv.setdefault("inflaters", {})
        inf = inflaters.get(ctx.direction)
        if inf is None:
            side = "client" if ctx.direction == ctx.conv.get("client") else "server"
            fresh = f"{side}_no_context_takeover" in (ctx.conv.get("deflate") or {})
            inf = inflaters[ctx.direction] = ctx.conv.get("inflater", Inflater)(fresh)     # (fused_ws: its own)
            ctx.charge_state(Inflater.COST)
        return inf

    def show_unclaimed(self, ctx, pl, opcode, data, start, n, source, info) -> None:
        """Nobody took the message: text in the payload item, binary as a `data` layer, another opcode (a
        reserved one, or 0: a message of one continuation frame) as an unknown payload (tshark's forms)."""
        if opcode not in (1, 2):
            unknown = pl.add(Item(self.f["unknown"], data[start:start + n], start, n, None, False, source))
            ctx.expert(unknown, "payload.unknown.expert", UNKNOWN.format(opcode))
        elif opcode == 1:
            pl.add(Item(self.f["text"], data[start:start + n].decode("utf-8", "replace"), start, n, None, False,
                        source))
            if ctx.stack is not None and n:     # tshark hands the text on: "Line-based text data"
                ctx.stack.dissect(TEXT_LINES, data, start, start + n, source, ctx.direction, {"info": info})
        elif ctx.stack is not None:
            ctx.stack.dissect(DATA, data, start, start + n, source, ctx.direction, {"info": info})


class Data:
    """tshark's `data` layer for bytes no dissector took (data.data, data.len)."""

    name, description = "data", "Data"
    lua = False

    def __init__(self):
        b = Binder("data")
        self.info = b.field("data", "Data", "protocol")
        self.data = b.field("data.data", "Data", "bytes")
        self.len = b.field("data.len", "Length", "uint32")
        self.fields = b.fields
        self.experts = EXPERTS

    def dissect(self, ctx, prefs):
        self.fill(ctx.tree, ctx)
        return ctx.meta.get("info", "")     # the Info column stays the WebSocket frame's

    def fill(self, item: Item, ctx) -> None:
        """The data item's label and children for ctx's bytes (a layer of its own, or inside HTTP's tree). (tshark
        -V follows it with a hex dump of its bytes: capture/layers/data.py)"""
        n = ctx.end - ctx.pos
        item.label = f"Data ({n} byte{'s' if n != 1 else ''})"
        item.add(Item(self.data, ctx.data[ctx.pos:ctx.end], ctx.pos, n, None, False, ctx.source))
        item.add(Item(self.len, n, ctx.pos, 0, None, True, ctx.source))


class TextLines:
    """tshark's `data-text-lines` layer for a text message no dissector took: one item per line, the line end
    kept, control characters escaped as tshark's format_text does."""

    name, description = "data-text-lines", "Line-based text data"
    lua = False

    def __init__(self):
        b = Binder("data-text-lines")
        self.info = b.field("data-text-lines", "Line-based text data", "protocol")
        self.fields = b.fields
        self.experts = EXPERTS

    def dissect(self, ctx, prefs):
        lines = [(at, nxt) for at, _, nxt in ws_handshake.line_ends(ctx.data, ctx.pos, ctx.end)]
        ctx.tree.label = f"Line-based text data ({len(lines)} lines)"     # (packet-text-media.c: "lines" always)
        for at, nxt in lines:          # (each with its line end)
            ctx.tree.add(TextItem(None, None, at, nxt - at, format_text(ctx.data[at:nxt]), False, ctx.source))
        return ctx.meta.get("info", "")     # the Info column stays the WebSocket frame's


DATA = Data()
TEXT_LINES = TextLines()
PROTOCOL = WebSocket()
PROTOCOL.hands_to = (DATA, TEXT_LINES)      # the payload layers no game took: their fields are -e fields too
