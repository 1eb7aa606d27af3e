"""engine/streams.py + lua/rt_stream.lua on real kernel TCP: a length-prefixed test protocol (tests/stream_lp.py)
sent over loopback in a private namespace (MTU 1500, offloads off: PDUs span segments), then the capture edited
(a segment dropped, two swapped, one duplicated, the handshake cut). Each PDU must be in the frame tshark puts it
in, and the plugin's layers must equal protodump's packet by packet."""
from __future__ import annotations

import importlib.util
import io
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from conftest import LUA_ERROR, layers_of, packet_layers
from hypothesis import given, settings
from hypothesis import strategies as st
from protodump.capture.files import RawFrame
from protodump.engine.dispatch import Dispatcher, Settings
from protodump.engine.lua_backend import generate
from protodump.output.json_out import JsonWriter
from protodump.reassembly.tcp import MAX_PDU
from stream_lp import PORT, LengthPrefixed, pdu

from protodump.session import packets

TOOLS = Path(__file__).resolve().parent.parent / "tools"


def _tool(name):
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


netns, edit = _tool("netns_record"), _tool("pcap_edit")
TSHARK = shutil.which("tshark")

A = pdu(1, b"hello")
B3 = [pdu(2, b"x" * 10), pdu(3, b"y" * 20), pdu(4, b"z" * 5)]
BIG = pdu(5, bytes(range(256)) * 16)                 # 4099 bytes: three segments
P6 = pdu(6, b"split-me-please")
P7, P8, P9 = pdu(7, b"A" * 30), pdu(8, b"B" * 8), pdu(9, b"C" * 40)
REPLY = pdu(17, b"r" * 3000)
SCRIPT = [("c2s", A), ("s2c", pdu(16, b"reply")), ("c2s", b"".join(B3)), ("c2s", BIG),
          ("c2s", P6[:5]), ("c2s", P6[5:]),
          ("c2s", P7[:10]), ("c2s", P7[10:] + P8 + P9[:7]), ("c2s", P9[7:]),
          ("s2c", REPLY), ("c2s", pdu(1, b"last")),
          ("c2s", pdu(0, b"bad")), ("c2s", pdu(1, b"after")), ("s2c", pdu(2, b"still"))]


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    """name -> pcap path: the recording and its edits."""
    reason = netns.available()
    if reason:
        pytest.skip(f"cannot record: {reason}")
    out = tmp_path_factory.mktemp("streams")
    base = out / "base.pcap"
    netns.record_tcp(SCRIPT, str(base), server_port=PORT)
    segs = edit.tcp_segments(base)
    frames = len(edit.read_pcap(base)[1])

    def frame_of(payload: bytes) -> int:
        return next(n for n, _, _, data in segs if data.startswith(payload))

    every = list(range(1, frames + 1))
    p6a, p6b = frame_of(P6[:5]), frame_of(P6[5:])
    b3 = frame_of(B3[0])
    edits = {
        "drop_p7_head": [n for n in every if n != frame_of(P7[:10])],
        "drop_big_middle": [n for n in every if n != frame_of(BIG[1448:1460])],
        "swap_p6": [p6b if n == p6a else p6a if n == p6b else n for n in every],
        "dup_b3": [m for n in every for m in ((n, n) if n == b3 else (n,))],
        "no_handshake": every[3:],
    }
    paths = {"base": base}
    for name, order in edits.items():
        paths[name] = out / f"{name}.pcap"
        edit.reorder(base, paths[name], order)
    # the first segment of BIG replaced by a retransmission of B3's last 10 bytes followed by it: new bytes in a
    # retransmission are never handed over (tshark), and TCP's next expected sequence number moves past them
    header, records = edit.read_pcap(base)
    big = frame_of(BIG[:12])
    seq = next(q for n, _, q, _ in segs if n == big)
    records[big - 1] = edit.with_tcp_payload(records[big - 1], seq - 10, b"".join(B3)[-10:] + BIG[:1448])
    paths["overlapping_retransmission"] = out / "overlapping_retransmission.pcap"
    edit.write_pcap(paths["overlapping_retransmission"], header, records)
    return paths


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("lua") / "lp.lua"
    path.write_text(generate([LengthPrefixed()]))
    return path


def dissect(path, protocol=None, settings=None) -> list:
    dispatcher = Dispatcher([protocol or LengthPrefixed()], settings)
    return list(packets(path, dispatcher=dispatcher))


def kinds(packet) -> list:
    """Per game layer: the PDU type, or ("data", bytes, [expert messages])."""
    out = []
    for layer in packet.games:
        t = layer.item.find("lp.type")
        if t is not None:
            out.append(t.value)
        else:
            experts = [i.expert_info.message for i in layer.item.walk() if i.expert_info]
            out.append(("data", layer.item.find("lp.data").value, experts))
    return out


def by_payload(ps, start: bytes):
    return next(p for p in ps if p.decoded.payload.startswith(start))


def test_pdus_in_order(captures):
    ps = dissect(captures["base"])
    assert kinds(by_payload(ps, A)) == [1]
    assert kinds(by_payload(ps, B3[0])) == [2, 3, 4]               # coalesced: three layers in one frame
    first, middle, last = [p for p in ps if p.decoded.payload and p.decoded.payload[:12] in BIG]
    assert kinds(first) == kinds(middle) == [] and kinds(last) == [5]
    layer = last.games[0]
    assert layer.item.source == 1 and last.sources[1].name == "Reassembled TCP" and last.sources[1].data == BIG
    # the generated Lua reassembles by itself: tshark's TCP shows no "Reassembled TCP Segments" for it ...
    assert last.decoded.reassembled is None and [layer.proto for layer in last.layers()][-2:] == ["tcp", "lp"]
    # ... but does for a protocol tshark dissects itself through its TCP reassembly (websocket)
    c_only = LengthPrefixed()
    c_only.lua = False
    last_c = next(p for p in dissect(captures["base"], c_only) if p.number == last.number)
    pieces, whole, source, conflicts = last_c.decoded.reassembled[0]
    assert [f for f, _, _ in pieces] == [first.number, middle.number, last.number] and whole == BIG and conflicts == ()
    assert last_c.sources[source].data == BIG     # its items span the reassembled buffer
    assert [layer.proto for layer in last_c.layers()][-2:] == ["tcp.segments", "lp"]
    tail = by_payload(ps, P7[10:])
    assert kinds(tail) == [7, 8] and [g.item.source for g in tail.games] == [1, 0]
    assert kinds(by_payload(ps, P9[7:])) == [9]
    assert kinds(by_payload(ps, REPLY[:20])) == [] and kinds(by_payload(ps, pdu(1, b"last"))) == [1]


def test_a_direction_that_cannot_be_framed_stops_and_the_other_goes_on(captures):
    ps = dissect(captures["base"])
    [(_, data, experts)] = kinds(by_payload(ps, pdu(0, b"bad")))
    assert data == pdu(0, b"bad") and experts[0].startswith("Cannot frame the stream (no PDU can start here)")
    bad = by_payload(ps, pdu(0, b"bad")).games[0].item
    assert any(i.expert_info and i.expert_info.abbrev == "lp.malformed" for i in bad.walk())
    assert kinds(by_payload(ps, pdu(1, b"after"))) == [("data", pdu(1, b"after"), [])]
    assert kinds(by_payload(ps, pdu(2, b"still"))) == [2]


def test_a_lost_segment_is_skipped_and_the_stream_resynchronises(captures):
    ps = dissect(captures["drop_p7_head"])
    tail = by_payload(ps, P7[10:])
    assert kinds(tail) == [("data", P7[10:], ["Previous segment(s) not captured: 23 bytes skipped to resynchronise"]),
                           8]
    assert kinds(by_payload(ps, P9[7:])) == [9]                    # and reassembly goes on after it
    assert kinds(by_payload(ps, pdu(1, b"last"))) == [1]


def test_a_hole_in_a_pdu_loses_only_that_pdu(captures):
    ps = dissect(captures["drop_big_middle"])
    assert all(5 not in kinds(p) for p in ps)
    assert kinds(by_payload(ps, P6[5:])) == [6]


def test_late_and_duplicate_segments_are_not_dissected_again(captures):
    ps = dissect(captures["dup_b3"])
    assert sum(kinds(p) == [2, 3, 4] for p in ps) == 1
    swapped = dissect(captures["swap_p6"])
    # the second half arrives first (after a gap): no PDU starts in it; the first half, late, is dropped (tshark)
    assert kinds(by_payload(swapped, P6[5:]))[0][0] == "data"
    assert kinds(by_payload(swapped, P6[:5])) == []
    # still resynchronising: P7's head alone cannot be told from garbage, so framing resumes at P8
    assert kinds(by_payload(swapped, P7[:10]))[0][0] == "data"
    assert kinds(by_payload(swapped, P7[10:]))[1:] == [8] and kinds(by_payload(swapped, P9[7:])) == [9]


def test_new_bytes_in_a_retransmission_are_lost_and_framing_goes_on_after_them(captures):
    ps = dissect(captures["overlapping_retransmission"])
    assert kinds(by_payload(ps, b"".join(B3)[-10:])) == []
    # the next segment is no gap for TCP (the retransmission moved its next sequence number): read as it comes,
    # it starts inside BIG, where no PDU can start: the direction stops
    [(_, _, experts)] = kinds(by_payload(ps, BIG[1448:1460]))
    assert experts[0].startswith("Cannot frame the stream")


def test_a_capture_started_mid_stream_gets_a_note_on_its_first_pdu(captures):
    ps = dissect(captures["no_handshake"])
    first = by_payload(ps, A).games[0].item
    assert [i.expert_info.message for i in first.walk() if i.expert_info] == [
        "Previous segment(s) not captured: resynchronising"]
    assert kinds(by_payload(ps, B3[0])) == [2, 3, 4]


def test_decode_as_and_heuristics_choose_the_protocol(captures):
    elsewhere = LengthPrefixed(port=1)
    assert all(not p.games for p in dissect(captures["base"], elsewhere))
    ps = dissect(captures["base"], elsewhere, Settings(decode_as={("tcp.port", PORT): "lp"}))
    assert kinds(by_payload(ps, B3[0])) == [2, 3, 4]
    ps = dissect(captures["base"], LengthPrefixed(port=1, heuristic=True))
    assert kinds(by_payload(ps, B3[0])) == [2, 3, 4]


def test_a_pdu_beyond_the_limit_stops_the_direction(captures):
    huge = LengthPrefixed()
    huge.pdu_length = lambda data, pos, conv, direction, prefs: MAX_PDU + 1
    ps = dissect(captures["base"], huge)
    [(_, _, experts)] = kinds(by_payload(ps, A))
    assert "exceeds the limit of 1048576" in experts[0]


# --- the plugin: the same layers in tshark --------------------------------------------------------------------

def protodump_json(path, protocol=None) -> str:
    out = io.StringIO()
    writer = JsonWriter(out)
    for packet in dissect(path, protocol):
        writer.write(packet)
    writer.close()
    return out.getvalue()


def tshark_json(path, plugin, *extra) -> str:
    run = subprocess.run([TSHARK, "-X", f"lua_script:{plugin}", "-r", str(path), "-T", "json", *extra],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert LUA_ERROR.search(run.stdout + run.stderr) is None
    return run.stdout


EDITED = ["base", "drop_p7_head", "drop_big_middle", "swap_p6", "dup_b3", "no_handshake", "overlapping_retransmission"]


@pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH")
@pytest.mark.parametrize("name", EDITED)
def test_the_plugin_shows_the_same_layers(captures, plugin, name):
    ours = packet_layers(protodump_json(captures[name]))
    theirs = packet_layers(tshark_json(captures[name], plugin))
    assert len(ours) == len(theirs)
    for number, (a, b) in enumerate(zip(ours, theirs), 1):
        assert layers_of(a, "lp") == layers_of(b, "lp"), f"{name} frame {number}"
    assert sum(len(layers_of(a, "lp")) for a in ours) >= 10


@pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH")
def test_the_plugin_finds_the_connection_by_its_heuristic(captures, tmp_path):
    plugin = tmp_path / "lp-heuristic.lua"
    plugin.write_text(generate([LengthPrefixed(port=1, heuristic=True)]))
    ours = packet_layers(protodump_json(captures["base"], LengthPrefixed(port=1, heuristic=True)))
    theirs = packet_layers(tshark_json(captures["base"], plugin))
    assert [layers_of(p, "lp") for p in ours] == [layers_of(p, "lp") for p in theirs]
    assert sum(len(layers_of(p, "lp")) for p in ours) >= 10


@pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH")
@pytest.mark.parametrize("name", EDITED)
def test_two_passes_show_what_one_pass_shows(captures, plugin, name):
    """tshark -2 builds no tree on its first pass: the plugin does its stream work on the second one there."""
    one = [layers_of(p, "lp") for p in packet_layers(tshark_json(captures[name], plugin))]
    assert [layers_of(p, "lp") for p in packet_layers(tshark_json(captures[name], plugin, "-2"))] == one


# --- robustness -------------------------------------------------------------------------------------------------

def test_connections_kept_are_bounded(monkeypatch):
    from protodump.capture.decode import decode
    from protodump.engine import streams
    monkeypatch.setattr(streams, "CONNECTION_LIMIT", 10)
    dispatcher = Dispatcher([LengthPrefixed()])
    for n in range(1, 31):
        frame = tcp_frame(n, 1000, 0x18, A, sport=40000 + n)
        assert kinds(dispatcher.dissect(frame, decode(frame))) == [1]
    assert len(dispatcher.streams.connections) == 10

def tcp_frame(number: int, seq: int, flags: int, payload: bytes, sport=40000, dport=PORT) -> RawFrame:
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), 0, 0, 64, 6, 0, b"\x7f\0\0\1", b"\x7f\0\0\1")
    tcp = struct.pack("!HHIIHHHH", sport, dport, seq, 0, 0x5000 | flags, 65535, 0, 0)
    data = b"\0" * 12 + b"\x08\x00" + ip + tcp + payload
    return RawFrame(number, number * 1000, len(data), len(data), 1, 0, data)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3000), st.binary(max_size=200), st.sampled_from([0x10, 0x18, 0x02, 0x11])),
                max_size=25))
def test_random_segments_never_crash(segments):
    from protodump.capture.decode import decode
    dispatcher = Dispatcher([LengthPrefixed()])
    for number, (seq, payload, flags) in enumerate(segments, 1):
        packet = dispatcher.dissect(tcp_frame(number, seq, flags, payload), decode(tcp_frame(number, seq, flags,
                                                                                               payload)))
        for layer in packet.games:
            assert layer.proto == "lp"
            assert not any(i.expert_info and "Dissector error" in i.expert_info.message for i in layer.item.walk())


def random_stream(seed: int) -> list[RawFrame]:
    """Two connections of random traffic: real PDUs, garbage, cuts anywhere, lost, repeated and swapped segments."""
    import random
    rnd = random.Random(seed)
    frames = []
    for sport in (40001, 40002):
        wire = b"".join(pdu(rnd.randrange(1, 32) if rnd.random() < 0.98 else 0, rnd.randbytes(rnd.randrange(300)))
                        if rnd.random() < 0.97 else rnd.randbytes(rnd.randrange(1, 40)) for _ in range(60))
        isn, pos, segs = rnd.randrange(1 << 32), 0, []
        if rnd.random() < 0.7:
            segs.append((isn, 0x02, b""))
            isn += 1
        while pos < len(wire):
            n = rnd.choice([1, 3, 50, 700, 1448])
            segs.append(((isn + pos) % (1 << 32), 0x18, wire[pos:pos + n]))
            pos += n
        for i in range(len(segs)):
            r = rnd.random()
            if r < 0.05 and i + 1 < len(segs):
                segs[i], segs[i + 1] = segs[i + 1], segs[i]
            elif r < 0.08:
                segs[i] = None
            elif r < 0.11:
                segs.insert(i, segs[i])
        frames += [(sport, s) for s in segs if s is not None]
    if seed % 2:                      # heavy reordering (the SYNs stay first: a late SYN restarts tshark's flow)
        rnd.shuffle(frames)
        frames.sort(key=lambda f: f[1][1] != 0x02)
    return [tcp_frame(n, seq, flags, payload, sport=sport) for n, (sport, (seq, flags, payload)) in enumerate(frames, 1)]


@pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH")
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_traffic_same_layers_and_no_lua_error(tmp_path, plugin, seed):
    path = tmp_path / f"random-{seed}.pcap"
    edit.write_pcap(path, struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1),
                    [struct.pack("<IIII", f.number, 0, len(f.data), len(f.data)) + f.data for f in random_stream(seed)])
    ours = packet_layers(protodump_json(path))
    for extra in ((), ("-2",)):
        theirs = packet_layers(tshark_json(path, plugin, *extra))
        assert [layers_of(p, "lp") for p in ours] == [layers_of(p, "lp") for p in theirs], extra
    assert sum(len(layers_of(p, "lp")) for p in ours) >= 10
