"""WebSocket (RFC 6455 + permessage-deflate) and its HTTP upgrade: framing, unmasking, reassembly, inflate, the
handoff of messages; on byte streams fed directly and on the real captures (made by the `websockets` library
through kernel TCP), compared with tshark's own websocket and http dissectors."""
from __future__ import annotations

import zlib

import pytest
from hypothesis import given, settings, strategies as st

from conftest import exchanges_pcap, get, layers_of, packet_layers
from protodump.dissectors import websocket as ws
from protodump.dissectors import ws_handshake
from protodump.engine.context import Ctx
from protodump.engine.tree import Item
from protodump.reassembly.tcp import MAX_PDU

WS_CAPTURES = ["freeblox-session.pcap", "freeblox-plain.pcap", "freeblox-nocontext.pcap", "freeblox-bad.pcap",
               "freeblox-burst.pcap", "websocket-bad.pcap"]
CLIENT, SERVER = "127.0.0.1:40000>127.0.0.1:8765", "127.0.0.1:8765>127.0.0.1:40000"


# --- a byte-stream harness: the protocol's own pdu_length and dissect, no capture ----------------------------------

class Recorder(Ctx):
    """A Ctx that keeps what dissect hands up (instead of a dispatcher stack)."""

    __slots__ = ("handed",)

    def handoff(self, table, keys, start, end, data=None, source=None, meta=None, late=False):
        self.handed.append((table, tuple(keys), bytes((self.data if data is None else data)[start:end])))
        return "recorded"


def feed(chunks, conv=None, prefs=None):
    """[(direction, bytes)] -> (conv, [(direction, messages handed up, experts, tree)]): each direction's bytes are
    cut with pdu_length and dissected PDU by PDU, as engine/streams.py does (with the preferences `prefs`)."""
    conv = {} if conv is None else conv
    buffers, out = {}, []
    for frame, (direction, data) in enumerate(chunks, 1):
        buf = buffers.get(direction, b"") + data
        pos = 0
        while pos < len(buf):
            n = ws.PROTOCOL.pdu_length(buf, pos, conv, direction, {})
            if n <= 0 or pos + n > len(buf):
                break
            tree = Item(ws.PROTOCOL.info, None, pos, n)
            ctx = Recorder(buf, pos, pos + n, tree, ws.PROTOCOL, conv, direction, frame, [])
            ctx.handed = []
            ws.PROTOCOL.dissect(ctx, prefs or {})
            experts = [i.expert_info.message for i in tree.walk() if i.expert_info]
            out.append((direction, [h[2] for h in ctx.handed], experts, tree))
            pos += n
        buffers[direction] = buf[pos:]
    return conv, out


def handshake(extensions: str | None = "permessage-deflate") -> list:
    key = "dGhlIHNhbXBsZSBub25jZQ=="
    ext = f"Sec-WebSocket-Extensions: {extensions}\r\n" if extensions else ""
    return [(CLIENT, (f"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Key: {key}\r\n{ext}\r\n").encode()),
            (SERVER, (f"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Accept: {ws_handshake.accept_key(key)}\r\n{ext}\r\n").encode())]


def deflate_stream():
    z = zlib.compressobj(wbits=-15)
    return lambda m: (z.compress(m) + z.flush(zlib.Z_SYNC_FLUSH))[:-4]


MASK = b"\xa1\xb2\xc3\xd4"


def test_accept_key_rfc6455_example():
    assert ws_handshake.accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


def test_http_head_framing():
    req = handshake()[0][1]
    assert ws_handshake.head_length(req, 0) == len(req)
    assert ws_handshake.head_length(req[:20], 0) == 0                 # no CRLFCRLF yet: need more
    assert ws_handshake.head_length(b"GE", 0) == 0
    assert ws_handshake.head_length(b"\x82\x01\x00garbage-garbage", 0) == 18      # no message: a continuation
    body = b"HTTP/1.1 400 Bad\r\nContent-Length: 5\r\n\r\nhello"
    assert ws_handshake.head_length(body + b"next", 0) == len(body)


@pytest.mark.parametrize("size,header", [(0, 2), (125, 2), (126, 4), (65535, 4), (65536, 10), (100_000, 10)])
def test_frame_lengths_7_16_64(size, header):
    for mask in (None, MASK):
        frame = ws.encode_frame(2, bytes(size), mask=mask)
        assert ws.frame_length(frame, 0) == len(frame) == header + size + (4 if mask else 0)
        assert ws.frame_length(frame[:header - 1], 0) == 0              # the header itself is incomplete


@given(st.binary(max_size=300), st.binary(min_size=4, max_size=4), st.sampled_from([7, 16, 64]))
def test_mask_round_trip(payload, key, bits):
    if bits == 7 and len(payload) > 125:
        bits = 16
    frame = ws.encode_frame(2, payload, mask=key, length_bits=bits)
    assert ws.frame_length(frame, 0) == len(frame)
    assert ws.unmask(frame[len(frame) - len(payload):], key) == payload


FRAME_PART = st.tuples(st.binary(max_size=200), st.one_of(st.none(), st.binary(min_size=4, max_size=4)),
                       st.sampled_from([7, 16, 64]), st.sampled_from([None, 9, 10]))


@given(st.lists(FRAME_PART, min_size=1, max_size=6), st.integers(0, 3))
def test_later_payloads_finds_the_rest_of_a_message(parts, cut):
    """-2's early message reads the frames after this one in the call's data: the continuations' payloads up to
    the final one, unmasked, control frames between them skipped; None if a frame is cut short or a new message
    starts before the final one."""
    data, want = b"", []
    for i, (payload, key, bits, control) in enumerate(parts):
        if control is not None:
            data += ws.encode_frame(control, payload[:125], mask=key)
        bits = 16 if bits == 7 and len(payload) > 125 else bits
        data += ws.encode_frame(0, payload, fin=i == len(parts) - 1, mask=key, length_bits=bits)
        want.append(payload)
    assert ws.later_payloads(data, 0) == want
    assert ws.later_payloads(data + ws.encode_frame(2, b"next"), 0) == want
    assert ws.later_payloads(data[:len(data) - 1 - cut], 0) is None
    assert ws.later_payloads(ws.encode_frame(2, b"new", fin=False) + data, 0) is None


def test_handshake_then_messages_handed_up():
    conv, out = feed(handshake(None) + [(CLIENT, ws.encode_frame(2, b"\x00hello", mask=MASK)),
                                        (SERVER, ws.encode_frame(2, b"\x01"))])
    assert conv["upgraded"] and conv["deflate"] is None and conv["client"] == CLIENT
    assert [o[1] for o in out] == [[], [], [b"\x00hello"], [b"\x01"]]
    assert out[1][3].find("http.response_number").value == 1
    assert not any(o[2][1:] for o in out)                 # only the http chat experts on the first lines


def test_messages_go_to_the_subprotocol_table_else_the_server_port():
    with_sub = [handshake(None)[0], (SERVER, handshake(None)[1][1].replace(
        b"\r\n\r\n", b"\r\nSec-WebSocket-Protocol: freeblox.v1\r\n\r\n"))]
    for chunks, table in ((handshake(None), ("ws.port", (8765,))), (with_sub, ("ws.protocol", ("freeblox.v1",)))):
        conv, _ = feed(chunks)
        assert ws.PROTOCOL.table(conv) == table


def test_wrong_accept_is_not_checked_as_tshark_4_0():
    """tshark 4.0's http dissector does not check Sec-WebSocket-Accept: neither an item nor an expert."""
    bad = [handshake()[0], (SERVER, handshake()[1][1].replace(b"Accept: ", b"Accept: x"))]
    conv, out = feed(bad)
    assert conv["upgraded"] and not out[1][2][1:]
    assert out[1][3].find("http.sec_websocket_accept.valid") is None


@pytest.mark.parametrize("last", [b"", b"e"])
def test_fragments_spanning_segments_and_several_frames_per_segment(last):
    frames = (ws.encode_frame(2, b"ab", fin=False, mask=MASK) + ws.encode_frame(0, b"cd", fin=False, mask=MASK)
              + ws.encode_frame(0, last, mask=MASK) + ws.encode_frame(9, b"p", mask=MASK))
    chunks = handshake(None) + [(CLIENT, frames[:3]), (CLIENT, frames[3:11]), (CLIENT, frames[11:])]
    _, out = feed(chunks)
    handed = [m for o in out[2:] for m in o[1]]
    assert handed == [b"abcd" + last]
    final = next(o for o in out[2:] if o[1])[3]
    count = final.find("websocket.fragment.count")
    # tshark 4.0 reassembles only when the last frame has a payload (the message still goes to the game layers,
    # at the end of the frame: the plugin's postdissector)
    assert (count.value == 3) if last else count is None
    ping = out[-1][3].find("websocket.payload.ping")
    assert ping is not None and ping.value == b"p"


def test_permessage_deflate_context_takeover():
    pack = deflate_stream()
    text = b"\x0f" + b"the same words again and again " * 4
    frames = [(CLIENT, ws.encode_frame(2, pack(text), rsv=4, mask=MASK)) for _ in range(3)]
    _, out = feed(handshake() + frames)
    assert [o[1] for o in out[2:]] == [[text]] * 3
    assert len(frames[1][1]) < len(frames[0][1])        # the later ones refer back to the first


def test_no_context_takeover_starts_each_message_afresh():
    def pack(m):
        z = zlib.compressobj(wbits=-15)
        return (z.compress(m) + z.flush(zlib.Z_SYNC_FLUSH))[:-4]
    ext = "permessage-deflate; client_no_context_takeover; server_no_context_takeover"
    msgs = [b"\x01" + bytes([i]) * 50 for i in range(3)]
    _, out = feed(handshake(ext) + [(CLIENT, ws.encode_frame(2, pack(m), rsv=4, mask=MASK)) for m in msgs])
    assert [o[1] for o in out[2:]] == [[m] for m in msgs]
    inflaters = [ws.Inflater(True), ws.Inflater(False)]
    assert all(i.fresh is f for i, f in zip(inflaters, (True, False)))


def test_failed_inflate_and_output_limit():
    bomb = zlib.compressobj(9, zlib.DEFLATED, -15)
    big = bomb.compress(bytes(ws.MESSAGE_LIMIT + 10)) + bomb.flush(zlib.Z_SYNC_FLUSH)
    _, out = feed(handshake() + [(SERVER, ws.encode_frame(2, big[:-4], rsv=4)),
                                 (SERVER, ws.encode_frame(2, deflate_stream()(b"\x01"), rsv=4))])
    assert out[2][1] == [] and any("exceeds the limit" in e for e in out[2][2])
    assert out[3][1] == [b"\x01"]                         # a fresh context: decoding goes on
    # a failed inflate breaks the shared context for good, as in tshark 4.0 (zlib's state stays BAD)
    _, out = feed(handshake() + [(SERVER, ws.encode_frame(2, b"\xff\xff\xff junk", rsv=4)),
                                 (SERVER, ws.encode_frame(2, deflate_stream()(b"\x01"), rsv=4))])
    assert out[2][1] == [] and any(e.startswith("Decompression failed") for e in out[2][2])
    assert out[3][1] == [] and any(e.startswith("Decompression failed") for e in out[3][2])


@pytest.mark.parametrize("checks", ["TRUE", "FALSE", None])
def test_header_violations_are_reported(checks):
    """protodump's own checks, with -o websocket.checks:TRUE only (tshark's dissector makes none: by default the
    websocket layer is tshark's)."""
    prefs = {} if checks is None else {"websocket.checks": checks}
    _, out = feed(handshake(None) + [(SERVER, ws.encode_frame(2, b"\x01", rsv=2)),
                                     (SERVER, ws.encode_frame(3, b"\x01")),
                                     (SERVER, ws.encode_frame(9, bytes(130))),
                                     (CLIENT, ws.encode_frame(2, b"\x01")),
                                     (SERVER, ws.encode_frame(2, b"\x01", mask=MASK)),
                                     (SERVER, ws.encode_frame(8, b"\x03")),
                                     (SERVER, ws.encode_frame(0, b"\x01"))], prefs=prefs)
    experts = [o[2] for o in out[2:]]
    if checks != "TRUE":
        assert experts == [[]] * 7
        return
    assert "Reserved bits 0x2 set without a negotiated extension" in experts[0]
    assert "Unknown opcode 3" in experts[1]
    assert any("control frame" in e for e in experts[2])
    assert "Frame from the client not masked" in experts[3]
    assert "Frame from the server masked" in experts[4]
    assert "A close payload needs a 2-byte status code" in experts[5]
    assert "Continuation frame without a message in progress" in experts[6]


def test_close_code_and_reason():
    _, out = feed(handshake(None) + [(CLIENT, ws.encode_frame(8, b"\x03\xe9going", mask=MASK))])
    tree = out[-1][3]
    assert tree.find("websocket.payload.close.status_code").value == 1001
    assert tree.find("websocket.payload.close.reason").value == "going"


def test_huge_declared_length_cannot_be_framed():
    """Memory stays bounded: the declared length is beyond what the stream machinery buffers. Of a 64-bit
    length tshark keeps the low 32 bits (get_websocket_frame_length), so does protodump."""
    conv = {"upgraded": True}
    head = b"\x82\x7f" + ((1 << 40) + (3 << 30)).to_bytes(8, "big")
    assert ws.PROTOCOL.pdu_length(head + b"xx", 0, conv, SERVER, {}) == 10 + (3 << 30) > ws.MAX_FRAME > MAX_PDU
    head = b"\x82\x7f" + ((1 << 40) + 5).to_bytes(8, "big")
    assert ws.PROTOCOL.pdu_length(head + b"xx", 0, conv, SERVER, {}) == 15


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.booleans())
def test_random_frames_never_crash(data, deflate):
    conv = {"upgraded": True, "client": CLIENT, "deflate": {} if deflate else None}
    n = ws.PROTOCOL.pdu_length(data, 0, conv, SERVER, {})
    if 0 < n <= len(data):
        tree = Item(ws.PROTOCOL.info, None, 0, n)
        ctx = Recorder(data, 0, n, tree, ws.PROTOCOL, conv, SERVER, 1, [])
        ctx.handed = []
        ws.PROTOCOL.dissect(ctx, {})


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=120))
def test_random_http_heads_never_crash(data):
    conv: dict = {}
    n = ws.PROTOCOL.pdu_length(data, 0, conv, CLIENT, {})
    if 0 < n <= len(data):
        ctx = Recorder(data, 0, n, Item(ws.PROTOCOL.info, None, 0, n), ws.PROTOCOL, conv, CLIENT, 1, [])
        ctx.handed = []
        ws.PROTOCOL.dissect(ctx, {})


# --- the real captures, against tshark's own websocket and http dissectors ------------------------------------------

HEADER_FIELDS = ["websocket.fin", "websocket.rsv", "websocket.pmc", "websocket.opcode", "websocket.mask",
                 "websocket.payload_length", "websocket.payload_length_ext_16", "websocket.payload_length_ext_64",
                 "websocket.masking_key", "websocket.payload.close.status_code", "websocket.payload.close.reason",
                 "websocket.payload.ping", "websocket.payload.pong"]
HTTP_FIELDS = ["http.upgrade", "http.connection", "http.sec_websocket_key", "http.sec_websocket_accept",
               "http.sec_websocket_extensions", "http.sec_websocket_version", "http.host", "http.request.method",
               "http.request.uri", "http.request.version", "http.response.code", "http.response.code.desc",
               "http.response.phrase", "http.request.full_uri", "http.request_number", "http.response_number",
               "http.time", "http.request_in", "http.response_for.uri", "http.user_agent", "http.server"]


def flat(obj, out):
    """(key, value) leaves of a tshark JSON layer, in order."""
    for k, v in obj:
        if isinstance(v, list):
            flat(v, out)
        else:
            out.append((k, v))
    return out


def picked(layers, proto, keys):
    return [[kv for kv in flat(layer, []) if kv[0] in keys] for layer in layers_of(layers, proto)]


@pytest.mark.parametrize("name", WS_CAPTURES)
def test_frames_as_tshark_shows_them(name, protodump_run, standard_run):
    ours, theirs = protodump_run("-T", "json", name), standard_run("-T", "json", "-r", name)
    a, b = packet_layers(ours.stdout), packet_layers(theirs.stdout)
    assert len(a) == len(b)
    frames = 0
    for i, (x, y) in enumerate(zip(a, b)):
        mine, tsharks = picked(x, "websocket", HEADER_FIELDS), picked(y, "websocket", HEADER_FIELDS)
        if name == "websocket-bad.pcap" and mine == [[]]:
            continue     # the 2^40-byte frame: tshark shows its header, protodump the stream it cannot frame
        assert mine == tsharks, f"{name} frame {i + 1}"
        assert picked(x, "http", HTTP_FIELDS) == picked(y, "http", HTTP_FIELDS), f"{name} frame {i + 1}"
        frames += len(mine)
    assert frames >= 8


def test_session_control_frames(protodump_run):
    layers = packet_layers(protodump_run("-T", "json", "freeblox-plain.pcap").stdout)
    values = [kv for packet in layers for layer in layers_of(packet, "websocket") for kv in flat(layer, [])]
    assert ("websocket.payload.close.status_code", "1001") in values
    assert ("websocket.payload.close.reason", "going away") in values
    assert ("websocket.opcode", "9") in values and ("websocket.opcode", "10") in values
    # the fragmented PLAYER_CHAT (+ its empty last frame): tshark 4.0 neither reassembles it nor hands it up (no
    # websocket.fragments); the game layer shows it at the end of the frame, as the plugin's postdissector
    assert not [p for p in layers if layers_of(p, "websocket.fragments")]
    late = [n for n, p in enumerate(layers, 1)
            if layers_of(p, "freeblox") and "freeblox" not in get(get(p, "frame"), "frame.protocols")]
    assert late == [126] and layers[125][-1][0] == "freeblox"
    assert ("freeblox.player_chat.message", "fragmented hello") in flat(layers_of(layers[125], "freeblox")[0], [])


OWN_CHECKS = ("Reserved bits 0x2 set", "Unknown opcode 3", "A control frame must be final",
              "Frame from the client not masked", "Continuation frame without a message in progress")


def test_bad_capture_experts(protodump_run, standard_run):
    """websocket-bad.pcap's damaged frames: protodump's own checks with -o websocket.checks:TRUE; by default the
    frames are tshark 4.0 + plugin's, byte for byte (tshark's dissector makes none of these checks, and a Lua
    plugin cannot add items inside Wireshark's websocket tree)."""
    out = protodump_run("-V", "-o", "websocket.checks:TRUE", "websocket-bad.pcap").stdout
    for message in ("Decompression failed",) + OWN_CHECKS:      # (tshark 4.0 checks no Accept key)
        assert message in out, message
    plain = protodump_run("-V", "websocket-bad.pcap").stdout
    assert plain == standard_run("-V", "-r", "websocket-bad.pcap").stdout
    assert "Decompression failed" in plain and not any(message in plain for message in OWN_CHECKS)
    # on: the same frames with the expert items added, nothing taken away
    on, off = out.splitlines(), plain.splitlines()
    assert len(on) > len(off) and set(off) <= set(on)
    # its 2^40-byte frame keeps the low 32 bits of its length (0), as tshark frames it: nothing stops the stream
    assert "Cannot frame the stream" not in out and "Extended Payload length (64 bits): 1099511627776" in out


def test_messages_delivered_where_tshark_delivers_them(protodump_run, tshark_run):
    """With tshark's own pref websocket.decompress off on both sides, nobody takes the compressed messages: the
    `data` layers (the bytes each side hands up, unmasked) are the same in the same frames."""
    extra = ("-o", "websocket.decompress:FALSE")
    ours = packet_layers(protodump_run("-T", "json", *extra, "freeblox-session.pcap").stdout)
    theirs = packet_layers(tshark_run("-T", "json", *extra, "-r", "freeblox-session.pcap").stdout)
    mine = [layers_of(p, "data") for p in ours]
    assert mine == [layers_of(p, "data") for p in theirs]
    assert sum(map(len, mine)) == 24 and not any(layers_of(p, "freeblox") for p in ours)


@pytest.mark.parametrize("name", ["freeblox-session.pcap", "freeblox-nocontext.pcap", "freeblox-fragments.pcap"])
@pytest.mark.parametrize("form", [("-x",), ("-V",), ("-T", "pdml")])
def test_no_decompress_is_tsharks(name, form, protodump_run, standard_run):
    """`-o websocket.decompress:FALSE`: the plugin sees Wireshark hand the first compressed message up as it is
    before it inflates it, and inflates none (no `Compressed message` / `Decompressed payload` buffers in -x);
    the bytes nobody takes are a `data` layer, with its hex dump in -V and a `<field name="data">` in PDML."""
    extra = ("-o", "websocket.decompress:FALSE")
    ours, theirs = protodump_run(*form, *extra, name), standard_run(*form, *extra, "-r", name)
    assert ours.returncode == 0, ours.stderr
    if form == ("-T", "pdml"):
        assert ours.stdout.split("<packet>", 1)[1] == theirs.stdout.split("<packet>", 1)[1]
    else:
        assert ours.stdout == theirs.stdout
    assert "Decompressed payload" not in ours.stdout


def damaged_message_pcap(path, seed: int) -> None:
    """A permessage-deflate connection whose server sends a message, then one message deflated and cut in two
    inside a block: the first half (zlib yields what it decoded, then takes the second half's bytes as the same
    block), the second half, and a last message."""
    import random
    from test_freeblox import tcp_pcap, upgrade
    rng = random.Random(seed)
    words = [b"alpha", b"beta", b"gamma", b"delta", b"voxel", b"chunk", b"block", b"player"]
    while True:
        z = zlib.compressobj(wbits=-15)
        first = (z.compress(b"hello " * 40) + z.flush(zlib.Z_SYNC_FLUSH))[:-4]
        text = b" ".join(rng.choice(words) for _ in range(300))
        data = (z.compress(text) + z.flush(zlib.Z_SYNC_FLUSH))[:-4]
        last = (z.compress(b"bye " * 30) + z.flush(zlib.Z_SYNC_FLUSH))[:-4]
        cut = rng.randrange(5, len(data) - 5)
        d = zlib.decompressobj(-15)
        try:         # a cut both halves of which still inflate (as a damaged message may)
            for part in (first, data[:cut], data[cut:]):
                d.decompress(part + b"\0\0\xff\xff")
            break
        except zlib.error:
            continue
    segments = upgrade(True) + [(False, ws.encode_frame(2, part, rsv=4)) for part in (first, data[:cut], data[cut:],
                                                                                        last)]
    tcp_pcap(path, segments)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_damaged_message_buffers_are_the_plugins(tmp_path, seed, protodump_run, standard_run):
    """A message that ends inside a block: the plugin keeps its input and inflates it again in front of the next
    message, so that message's `Compressed message` holds the window, the carried input and its own bytes
    (Inflater.carry): -x is tshark + plugin's."""
    path = tmp_path / f"damaged-{seed}.pcap"
    damaged_message_pcap(path, seed)
    ours, theirs = protodump_run("-x", str(path)), standard_run("-x", "-r", str(path))
    assert ours.returncode == 0 and ours.stdout == theirs.stdout
    assert ours.stdout.count("Compressed message (") >= 3


def delivery_pcap(path, text: bool = False) -> None:
    """What tshark 4.0's websocket does with messages nobody takes, on one permessage-deflate connection: two
    control frames in one segment (its Info column shows the last: col_set_str at each frame), a fragmented
    binary message (reassembled, handed up: a data layer, the Protocol column stays WebSocket), a compressed
    fragmented one (handed up still compressed: the data layer holds the deflate bytes), a fragmented text message
    whose last frame is empty (neither reassembled nor handed up). With `text`, two text messages in one segment:
    tshark shows each with its own payload text and data-text-lines layer."""
    from test_freeblox import tcp_pcap, upgrade
    z = zlib.compressobj(wbits=-15)
    packed = (z.compress(b"hello" * 10) + z.flush(zlib.Z_SYNC_FLUSH))[:-4]
    frame = ws.encode_frame
    segments = upgrade(True) + [
        (False, frame(9, b"a") + frame(10, b"b")),
        (False, frame(2, b"xy", fin=False) + frame(0, b"zw")),
        (False, frame(2, packed[:3], fin=False, rsv=4) + frame(0, packed[3:])),
        (False, frame(1, b"ab", fin=False) + frame(0, b"")),
    ]
    if text:
        segments.append((False, frame(1, b"txt") + frame(1, b"two")))
    tcp_pcap(path, segments)


@pytest.mark.parametrize("text", [False, True], ids=["binary", "text"])
@pytest.mark.parametrize("form", [(), ("-V",), ("-T", "json"), ("-T", "pdml"), ("-x",), ("-V", "-x"),
                                  ("-O", "websocket"), ("-O", "data,websocket"),
                                  ("-T", "fields", "-e", "data-text-lines", "-e", "data", "-e", "data.len", "-e",
                                   "websocket")])
def test_messages_nobody_takes_are_tsharks(tmp_path, form, text, protodump_run, standard_run):
    """Frames and messages no game takes, whole frames as tshark 4.0 + plugin shows them (its fake items aside);
    `text`: two text messages in one segment, each its own payload text and data-text-lines layer (an -e field
    too); with -x, no data hex dump under -V's data line, nor with -O where data is not listed."""
    from whole_frame import compare
    path = tmp_path / "delivery.pcap"
    delivery_pcap(path, text=text)
    ours, theirs = protodump_run(*form, str(path)), standard_run(*form, "-r", str(path))
    assert ours.returncode == 0, ours.stderr
    if form == ("-T", "json"):
        same, compared, left_out, differ = compare(ours.stdout, theirs.stdout)
        assert same == compared == 9 + text and not left_out, differ
    elif form == ("-T", "pdml"):
        assert ours.stdout.split("<packet>", 1)[1] == theirs.stdout.split("<packet>", 1)[1]
    else:
        assert ours.stdout == theirs.stdout
    if not form:
        lines = ours.stdout.splitlines()
        assert lines[5].endswith("WebSocket 60 WebSocket Pong [FIN] ") and " data " not in ours.stdout


def early_pcap(path) -> None:
    """Fragmented messages whose last frame shares its segment (one tcp_dissect_pdus call) with earlier frames of
    them, on a permessage-deflate connection: binary with a ping between its frames, compressed (RSV1 on the
    first frame only) in two and in three frames, text, the client's masked; then both Close frames and, ten
    seconds later, a UDP datagram: the connection's state is freed before the end of the file."""
    import dpkt
    from test_freeblox import tcp_pcap, upgrade
    z = zlib.compressobj(wbits=-15)
    packed = (z.compress(b"hello" * 10) + z.flush(zlib.Z_SYNC_FLUSH))[:-4]
    z = zlib.compressobj(wbits=-15)
    packed2 = (z.compress(b"world" * 9) + z.flush(zlib.Z_SYNC_FLUSH))[:-4]
    frame = ws.encode_frame
    tcp_pcap(path, upgrade(True) + [
        (False, frame(2, b"ab", fin=False)),
        (False, frame(0, b"cd", fin=False) + frame(9, b"p") + frame(0, b"ef")),
        (False, frame(2, packed[:3], fin=False, rsv=4) + frame(0, packed[3:])),
        (False, frame(2, packed2[:3], fin=False, rsv=4) + frame(0, packed2[3:6], fin=False) + frame(0, packed2[6:])),
        (False, frame(1, b"t", fin=False) + frame(0, b"x", fin=False) + frame(0, b"y")),
        (True, frame(2, b"12", fin=False, mask=MASK) + frame(0, b"34", mask=MASK)),
        (True, frame(8, b"\x03\xe8", mask=MASK)), (False, frame(8, b"\x03\xe8"))])
    records = list(dpkt.pcap.Reader(open(path, "rb")))
    udp = dpkt.udp.UDP(sport=40000, dport=40001, data=b"late")
    udp.ulen = len(udp)
    ip = dpkt.ip.IP(src=bytes([127, 0, 0, 1]), dst=bytes([127, 0, 0, 1]), p=dpkt.ip.IP_PROTO_UDP, data=udp)
    ip.len = len(ip)
    with open(path, "wb") as out:
        w = dpkt.pcap.Writer(out)
        for ts, buf in records:
            w.writepkt(buf, ts)
        w.writepkt(bytes(dpkt.ethernet.Ethernet(dst=bytes(6), src=bytes(6), data=ip)), records[-1][0] + 10)


@pytest.mark.parametrize("form", [("-V",), ("-V", "-x"), ("-T", "pdml"),
                                  ("-T", "fields", "-e", "frame.number", "-e", "websocket.payload.continue", "-e",
                                   "websocket.fragment.count", "-e", "_ws.expert.message", "-e", "frame.protocols")])
def test_two_pass_shows_a_message_where_tshark_does(tmp_path, form, protodump_run, standard_run):
    """tshark -2 finds a reassembled message for every frame of it in the frame that completed it, and shows it
    on the first of them in the completing call: handed up there (the later frames are continuations), or with
    "Decompression failed" where that frame's RSV1 asks to inflate (then the next frame shows it again). Whole
    frames against tshark 4.0, after the first pass freed the connection (its Close frames, ten seconds)."""
    path = tmp_path / "early.pcap"
    early_pcap(path)
    ours, theirs = protodump_run("-2", *form, str(path)), standard_run("-2", *form, "-r", str(path))
    assert ours.returncode == 0, ours.stderr
    if form == ("-T", "pdml"):
        assert ours.stdout.split("<packet>", 1)[1] == theirs.stdout.split("<packet>", 1)[1]
    else:
        assert ours.stdout == theirs.stdout
    if form == ("-V",):
        one = protodump_run("-V", str(path)).stdout
        # one pass: a tree per message (5), on its last frame; the second: 7 (each compressed one twice: on its
        # first frame, which fails to inflate, and on the next; the others once, on their first frame in the call)
        assert one.count("Reassembled websocket Fragments") == 5
        assert ours.stdout.count("Reassembled websocket Fragments") == 7


def rules_pcap(path) -> None:
    """Frames against RFC 6455's rules, as a stream read from the middle of a frame after a lost segment gives
    them (no game on the connection: tshark's own forms of what it hands up). Wireshark's reassembly and the
    plugin's then part (WebSocket.wireshark_call): a continuation that completes nothing leaves the frame marked
    fragmented, and a message of one frame after it is not handed up; a frame without FIN joins the message in
    progress whatever its opcode (3: reserved, shown as an unknown payload); an empty final frame completes the
    plugin's message but not Wireshark's, whose next call shows the plugin's first message waiting; a lone
    continuation is a message of its own (opcode 0: unknown); both directions of a loopback connection share one
    reassembly (keyed by addresses, not ports)."""
    from test_freeblox import tcp_pcap, upgrade
    frame = ws.encode_frame
    tcp_pcap(path, upgrade(False) + [
        (False, frame(0, b"lone")),
        (False, frame(2, b"a1", fin=False) + frame(0, b"b2", fin=False) + frame(0, b"c3") + frame(1, b"single")),
        (False, frame(2, b"x", fin=False) + frame(3, b"y", fin=False) + frame(1, b"z") + frame(0, b"w")),
        (False, frame(2, b"p", fin=False) + frame(0, b"", fin=True) + frame(1, b"q")),
        (False, frame(0, b"r")),
        (True, frame(1, b"hi", fin=False, mask=MASK)),
        (False, frame(2, b"srv", fin=False)),
        (True, frame(0, b"!", mask=MASK)),
        (False, frame(0, b"done"))])


def equal_to_tshark(protodump_run, standard_run, capture, *args) -> str:
    """protodump's output of `capture` with `args`, asserted equal byte for byte to tshark 4.0 + the plugin's."""
    ours, theirs = protodump_run(*args, str(capture)), standard_run(*args, "-r", str(capture))
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout
    return ours.stdout


ONE_PASS_FORMS = [(), ("-V",), ("-V", "-x"), ("-T", "json"), ("-T", "ek"), ("-q", "-z", "expert"),
                  ("-T", "fields", "-e", "frame.number", "-e", "frame.protocols", "-e", "websocket.fragment.count",
                   "-e", "websocket.payload.unknown", "-e", "data", "-e", "_ws.col.Protocol", "-e", "_ws.col.Info")]


@pytest.mark.parametrize("form", ONE_PASS_FORMS)
def test_wireshark_s_reassembly_apart_from_the_plugin_s(tmp_path, form, protodump_run, standard_run):
    """Whole frames against tshark 4.0 where its reassembly and the plugin's part (rules_pcap)."""
    path = tmp_path / "rules.pcap"
    rules_pcap(path)
    out = equal_to_tshark(protodump_run, standard_run, path, *form)
    if form == ("-V",):
        # the reserved opcode joined x's message; p's stayed open past the empty final frame; the loopback
        # directions' frames are one message
        assert "[3 Reassembled websocket Fragments (3 bytes): #8(1), #8(1), #8(1)]" in out
        assert "[2 Reassembled websocket Fragments (2 bytes): #9(1), #10(1)]" in out
        assert "[3 Reassembled websocket Fragments (6 bytes): #11(2), #12(3), #13(1)]" in out


LOST = ("-o", "freeblox.ws_port:8765")


@pytest.mark.parametrize("form", ONE_PASS_FORMS)
def test_a_stream_read_after_lost_segments(form, protodump_run, standard_run):
    """tests/data/freeblox-lost-segments.pcap: captures/freeblox-plain.pcap with segments lost and one reordered
    (tools/fuzz.py --replay freeblox:2036:0 --minimise), so the server's direction is read from the middle of
    frames: reserved opcodes, control frames without FIN, messages interleaved. Frame 5 holds the end of a PDU
    that stays incomplete (its start was lost): desegment_tcp's first round shows those bytes as TCP segment data
    and fences the columns before the rest. Against tshark 4.0 + the plugin, whole frames."""
    from conftest import ROOT
    capture = str(ROOT / "tests" / "data" / "freeblox-lost-segments.pcap")
    out = equal_to_tshark(protodump_run, standard_run, capture, *LOST, *form)
    if form == ():
        assert "[TCP segment of a reassembled PDU]WebSocket" in out.splitlines()[4]


NOISE = {
    # captures/freeblox-lossy.pcap cut short, segments lost (tools/fuzz.py --replay freeblox:2043:41 --minimise).
    # Read from the middle of a frame, the server's direction declares a 1,235,172,040-byte WebSocket frame in
    # frame 6: tcp_dissect_pdus waits for it (TCP segment data), and frame 9, a fast retransmission of earlier
    # bytes, is framed afresh. protodump frames the same without keeping the bytes (it stopped the direction).
    "freeblox-noise-length.pcap": (LOST, "[TCP Fast Retransmission] Unknown type 192 ,"),
    # the same capture spliced (freeblox:2042:73): frame 9, a fast retransmission, falls in the PDU frame 4
    # started, which frame 5 went past with a hole: tshark still keeps that PDU and stores the bytes there (TCP
    # segment data, no dissection). protodump handed them over again as a fresh segment.
    "freeblox-late-fill.pcap": ((), "[TCP Fast Retransmission] 8765 → 40321 [ACK] Seq=88780"),
    # a splice grew one segment (freeblox:2036:34, cut to 35 frames by delta debugging on tshark's output): later
    # segments overlap earlier ones with other bytes. reassemble.c puts the PDU together in stream order (the
    # lowest offset wins), shows each conflicting segment as tcp.segment.error with "[Conflicting data in segment
    # overlap]", and Info "[Illegal Segments]"; the second round's last frame declares a length past 2^31 ahead
    # (TCP segment data); a text message with control characters and broken UTF-8 (Line-based text data)
    "freeblox-conflicting-segments.pcap": ((), "[Illegal Segments]WebSocket Unknown Opcode [FIN]"),
    # captures/freeblox-lossy-spurious.pcap, truncated and flipped (freeblox:2046:29): frame 5 starts at the byte
    # before the next expected one and runs past it. tcp.c calls that no retransmission (a keep-alive's byte with
    # data after it), so tcp_dissect_pdus frames the segment from its first byte; protodump took it for late bytes
    # and kept them for nothing (the plugin's own stream framing does drop such a segment)
    "freeblox-keepalive-byte.pcap": ((), "freeblox 248 STREAM_ASSET grass (Texture, 122 bytes, PNG)"),
    # captures/freeblox-fragments.pcap with bytes overwritten, cut to 8 frames (freeblox:2046:94): frame 5, after
    # a gap, completes nothing: desegment_tcp's first round stores its first 1,045 bytes in the PDU that stays
    # incomplete, the second frames the last 7 as the start of another (TCP segment data, 7 bytes, not 1,052).
    # With frame 6 that one's 64-bit length is there but not its masking key: tshark reads the length then (2^32
    # less 7.8 MB ahead: behind in serial arithmetic), so frame 7 starts a new frame; protodump waited for the key
    "freeblox-second-round-start.pcap": ((), "Len=1052 TSval=605293855 TSecr=2310613387 [TCP segment of a"),
    # the whole case 2046:29, its first 82 frames: the server's last segment acknowledges client bytes never seen a
    # second time, so tcp.c sets the client's duplicate-ACK count to -1; that count is unsigned, so the segment,
    # behind the server's next sequence number, is a fast retransmission (handed to the WebSocket dissector), not
    # a retransmission (handed to nobody)
    "freeblox-unsigned-dupacks.pcap": ((), "[TCP Fast Retransmission] STREAM_ASSET grass (Texture, 122 bytes, PNG)"),
}


@pytest.mark.parametrize("form", ONE_PASS_FORMS)
@pytest.mark.parametrize("name", sorted(NOISE))
def test_tcp_dissect_pdus_on_a_noisy_stream(name, form, protodump_run, standard_run):
    """Lengths read from noise after lost segments, and late segments, framed as tcp_dissect_pdus does: against
    tshark 4.0 + the plugin, whole frames."""
    from conftest import ROOT
    capture = str(ROOT / "tests" / "data" / name)
    prefs, line = NOISE[name]
    out = equal_to_tshark(protodump_run, standard_run, capture, *prefs, *form)
    if form == ():
        assert line in out


def one_side_pcap(path, side: str) -> None:
    """A real recording (captures/freeblox-plain.pcap, the websockets library over loopback) cut to the frames
    one side sent: a tap that sees one direction."""
    import dpkt
    from conftest import ROOT
    with open(ROOT / "captures" / "freeblox-plain.pcap", "rb") as f:
        records = list(dpkt.pcap.Reader(f))
    first = dpkt.ethernet.Ethernet(records[0][1]).data
    client = (first.src, first.data.sport)
    with open(path, "wb") as out:
        w = dpkt.pcap.Writer(out)
        for ts, buf in records:
            ip = dpkt.ethernet.Ethernet(buf).data
            if ((ip.src, ip.data.sport) == client) == (side == "client"):
                w.writepkt(buf, ts)


@pytest.mark.parametrize("form", [(), ("-V", "-x"), ("-T", "json"), ("-T", "pdml"),
                                  ("-T", "fields", "-e", "frame.protocols", "-e", "data", "-e", "data.len", "-e",
                                   "http", "-e", "_ws.col.Info")])
def test_the_client_side_alone_is_http_continuations(tmp_path, form, protodump_run, standard_run):
    """Without the server's 101 the connection is never upgraded: tshark's HTTP shows each later segment (the
    client's masked WebSocket frames) as a "Continuation", a data item inside its tree (frame.protocols
    ...:http:data; io,phs counts http only). Whole frames against tshark 4.0; io,phs against tshark + plugin."""
    path = tmp_path / "client.pcap"
    one_side_pcap(path, "client")
    ours, theirs = protodump_run(*form, str(path)), standard_run(*form, "-r", str(path))
    assert ours.returncode == 0, ours.stderr
    if form == ("-T", "pdml"):
        assert ours.stdout.split("<packet>", 1)[1] == theirs.stdout.split("<packet>", 1)[1]
    else:
        assert ours.stdout == theirs.stdout
    if not form:
        assert ours.stdout.count(" HTTP ") == 12 and ours.stdout.count("Continuation") == 11
        from test_stats import phs_rows
        phs = [("-q", "-z", "io,phs", str(path)), ("-q", "-z", "io,phs", "-r", str(path))]
        assert phs_rows(protodump_run(*phs[0]).stdout) == phs_rows(standard_run(*phs[1]).stdout)
        assert phs_rows(protodump_run("-j", "2", *phs[0]).stdout) == phs_rows(standard_run(*phs[1]).stdout)


@pytest.mark.parametrize("form", [("-V",), ("-T", "json"), ("-q", "-z", "expert")])
def test_unknown_control_opcodes_are_tsharks(tmp_path, form, protodump_run, standard_run):
    """A control frame of a reserved opcode (11 to 15): tshark's payload `Unknown` item carries its undecoded note
    (ei_ws_payload_unknown, "Dissector for Websocket Opcode (N) code not implemented ..."), on both sides."""
    from test_freeblox import tcp_pcap, upgrade
    from whole_frame import compare
    path = tmp_path / "unknown-control.pcap"
    frame = ws.encode_frame
    tcp_pcap(path, upgrade(False) + [(False, frame(11, b"\x01\x02") + frame(9, b"p")),
                                     (True, frame(15, b"abc", mask=MASK)), (False, frame(12, b""))])
    ours, theirs = protodump_run(*form, str(path)), standard_run(*form, "-r", str(path))
    assert ours.returncode == 0, ours.stderr
    if form == ("-T", "json"):
        same, compared, left_out, differ = compare(ours.stdout, theirs.stdout)
        assert same == compared and compared >= 5 and not left_out, differ
    else:
        assert ours.stdout == theirs.stdout
    assert "Dissector for Websocket Opcode (11) code not implemented" in ours.stdout
    assert "Websocket Opcode (15)" in ours.stdout


def final_block_pcap(path) -> None:
    """A permessage-deflate connection whose server flushes some messages with a final block (BFINAL=1, RFC 7692
    7.2.3.4), each then a new stream: tshark's own context stays at the end of the first such stream and hands
    every later server message up as it came. Then an undecodable message, and a message after it on each side."""
    from test_freeblox import fuzz_messages, tcp_pcap, upgrade
    msgs = [m for _, m in fuzz_messages(5, 40)][:8]
    server, client = zlib.compressobj(wbits=-15), zlib.compressobj(wbits=-15)

    def flushed(z, m):
        return (z.compress(m) + z.flush(zlib.Z_SYNC_FLUSH))[:-4]

    def finished(m):
        z = zlib.compressobj(wbits=-15)
        return z.compress(m) + z.flush(zlib.Z_FINISH)

    def to_client(data):
        return False, ws.encode_frame(2, data, rsv=4)

    def to_server(m):
        return True, ws.encode_frame(2, flushed(client, m), rsv=4, mask=MASK)

    tcp_pcap(path, upgrade(True) + [to_client(flushed(server, msgs[0])), to_server(msgs[1]),
                                    to_client(finished(msgs[2])), to_client(finished(msgs[3])), to_server(msgs[4]),
                                    to_client(finished(msgs[5])), to_client(b"\xff\xfe\xfd"), to_server(msgs[6]),
                                    to_client(finished(msgs[7]))])


@pytest.mark.parametrize("form", [("-V", "-x"), ("-T", "json"), ("-q", "-z", "expert")])
def test_messages_after_a_final_deflate_block_are_tsharks(tmp_path, form, protodump_run, standard_run):
    """After a final block tshark's context (context takeover) answers every later message of that side with
    nothing: no "Decompression failed", the bytes handed up as they came. The plugin inflates them itself, each a
    new stream as protodump does, and no longer takes the raw hand-off for websocket.decompress off (which lost
    every later compressed message of the capture, the other side's too)."""
    from whole_frame import compare
    path = tmp_path / "final-block.pcap"
    final_block_pcap(path)
    ours, theirs = protodump_run(*form, str(path)), standard_run(*form, "-r", str(path))
    assert ours.returncode == 0, ours.stderr
    if form == ("-T", "json"):
        same, compared, left_out, differ = compare(ours.stdout, theirs.stdout)
        assert same == compared == 14 and not left_out, differ
        decoded = [layers_of(p, "freeblox") for p in packet_layers(ours.stdout)]
        # (the undecodable one leaves that side's shared context lost, on both sides: the last is not inflated)
        assert all(decoded[i] for i in (5, 6, 7, 8, 9, 10, 12)) and not decoded[11] and not decoded[13]
    else:
        assert ours.stdout == theirs.stdout
    assert "Decompression failed" not in ours.stdout


def test_messages_after_a_final_deflate_block_on_the_other_wireshark(tmp_path, protodump_run, other_run):
    """The same capture on the other Wireshark (4.4 beside 4.0): the game layers are protodump's."""
    path = tmp_path / "final-block.pcap"
    final_block_pcap(path)
    ours, theirs = protodump_run("-T", "json", str(path)), other_run("-T", "json", "-r", str(path))
    a, b = packet_layers(ours.stdout), packet_layers(theirs.stdout)
    assert len(a) == len(b) == 14
    assert [layers_of(x, "freeblox") for x in a] == [layers_of(y, "freeblox") for y in b]
    assert sum(bool(layers_of(x, "freeblox")) for x in a) == 7


def empty_message_pcap(path) -> None:
    """A permessage-deflate connection (context takeover) whose server sends an empty message, deflated to the one
    byte RFC 7692 7.2.3.6 shows (an empty stored block, `00`), between real messages of both sides."""
    from test_freeblox import fuzz_messages, tcp_pcap, upgrade
    msgs = [m for _, m in fuzz_messages(5, 40)][:5]
    server, client = zlib.compressobj(wbits=-15), zlib.compressobj(wbits=-15)

    def flushed(z, m):
        return (z.compress(m) + z.flush(zlib.Z_SYNC_FLUSH))[:-4]

    empty = flushed(server, b"")
    assert empty == b"\x00"
    tcp_pcap(path, upgrade(True) + [(False, ws.encode_frame(2, flushed(server, msgs[0]), rsv=4)),
                                    (False, ws.encode_frame(2, empty, rsv=4)),
                                    (False, ws.encode_frame(2, flushed(server, msgs[1]), rsv=4)),
                                    (True, ws.encode_frame(2, flushed(client, msgs[2]), rsv=4, mask=MASK)),
                                    (False, ws.encode_frame(2, flushed(server, msgs[3]), rsv=4))])


@pytest.mark.parametrize("form", [("-V", "-x"), ("-T", "json"),
                                  ("-T", "fields", "-e", "frame.protocols", "-e", "freeblox.id")])
def test_a_message_that_inflates_to_nothing_is_tsharks(tmp_path, form, protodump_run, standard_run):
    """tshark makes no buffer of 0 bytes: it hands an empty deflated message up as it came. The plugin took that
    for websocket.decompress off, so it showed the byte as a Freeblox packet and inflated no later message of the
    capture; it now sees that the message inflates to nothing, shows nothing for it and goes on inflating."""
    path = tmp_path / "empty-message.pcap"
    empty_message_pcap(path)
    out = equal_to_tshark(protodump_run, standard_run, path, *form)
    if form[0] == "-T" and form[1] == "fields":
        shown = [bool(line.split("\t")[1]) for line in out.splitlines()]
        # the handshake's segments, then the messages: all but the empty one decoded
        assert shown[-5:] == [True, False, True, True, True], out
    if form == ("-V", "-x"):
        assert "Decompressed payload (0 bytes)" not in out


def test_a_message_that_inflates_to_nothing_on_the_other_wireshark(tmp_path, protodump_run, other_run):
    """The same capture on the other Wireshark (4.4 beside 4.0): the game layers are protodump's."""
    path = tmp_path / "empty-message.pcap"
    empty_message_pcap(path)
    ours, theirs = protodump_run("-T", "json", str(path)), other_run("-T", "json", "-r", str(path))
    a, b = packet_layers(ours.stdout), packet_layers(theirs.stdout)
    assert [layers_of(x, "freeblox") for x in a] == [layers_of(y, "freeblox") for y in b]
    assert [bool(layers_of(x, "freeblox")) for x in a][-5:] == [True, False, True, True, True]


def big_frame_pcap(path, deflate: bool) -> None:
    """A server that sends a 1.2 MB asset in one frame (Node's ws sends each message as one frame), over 829 TCP
    segments, then a message on each side."""
    import random
    from test_freeblox import fuzz_messages, tcp_pcap, upgrade
    msgs = [m for _, m in fuzz_messages(5, 40)][:4]
    asset = b"\x03assets/big\x00big\x00\x00" + random.Random(7).randbytes(1_200_000)
    z = zlib.compressobj(wbits=-15)

    def frame(m):
        return ws.encode_frame(2, (z.compress(m) + z.flush(zlib.Z_SYNC_FLUSH))[:-4] if deflate else m,
                               rsv=4 if deflate else 0)
    big = frame(asset)
    assert len(big) > MAX_PDU
    tcp_pcap(path, upgrade(deflate) + [(False, frame(msgs[0]))]
             + [(False, big[i:i + 1448]) for i in range(0, len(big), 1448)]
             + [(False, frame(msgs[2])), (True, ws.encode_frame(2, msgs[3], mask=MASK))])


@pytest.mark.parametrize("deflate", [False, True], ids=["plain", "deflate"])
def test_a_frame_over_a_mebibyte_is_framed_as_tshark_frames_it(tmp_path, deflate, protodump_run, standard_run):
    """tshark's tcp_dissect_pdus reassembles a WebSocket frame of any length; protodump frames one up to a
    message's limit (MAX_FRAME: 16 MiB and its header), not the 1 MiB of the other stream protocols, which
    stopped the direction at the asset (every later segment undecoded, in both halves). Whole -V -x output."""
    path = tmp_path / "big-frame.pcap"
    big_frame_pcap(path, deflate)
    ours, theirs = protodump_run("-V", "-x", str(path)), standard_run("-V", "-x", "-r", str(path))
    assert ours.returncode == 0, ours.stderr
    a, b = ours.stdout.splitlines(), theirs.stdout.splitlines()     # (10 MB each: no diff of the whole)
    first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    assert first is None and len(a) == len(b), (first, a[first:first + 2], b[first:first + 2]) if first else len(a)
    summary = protodump_run(str(path)).stdout.splitlines()
    assert "STREAM_ASSET big (, 1200000 bytes, unknown format)" in summary[-3] and "freeblox" in summary[-1]
    assert "Cannot frame" not in ours.stdout


def test_text_lines_as_format_text_shows_them(tmp_path, protodump_run, standard_run):
    """A text message no dissector takes is tshark's Line-based text data: lines end at LF, CRLF or a lone CR;
    control characters are escaped (octal for those without a letter); broken UTF-8 is replaced as format_text
    does it, not as ENC_UTF_8 does (an overlong "/" is decoded, a 5-byte lead takes its continuation bytes)."""
    from test_freeblox import tcp_pcap, upgrade
    lines = [b"a\xfa\xb3b", b"a\xb3\xb3b", b"a\xe8/b", b"a\xff\xb3\xb3b", b"a\xc0\xafb", b"a\xed\xa0\x80b",
             b"a\xf4\x90\x80\x80b", b"a\xf8\x88\x80\x80\x80b", b"a\xf0\x9f\x98b", b"a\xe8\xb3\xb3\xb3b",
             b"a\xfa\xb3\xb3\xb3\xb3\xb3\xb3b", b"\x01\x0f\x7f\t\x1b", b"lone\rcr\r\ncrlf", "é✌".encode()]
    path = tmp_path / "text.pcap"
    tcp_pcap(path, upgrade(False) + [(False, ws.encode_frame(1, b"\n".join(lines)))], server=("127.0.0.1", 8999))
    out = equal_to_tshark(protodump_run, standard_run, path, "-V")
    text = out[out.index("Line-based text data (16 lines)"):].splitlines()
    assert text[1:3] == ["    a\ufffdb\\n", "    a\ufffd\ufffdb\\n"] and text[5] == "    a/b\\n"
    assert text[12] == "    \\001\\017\\177\\t\\033\\n" and text[13:15] == ["    lone\\r", "    cr\\r\\n"]


@pytest.mark.parametrize("form", [(), ("-V",), ("-T", "json")])
def test_handshake_lines_as_tshark_shows_and_holds_them(tmp_path, form, protodump_run, standard_run):
    """HTTP's lines with bytes past ASCII and control characters: each line labelled as format_text shows it, as it
    came (an unknown header not as "Request line: ...", a known one not with its canonical name), the fields'
    values ENC_ASCII (a U+FFFD per byte past 0x7F), the full URI's host as format_text shows it, the Info column
    format_text's."""
    from test_freeblox import tcp_pcap, upgrade
    request, answer = upgrade(False)
    req = request[1].replace(b"GET /game", b"GET /g\xc3\xa9\xfa").replace(
        b"Host: h\r\n", b"Host: h\xc3\xa9\r\nX-Test: caf\xc3\xa9 \xfa\xb3 \xc0\xaf\x01\x7f\tend\r\n"
                        b"User-Agent: \xc3\xa9\xe8/x\r\nOrigin: http://o\r\nsec-websocket-protocol:  p \r\n")
    resp = answer[1].replace(b"Upgrade: websocket\r\n", b"Upgrade: websocket\r\nServer: s\xc3\xa9rv\r\nX-Other: \xc3\xa9\r\n")
    path = tmp_path / "lines.pcap"
    tcp_pcap(path, [(True, req), (False, resp)], server=("127.0.0.1", 8999))
    out = equal_to_tshark(protodump_run, standard_run, path, *form)
    if form == ("-V",):
        assert "    X-Test: café \ufffd /\\001\\177\\tend\\r\\n\n    User-Agent: é\ufffd/x\\r\\n\n" in out
        assert "[Full request URI: http://hé/g\ufffd\ufffd\ufffd]" in out
        assert "    sec-websocket-protocol:  p \\r\\n" in out      # a known header: its line as it came
    if form == ("-T", "json"):
        assert '"http.sec_websocket_protocol": "p "' in out            # its value: the blanks after the colon skipped


def test_a_frame_over_the_limit_that_arrives_whole_is_refused_where_it_completes(tmp_path, protodump_run,
                                                                                 standard_run):
    """A 17 MiB asset in one frame, past MAX_FRAME: its segments are TCP segment data on both sides (protodump
    keeps none of their bytes); where the last arrives tshark reassembles it, protodump shows the rest of that
    direction undecoded with an Error. The other direction goes on as in tshark."""
    from test_freeblox import fuzz_messages, tcp_pcap, upgrade
    msgs = [m for _, m in fuzz_messages(5, 40)][:4]
    big = ws.encode_frame(2, b"\x03assets/big\x00big\x00\x00" + bytes(ws.MAX_FRAME))
    path = tmp_path / "over-limit.pcap"
    chunks = [big[i:i + 60000] for i in range(0, len(big), 60000)]
    chunks[-1] += ws.encode_frame(2, msgs[2])           # the segment completing it holds the next message too
    tcp_pcap(path, upgrade(False) + [(False, ws.encode_frame(2, msgs[0]))] + [(False, c) for c in chunks]
             + [(True, ws.encode_frame(2, msgs[3], mask=MASK))])
    ours, theirs = protodump_run(str(path)), standard_run("-r", str(path))
    assert ours.returncode == 0, ours.stderr
    a, b = ours.stdout.splitlines(), theirs.stdout.splitlines()
    assert a[:-2] == b[:-2] and a[-1] == b[-1] and "freeblox" in a[-1]
    assert "[TCP segment of a reassembled PDU]" in a[-3] and "WebSocket Binary" in b[-2]
    assert a[-2].endswith("[TCP segment of a reassembled PDU][Undecoded: 14 bytes]")
    expert = protodump_run("-q", "-z", "expert", str(path)).stdout
    assert f"Cannot reassemble a PDU of {len(big)} bytes (over the limit of {ws.MAX_FRAME})" in expert


def test_a_frame_over_a_mebibyte_on_the_other_wireshark(tmp_path, protodump_run, other_run):
    path = tmp_path / "big-frame.pcap"
    big_frame_pcap(path, True)
    ours, theirs = protodump_run("-T", "json", str(path)), other_run("-T", "json", "-r", str(path))
    a, b = packet_layers(ours.stdout), packet_layers(theirs.stdout)
    assert len(a) == len(b) and [layers_of(x, "freeblox") for x in a] == [layers_of(y, "freeblox") for y in b]
    assert sum(bool(layers_of(x, "freeblox")) for x in a) == 4


def test_a_browsers_upgrade_headers_are_tsharks(tmp_path, protodump_run, standard_run):
    """A browser's upgrade (Accept, Accept-Encoding, Accept-Language, Cache-Control, Referer, X-Forwarded-For,
    Origin, Pragma) and a refusal (302 with Location, Set-Cookie, Last-Modified, WWW-Authenticate and a
    Content-Length, which tshark reads as a number too): every header tshark names, in -V and -T json -x."""
    request = (b"GET /play HTTP/1.1\r\nHost: game.example:8765\r\nConnection: Upgrade\r\nPragma: no-cache\r\n"
               b"Cache-Control: no-cache\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\nUpgrade: websocket\r\n"
               b"Origin: http://game.example\r\nSec-WebSocket-Version: 13\r\nAccept-Encoding: gzip, deflate, br\r\n"
               b"Accept-Language: en-US,en;q=0.9\r\nAccept: */*\r\nReferer: http://game.example/lobby\r\n"
               b"X-Forwarded-For: 192.0.2.7\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               b"Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n")
    exchanges_pcap(tmp_path / "browser.pcap", [
        (40001, request, b"HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nSet-Cookie: a=b\r\n"
                         b"Last-Modified: Tue, 01 Dec 2026 10:00:00 GMT\r\nWWW-Authenticate: Basic realm=x\r\n"
                         b"Content-Length: 0\r\n\r\n"),
        (40002, request, b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")])
    for form in (("-V",), ("-T", "json", "-x")):
        ours = protodump_run(*form, "-r", "browser.pcap", cwd=tmp_path)
        theirs = standard_run(*form, "-r", "browser.pcap", cwd=tmp_path)
        assert ours.stdout == theirs.stdout
    assert '"http.referer": "http://game.example/lobby"' in ours.stdout and '"http.content_length": "0"' in ours.stdout
