"""The classes of difference a fuzz campaign (tools/fuzz.py) found between protodump and tshark 4.0 + plugin, each on
a small capture made from a bundled one, compared against real tshark: game layers equal frame by frame, and the
transport state the class is about (tcp.completeness, the spurious-retransmission tag).

- a segment arriving after the peer acknowledged it: tshark's spurious retransmission, handed to nobody; any
  segment TCP's analysis calls a retransmission likewise (the data after a FIN that came first);
- SYN and SYN-ACK swapped: tshark's conversation completeness, and so where a stream's first bytes count as
  captured;
- an out-of-order segment filling a hole of a pending PDU of tshark's own reassembly (a retransmission does not);
- a duplicated segment whose copy differs: the first copy's bytes are reassembled (the later one is a
  retransmission);
- a damaged HTTP request line (no HTTP to tshark, so no WebSocket), an Upgrade header tshark does not accept, and
  a head line without a colon (tshark's message ends before it: the rest is WebSocket);
- a permessage-deflate message that ends inside a deflate block (zlib decodes on with the next message);
- a WebSocket frame declaring a length 2^31 or more ahead (tshark's serial arithmetic restarts framing);
- an Iceball file of 0 bytes (zlib of nothing is valid: an empty file on both sides).
"""
from __future__ import annotations

import sys
import zlib

import pytest

from conftest import ROOT, TSHARK

sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests"))
import fuzz  # noqa: E402
import hostile_captures  # noqa: E402

pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")


def made(name: str, frames) -> str:
    path = fuzz.scratch_dir() / name
    fuzz.write_frames(path, frames)
    return str(path)


def swapped(capture: str, i: int, j: int) -> list:
    """The capture with frames i and j (1-based) exchanged, timestamps kept in place."""
    frames = fuzz.read_frames(fuzz.CAPTURES / capture)
    a, b = i - 1, j - 1
    frames[a], frames[b] = (frames[a][0], frames[b][1]), (frames[b][0], frames[a][1])
    return frames


def with_payloads(capture: str, edits: dict) -> list:
    """The capture with the TCP payloads of some frames (1-based) replaced; later sequence numbers follow."""
    frames = fuzz.read_frames(fuzz.CAPTURES / capture)
    for i, edit in sorted(edits.items()):
        payload = edit(fuzz.payload_of(frames[i - 1][1]))
        frame, delta = fuzz.with_payload(frames[i - 1][1], payload)
        frames[i - 1] = (frames[i - 1][0], frame)
        fuzz.shift_tcp(frames, i - 1, delta)
    return frames


def same_game_layers(path: str, names, protodump_run, tshark_run, *prefs) -> tuple[str, str]:
    ours = protodump_run(*prefs, "-T", "json", "-r", path).stdout
    theirs = tshark_run(*prefs, "-T", "json", "-r", path).stdout
    mine, their = fuzz.game_layers(ours, names), fuzz.game_layers(theirs, names)
    assert len(mine) == len(their)
    assert [n + 1 for n in range(len(mine)) if mine[n] != their[n]] == []
    return ours, theirs


def fields(run, path: str, *names: str) -> list[str]:
    args = [a for n in names for a in ("-e", n)]
    return run("-r", path, "-T", "fields", *args).stdout.splitlines()


# --- TCP --------------------------------------------------------------------------------------------------------------

def test_segment_already_acknowledged_is_a_spurious_retransmission(protodump_run, tshark_run):
    """Iceball over TCP: the server's 3,601-byte segment after the client's ACK of it. tshark 4.0 tags it
    "[TCP Spurious Retransmission]" (and flags it a retransmission too) and hands it to no dissector; protodump
    took it as new stream data."""
    path = made("class-spurious.pcap", swapped("iceball-tcp-session.pcap", 8, 9))
    same_game_layers(path, ("iceball",), protodump_run, tshark_run)
    want = fields(tshark_run, path, "tcp.analysis.flags", "tcp.analysis.spurious_retransmission",
                  "tcp.analysis.retransmission", "_ws.col.Info")
    assert fields(protodump_run, path, "tcp.analysis.flags", "tcp.analysis.spurious_retransmission",
                  "tcp.analysis.retransmission", "_ws.col.Info") == want
    assert "[TCP Spurious Retransmission] 20737" in want[8]


def test_http_answer_after_its_ack_upgrades_nothing(protodump_run, standard_run):
    """Freeblox: the 101 answer arriving after the client acknowledged it is a spurious retransmission, so
    tshark's HTTP never sees the upgrade and no WebSocket (nor Freeblox) follows."""
    path = made("class-spurious-101.pcap", swapped("freeblox-session.pcap", 6, 7))
    ours, _ = same_game_layers(path, ("freeblox",), protodump_run, standard_run)     # (tshark 4.0's TCP analysis)
    assert '"freeblox"' not in ours


def test_data_after_its_fin(protodump_run, tshark_run):
    """Iceball over TCP: the client's FIN before its last data segment. The data is then a retransmission to
    tshark (below the FIN's next sequence number) and handed to no dissector, though it follows on in the byte
    stream protodump had seen (a FIN carries no byte)."""
    path = made("class-fin-first.pcap", swapped("iceball-tcp-spec.pcap", 9, 10))
    same_game_layers(path, ("iceball",), protodump_run, tshark_run)
    assert "[TCP Retransmission]" in fields(protodump_run, path, "_ws.col.Info")[9]


def test_gap_seen_on_a_pure_ack_only(protodump_run, tshark_run):
    """iceball-tcp-bad.pcap without the client's segment in frame 11: the client's next frame is a pure ACK, which
    TCP flags "previous segment not captured"; the data segment after it follows on to TCP, so no stream layer
    notes a gap there (the plugin never sees the ACK: its gap is TCP's flag on the data segment)."""
    frames = fuzz.read_frames(fuzz.CAPTURES / "iceball-tcp-bad.pcap")
    del frames[10]
    path = made("class-gap-on-ack.pcap", frames)
    same_game_layers(path, ("iceball",), protodump_run, tshark_run, "-o", "iceball.numbering:spec")


@pytest.mark.parametrize("order", [(1, 2), (2, 3)])
def test_handshake_out_of_order(order, protodump_run, standard_run):
    """SYN-ACK before SYN (or before the ACK): tshark counts no SYN after the first frame and nothing of the first
    frame but a SYN; the plugin reads tcp.completeness to know whether a direction's start was captured."""
    path = made(f"class-handshake-{order[0]}{order[1]}.pcap", swapped("rutentoy-messages.pcap", *order))
    same_game_layers(path, ("rutentoy",), protodump_run, standard_run)       # (tshark 4.0's tcp.completeness)
    assert fields(protodump_run, path, "tcp.completeness") == fields(standard_run, path, "tcp.completeness")


@pytest.mark.parametrize("first", ["original", "copy"])
def test_duplicate_whose_copy_differs(first, protodump_run, tshark_run):
    """A middle segment of Freeblox's 108 KB STREAM_ASSET (76 segments, tshark's own reassembly) sent twice, the
    copies differing by one bit: the later one is a retransmission, so the first copy's bytes are reassembled,
    by tshark and by protodump."""
    frames = fuzz.read_frames(fuzz.CAPTURES / "freeblox-session.pcap")
    ts, frame = frames[14]
    payload = bytearray(fuzz.payload_of(frame))
    payload[len(payload) // 2] ^= 0x10
    copy = (ts, fuzz.with_payload(frame, bytes(payload))[0])
    frames.insert(15 if first == "original" else 14, copy)
    same_game_layers(made(f"class-duplicate-{first}.pcap", frames), ("freeblox",), protodump_run, tshark_run)


@pytest.mark.parametrize("late", [0.0, 0.01])
def test_late_segment_inside_a_pending_pdu(late, protodump_run, standard_run):
    """Two middle segments of Freeblox's 108 KB STREAM_ASSET exchanged (timestamps kept in place). The late one
    is out-of-order (within 3 ms): tshark's own reassembly stores it in the pending PDU, which completes; delayed
    by 10 ms it is a retransmission and the PDU is lost. protodump followed the second rule for both."""
    frames = fuzz.read_frames(fuzz.CAPTURES / "freeblox-plain.pcap")
    i = 71
    frames[i], frames[i + 1] = (frames[i][0], frames[i + 1][1]), (frames[i + 1][0] + late, frames[i][1])
    frames[i + 2:] = [(ts + late, f) for ts, f in frames[i + 2:]]
    path = made(f"class-late-{late}.pcap", frames)
    # (tshark 4.0's reassembly: 4.4 takes the 10 ms late segment otherwise)
    ours, _ = same_game_layers(path, ("freeblox",), protodump_run, standard_run, "-o", "freeblox.ws_port:8765")
    assert ("108278" in ours) == (not late)


# --- the WebSocket handshake ------------------------------------------------------------------------------------------

REQUEST, RESPONSE = 4, 6          # freeblox-session.pcap: the upgrade request and its 101 answer


@pytest.mark.parametrize("frame,old,new,upgrades", [
    (REQUEST, b"GET /play", b"GXT /play", False),               # no such method
    (REQUEST, b"GET /play HTTP/1.1", b"get /play http/1.1", False),    # methods are case-sensitive
    (REQUEST, b"HTTP/1.1\r\n", b"HTTP/2.0\r\n", False),          # tshark's HTTP heuristic wants HTTP/1.x
    (REQUEST, b"HTTP/1.1\r\n", b"HTTP/1.1 \r\n", False),         # ... at the very end of the line
    (REQUEST, b"GET /play", b"M-GET /play", True),              # RFC 2774's prefix
    (REQUEST, b"Upgrade: websocket", b"X-Upgrade: websocket", True),   # the request's Upgrade is not needed
    (RESPONSE, b"Upgrade: websocket", b"Upgrade: websocket ", False),  # the answer's value, compared as is
    (RESPONSE, b"Upgrade: websocket", b"Upgrade : websocket", False),
    (RESPONSE, b"Upgrade: websocket", b"upgrade:\tWebSocket", True),
    (RESPONSE, b"HTTP/1.1 101 Switching Protocols", b"HTTP/1.1 101", True),
    (RESPONSE, b"Connection: Upgrade", b"Conn(ection: Upgrade", True),     # a bad name: only an expert
    (RESPONSE, b"Server: Python", b"Server Python", True),   # no colon: the head ends before it (WebSocket after)
    (REQUEST, b"Host:", b"Ho=st:", True),
])
def test_upgrade_as_tshark_parses_it(frame, old, new, upgrades, protodump_run, tshark_run):
    frames = with_payloads("freeblox-session.pcap", {frame: lambda p: p.replace(old, new, 1)})
    path = made(f"class-upgrade-{frame}-{new[:12].hex()}.pcap", frames)
    ours, _ = same_game_layers(path, ("freeblox",), protodump_run, tshark_run)
    assert ('"freeblox"' in ours) == upgrades


def test_header_line_ended_by_a_lone_cr(protodump_run, tshark_run):
    """freeblox-nocontext.pcap's 101 with the LF after `client_no_context_takeover` damaged: tshark ends a line at
    a lone CR too, so the parameter still holds (no shared inflate context) and the damaged message fails on its own;
    protodump once read one long line."""
    def damage(p: bytes) -> bytes:
        assert b"client_no_context_takeover\r\nServer" in p
        return p.replace(b"client_no_context_takeover\r\nServer", b"client_no_context_takeover\r\x02Server", 1)
    def bad_block(p: bytes) -> bytes:                # a client message whose deflate data is an invalid block
        assert p[0] == 0xC2 and p[1] & 0x80
        return p[:6] + bytes([0x07 ^ p[2]]) + p[7:]
    frames = with_payloads("freeblox-nocontext.pcap", {RESPONSE: damage, 12: bad_block})
    path = made("class-lone-cr.pcap", frames)
    ours, _ = same_game_layers(path, ("freeblox",), protodump_run, tshark_run)
    shown = protodump_run("-V", "-r", path).stdout
    # tshark's own expert for the message zlib refuses, not the lost-context one a wrong reading would give
    assert "Decompression failed" in shown and "shared context was lost" not in shown


# --- WebSocket frames and messages ------------------------------------------------------------------------------------

def test_message_ending_inside_a_deflate_block(protodump_run, tshark_run):
    """A compressed message cut 3 bytes short ends inside a deflate block: zlib (Python's and tshark's) returns
    what it decoded and goes on with the next message's bytes as the same block, and so does the plugin now
    (before, it closed the message with a marker block that inflated into extra bytes)."""
    def cut(p: bytes) -> bytes:
        assert p[0] == 0xC2 and p[1] == len(p) - 2 < 126          # one compressed server frame, short length
        return bytes([0xC2, p[1] - 3]) + p[2:-3]
    path = made("class-deflate-cut.pcap", with_payloads("freeblox-session.pcap", {11: cut}))
    same_game_layers(path, ("freeblox",), protodump_run, tshark_run)


def test_frame_length_wrapping_sequence_space(protodump_run, tshark_run, standard_run):
    """A frame declaring 0xF0000000 bytes after a whole one: tshark's multi-segment PDU would end 2^31 or more
    ahead, which serial arithmetic takes as behind, so the next segment starts a frame again; protodump used to
    stop the direction. The frame's own bytes are TCP segment data (whole frames against tshark 4.0)."""
    huge = b"\x82\x7f" + (0xF0000000).to_bytes(8, "big") + b"xyz"
    path = made("class-ws-wrap.pcap", with_payloads("freeblox-session.pcap", {9: lambda p: p + huge}))
    ours, _ = same_game_layers(path, ("freeblox",), protodump_run, tshark_run)
    assert ours.count('"freeblox"') > 20
    whole = protodump_run("-V", "-r", path).stdout
    assert whole == standard_run("-V", "-r", path).stdout and "TCP segment data (13 bytes)" in whole


# --- inflate ----------------------------------------------------------------------------------------------------------

def test_empty_iceball_file(protodump_run, tshark_run):
    """zlib of nothing is a valid stream: both halves show a file of 0 bytes (the plugin said "does not
    inflate": Wireshark's C inflate makes no empty buffer)."""
    assert zlib.decompress(zlib.compress(b"")) == b""
    path = str(hostile_captures.iceball_transfer("class-empty-file.pcap", content=b""))
    same_game_layers(path, ("iceball",), protodump_run, tshark_run)
    info = tshark_run("-r", path).stdout
    assert "FILE_END big.lua (8 -> 0 bytes)" in info and "does not inflate" not in info
