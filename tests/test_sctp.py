"""SCTP: the frame encoder (tools/sctp_frames.py, checked by tshark's own SCTP dissector), the capture layer
(capture/sctp.py: the same field values tshark shows), and DATA chunks feeding stream protocols
(reassembly/sctp.py, engine/streams.py, lua/rt_stream.lua: the plugin shows the same layers)."""
from __future__ import annotations

import importlib.util
import io
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import LUA_ERROR, layers_of, packet_layers
from hypothesis import given, settings
from hypothesis import strategies as st
from protodump.capture.decode import decode
from protodump.capture.files import RawFrame
from protodump.engine.dispatch import Dispatcher
from protodump.engine.tree import TextItem
from protodump.engine.lua_backend import generate
from protodump.output.json_out import JsonWriter
from protodump.output.tshark_values import json_value
from stream_lp import PORT, LengthPrefixed, pdu

from protodump.session import packets

_spec = importlib.util.spec_from_file_location("sctp_frames", Path(__file__).resolve().parent.parent / "tools"
                                               / "sctp_frames.py")
sf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sf)
TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH")

A, B, C = pdu(1, b"one"), pdu(2, b"two" * 5), pdu(3, b"three")
BIG = pdu(4, bytes(range(200)))


def session() -> sf.Association:
    """Every case, in one association: (the comment after each send says what the receiver should see)."""
    a = sf.Association(server=("10.0.0.2", PORT))
    a.handshake()
    a.send("c2s", [sf.data(A)])                                        # 5: A
    a.send("c2s", [sf.data(A + B[:4]), sf.data(B[4:10])])             # 6: A (B's head carried over)
    a.send("c2s", [sf.data(B[10:] + C)])                               # 7: B C, reassembled source
    a.send("s2c", [sf.data(pdu(16, b"back"), sid=1)])                  # 8: the other direction
    for lo, hi in ((0, 50), (50, 120), (120, len(BIG))):              # 9-11: BIG in the third message
        a.send("c2s", [sf.data(BIG[lo:hi])])
    a.send("c2s", [sf.data(A, tsn=a.tsn["c2s"] - 1, ssn=a.ssn[("c2s", 0)] - 1)])   # 12: retransmission: nothing
    a.send("c2s", [sf.data(A + B[:5], flags=sf.BEGIN), sf.data(B[5:12], flags=0)])  # 13: fragments...
    a.send("c2s", [sf.data(B[12:] + C, flags=sf.END)])                 # 14: ...A B C from the whole message
    a.send("c2s", [sf.data(C[:3], sid=1)])                             # 15-17: streams 0 and 1 interleaved
    a.send("c2s", [sf.data(A, sid=0)])
    a.send("c2s", [sf.data(C[3:], sid=1)])
    a.ssn[("c2s", 1)] += 1                                             # a message of stream 1 lost
    a.send("c2s", [sf.data(b"\x41" * 7 + A, sid=1)])                   # 18: 7 bytes skipped, then A
    a.send("c2s", [sf.data(A, sid=0, ssn=1)])                          # 19: late (SSN behind): nothing
    a.send("c2s", [sf.data(pdu(0, b"bad"), sid=2)])                    # 20: stream 2 cannot be framed
    a.send("c2s", [sf.data(A, sid=2)])                                 # 21: ... stays undecoded
    a.send("c2s", [sf.data(C, sid=0)])                                 # 22: stream 0 goes on
    a.sack("s2c")
    a.shutdown()
    return a


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sctp") / "lp-sctp.pcap"
    session().write(path)
    return path


def tshark(path, *args) -> str:
    run = subprocess.run([TSHARK, "-r", str(path), *args], capture_output=True, text=True, timeout=120,
                         check=False)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_crc32c():
    assert sf.crc32c(b"123456789") == 0xE3069283          # the CRC-32C check value


@needs_tshark
def test_tshark_finds_every_checksum_good(capture):
    out = tshark(capture, "-o", "sctp.checksum:CRC-32C", "-T", "fields", "-e", "sctp.checksum.status")
    assert out.split() == ["1"] * 26


FIELDS = ["sctp.srcport", "sctp.dstport", "sctp.verification_tag", "sctp.checksum", "sctp.chunk_type",
          "sctp.chunk_flags", "sctp.chunk_length", "sctp.data_tsn_raw", "sctp.data_sid", "sctp.data_ssn",
          "sctp.data_payload_proto_id", "sctp.data_b_bit", "sctp.data_e_bit", "sctp.data_u_bit",
          "sctp.init_initiate_tag", "sctp.initack_initial_tsn", "sctp.sack_cumulative_tsn_ack_raw",
          "sctp.sack_a_rwnd", "sctp.cookie", "sctp.chunk_padding"]


@needs_tshark
def test_the_sctp_layer_has_tshark_s_values(capture):
    cmd = ["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|"]
    for name in FIELDS:
        cmd += ["-e", name]
    theirs = [line.split("\t") for line in tshark(capture, *cmd).splitlines()]
    ours = dissect(capture)
    assert len(ours) == len(theirs) == 26
    for packet, row in zip(ours, theirs):
        index = packet.index()
        for name, value in zip(FIELDS, row):
            mine = "|".join(json_value(item.field, item.value) for item in index.get(name, ()))
            if name in ("sctp.cookie", "sctp.chunk_padding"):      # -T fields prints bytes without colons
                mine = mine.replace(":", "")
            assert mine == value, f"frame {packet.number} {name}"


def _chunk_labels(packet) -> list[str]:
    """The chunk text items of every sctp layer of a packet (tshark opens a new sctp layer per later DATA chunk)."""
    return [c.label for layer in packet.layers() if layer.proto == "sctp"
            for c in layer.item.children or () if isinstance(c, TextItem)]


def test_chunks_are_listed_with_names(capture):
    ps = dissect(capture)
    # TSNs relative to the INIT's initial TSN (1000), as tshark shows them
    assert _chunk_labels(ps[5]) == [(f"DATA chunk (ordered, complete segment, TSN: 1, SID: 0, SSN: 1, PPID: 0, "
                                     f"payload length: {len(A) + 4} bytes)"),
                                    ("DATA chunk (ordered, complete segment, TSN: 2, SID: 0, SSN: 2, PPID: 0, "
                                     "payload length: 6 bytes)")]
    assert [layer.proto for layer in ps[5].layers()][-3:] == ["sctp", "lp", "sctp"]
    names = [label.split(" ")[0] for p in ps for label in _chunk_labels(p)]
    assert names[:4] == ["INIT", "INIT_ACK", "COOKIE_ECHO", "COOKIE_ACK"]
    assert names[-4:] == ["SACK", "SHUTDOWN", "SHUTDOWN_ACK", "SHUTDOWN_COMPLETE"]


def dissect(path) -> list:
    return list(packets(path, dispatcher=Dispatcher([LengthPrefixed()])))


def kinds(packet) -> list:
    out = []
    for layer in packet.games:
        t = layer.item.find("lp.type")
        experts = [i.expert_info.message for i in layer.item.walk() if i.expert_info]
        out.append(t.value if t is not None else ("data", layer.item.find("lp.data").length, experts))
    return out


def test_data_chunks_continue_each_stream(capture):
    ps = dissect(capture)
    got = {p.number: kinds(p) for p in ps if p.games}
    assert got == {
        5: [1], 6: [1], 7: [2, 3], 8: [16], 11: [4], 14: [1, 2, 3], 16: [1], 17: [3],
        18: [("data", 7, ["Previous segment(s) not captured: 7 bytes skipped to resynchronise"]), 1],
        20: [("data", 6, [("Cannot frame the stream (no PDU can start here): the rest of this direction is not "
                           "decoded")])],
        21: [("data", 6, [])], 22: [3]}
    assert [g.item.source for g in ps[6].games] == [1, 1] and ps[6].sources[1].name == "Reassembled SCTP"
    assert ps[10].sources[1].data == BIG


@needs_tshark
def test_the_plugin_shows_the_same_layers(capture, tmp_path):
    plugin = tmp_path / "lp.lua"
    plugin.write_text(generate([LengthPrefixed()]))
    out = io.StringIO()
    writer = JsonWriter(out)
    for packet in dissect(capture):
        writer.write(packet)
    writer.close()
    theirs_text = tshark(capture, "-X", f"lua_script:{plugin}", "-T", "json")
    assert LUA_ERROR.search(theirs_text) is None
    ours, theirs = packet_layers(out.getvalue()), packet_layers(theirs_text)
    for number, (a, b) in enumerate(zip(ours, theirs), 1):
        assert layers_of(a, "lp") == layers_of(b, "lp"), f"frame {number}"
    assert sum(len(layers_of(a, "lp")) for a in ours) == 16


def test_a_bad_chunk_is_reported_and_decoding_goes_on():
    good = sf.chunk(sf.DATA, 3, b"\0\0\0\1\0\0\0\0\0\0\0\0" + A)
    frame = sf.ethernet_ipv4("10.0.0.1", "10.0.0.2", 132, sf.packet(40000, PORT, 1, [good, b"\0\0\0\2"]))
    d = decode(RawFrame(1, 0, len(frame), len(frame), 1, 0, frame))
    assert [c.kind for c in d.chunks] == [0] and "Malformed chunk: length 2" in d.error
    assert any(layer.proto == "sctp" for layer in d.layers())


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120), st.lists(st.binary(max_size=40), max_size=4))
def test_random_sctp_never_crashes(header, chunks):
    dispatcher = Dispatcher([LengthPrefixed()])
    for number, body in enumerate([header, sf.packet(40000, PORT, 7, [sf.chunk(0, 3, c) for c in chunks])], 1):
        frame = sf.ethernet_ipv4("10.0.0.1", "10.0.0.2", 132, body)
        raw = RawFrame(number, 0, len(frame), len(frame), 1, 0, frame)
        packet = dispatcher.dissect(raw, decode(raw))
        for layer in packet.layers():
            list(layer.item.walk())


def random_session(seed: int) -> sf.Association:
    """Three streams of PDUs cut anywhere into messages, several chunks per packet, some messages fragmented,
    some lost (SSN gaps), some packets repeated."""
    import random
    rnd = random.Random(seed)
    a = sf.Association(server=("10.0.0.2", PORT))
    a.handshake()
    streams = {sid: b"".join(pdu(rnd.randrange(1, 32) if rnd.random() < 0.98 else 0, rnd.randbytes(rnd.randrange(200)))
                             for _ in range(20)) for sid in range(3)}
    pos = dict.fromkeys(streams, 0)
    while any(pos[s] < len(streams[s]) for s in streams):
        chunks = []
        for _ in range(rnd.choice([1, 1, 2, 3])):
            sid = rnd.choice([s for s in streams if pos[s] < len(streams[s])] or [0])
            piece = streams[sid][pos[sid]:pos[sid] + rnd.choice([1, 5, 60, 300])]
            pos[sid] += len(piece)
            r = rnd.random()
            if not piece:
                continue
            if r < 0.1 and len(piece) > 4:
                k = len(piece) // 2
                chunks += [sf.data(piece[:k], sid=sid, flags=sf.BEGIN), sf.data(piece[k:], sid=sid, flags=sf.END)]
                continue
            if r < 0.15:
                a.ssn[("c2s", sid)] = a.ssn.get(("c2s", sid), 0) + 1
            chunks.append(sf.data(piece, sid=sid))
        if chunks:
            a.send("c2s", chunks)
        if rnd.random() < 0.05:
            a.frames.append(a.frames[-1])
    return a


@needs_tshark
@pytest.mark.parametrize("seed", [1, 2])
def test_random_sessions_same_layers_in_one_and_two_passes(tmp_path, seed):
    path, plugin = tmp_path / f"random-{seed}.pcap", tmp_path / "lp.lua"
    random_session(seed).write(path)
    plugin.write_text(generate([LengthPrefixed()]))
    out = io.StringIO()
    writer = JsonWriter(out)
    for packet in dissect(path):
        writer.write(packet)
    writer.close()
    ours = [layers_of(p, "lp") for p in packet_layers(out.getvalue())]
    for extra in ((), ("-2",)):
        theirs = tshark(path, "-X", f"lua_script:{plugin}", "-T", "json", *extra)
        assert LUA_ERROR.search(theirs) is None
        assert [layers_of(p, "lp") for p in packet_layers(theirs)] == ours, extra
    assert sum(map(len, ours)) >= 40
