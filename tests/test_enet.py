"""ENet: facts checked on real libenet traffic (recorded over loopback sockets), the enet layer identical in
protodump and in tshark with the generated plugin on every ENet capture, bad input reported and survived, and
property tests from the tables (encode -> decode round trip; random bytes never raise)."""
from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest
from conftest import CAPTURES_DIR, LUA_ERROR, PLUGIN, PROTODUMP, TSHARK, layer_of, packet_layers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protodump.capture.decode import decode
from protodump.capture.files import open_capture
from protodump.dissectors import PROTOCOLS
from protodump.dissectors.enet import COMMAND_NAMES, PROTOCOL, looks_like_enet
from protodump.engine import fields
from protodump.engine.dispatch import Dispatcher, Settings
from test_lua import write_pcap
from test_parity import layer_mismatches

SHARED = Path(__file__).resolve().parents[2] / "shared" / "captures"
BAD = ("-d", "udp.port==27016,enet")
CHECKSUM = ("-o", "enet.checksum:on")
OPTIONS = {"enet-checksum.pcap": CHECKSUM}
ENET_VARIANTS = [(name, OPTIONS.get(name, ()))
                 for name in sorted(p.name for p in CAPTURES_DIR.glob("*.pcap"))
                 if name.startswith("enet") or name == "iceball-enet-session.pcap"] + [
    ("enet-bad.pcap", BAD), ("enet-all-commands.pcap", ("-o", "enet.payload:iceball")),
    ("iceball-enet-session.pcap", ("-o", "enet.handoff:off"))]


def capture_path(name: str) -> Path:
    path = CAPTURES_DIR / name
    return path if path.exists() else SHARED / name


def packets(name: str, prefs=None, decode_as=None):
    d = Dispatcher(PROTOCOLS, Settings(prefs=prefs or {}, decode_as=decode_as or {}))
    return [d.dissect(frame, decode(frame)) for frame in open_capture(capture_path(name))]


def commands(packet) -> list[tuple[int, dict]]:
    """(type, {abbrev suffix: value}) per command item of the packet's ENet layer."""
    layer = next(layer for layer in packet.games if layer.proto == "enet")
    out = []
    for item in layer.item.children or ():
        if item.field is not None and item.field.abbrev == "enet.command":
            vals = {n.field.abbrev: n.value for n in item.walk() if n.field is not None and n is not item}
            out.append((vals.get("enet.command.type"), vals))
    return out


# --- real traffic ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def plain():
    return packets("enet-plain.pcap")


def test_plain_capture_every_datagram_is_enet(plain):
    assert len(plain) == 19 and all(p.games[0].proto == "enet" for p in plain)
    kinds = [t for p in plain for t, _ in commands(p)]
    assert kinds.count(1) == 10 and {2, 3, 4, 5, 6, 7, 8, 9, 12} <= set(kinds)


def test_plain_capture_connect_remembered(plain):
    (kind, connect), = commands(plain[0])
    assert kind == 2 and connect["enet.connect.data"] == 0x42454331 and connect["enet.connect.channel_count"] == 2
    for p in plain[1:]:
        assert p["enet.connection.connect_data"] == 0x42454331
        assert p["enet.connection.channel_count"] == 2 and p["enet.connection.mtu"] == 1400
        assert p["enet.connection.frame"] == 1
    assert "enet.connection" not in plain[0]


def test_plain_capture_fragments_reassembled(plain):
    """5,000 bytes reliable (frames 6-9) and 3,000 bytes unreliable (10-12): the message is libenet's test
    pattern (byte i = 7 i mod 256), shown once, in the completing frame, as its own data source."""
    done = {p.number: p for p in plain if "enet.reassembled" in p}
    assert sorted(done) == [9, 12]
    assert done[9].values("enet.reassembled.frame") == [6, 7, 8, 9]
    assert done[12].values("enet.reassembled.frame") == [10, 11, 12]
    for number, size in ((9, 5000), (12, 3000)):
        source = next(s for s in done[number].sources if s.name == "Reassembled ENet")
        assert source.data == bytes(7 * i % 256 for i in range(size))
        assert done[number]["enet.reassembled.length"] == size


def test_acknowledgements_point_back(plain):
    """Every ACKNOWLEDGE names a reliable command of the other direction: the frame it points to carries a
    command with that channel and sequence number, sent at the echoed sent time; the RTT is the time between."""
    by_number = {p.number: p for p in plain}
    checked = 0
    for p in plain:
        for kind, ack in commands(p):
            if kind != 1:
                continue
            target = by_number[ack["enet.acknowledge.frame"]]
            assert target.decoded.sport == p.decoded.dport
            assert target["enet.sent_time"] == ack["enet.acknowledge.received_sent_time"]
            assert any(v["enet.command.channel"] == ack["enet.command.channel"]
                       and v["enet.command.reliable_seq"] == ack["enet.acknowledge.received_reliable_seq"]
                       and v["enet.command.acknowledge"] for _, v in commands(target))
            rtt = (p.frame.ts_ns - target.frame.ts_ns) / 1e6
            assert ack["enet.acknowledge.rtt"] == pytest.approx(rtt, abs=1e-3)
            checked += 1
    assert checked == 10


def test_range_coded_capture_matches_plain(plain):
    """The same exchange with the range coder: every compressed datagram decompresses, and its commands are the
    plain capture's, field for field (header sent times and the connect id differ)."""
    coded = packets("enet-rangecoder.pcap")
    compressed = [p for p in coded if p["enet.compressed"]]
    assert len(compressed) == 10
    for p in compressed:
        source = next(s for s in p.sources if s.name == "Decompressed ENet")
        assert p["enet.decompressed_length"] == len(source.data)
        assert p["enet.compression_ratio"] == len(source.data) / len(p["enet.compressed_data"])
    skip = {"enet.acknowledge.received_sent_time", "enet.acknowledge.rtt", "enet.connect.connect_id",
            "enet.verify_connect.connect_id"}
    for a, b in zip(plain, coded):
        strip = lambda cs: [(t, {k: v for k, v in c.items() if k not in skip}) for t, c in cs]
        assert strip(commands(a)) == strip(commands(b)), a.number


@pytest.mark.parametrize("name", ["enet-all-commands.pcap", "enet-all-commands-rc.pcap"])
def test_made_captures_reach_every_command(name):
    """tools/make_enet_captures.py: two libenet hosts, every command type, large messages on several channels."""
    made = packets(name)
    assert all(p.games[0].proto == "enet" for p in made)     # port 27015: found by the heuristic
    kinds = {t for p in made for t, _ in commands(p)}
    assert kinds == set(COMMAND_NAMES)
    sizes = sorted(p["enet.reassembled.length"] for p in made if "enet.reassembled" in p)
    assert sizes == [3000, 5000, 12000]
    values = {k: v for p in made for _, c in commands(p) for k, v in c.items()}
    assert values["enet.disconnect.data"] == 0xDEADBEEF
    assert (values["enet.throttle_configure.throttle_interval"], values["enet.throttle_configure.throttle_acceleration"],
            values["enet.throttle_configure.throttle_deceleration"]) == (2000, 3, 4)
    assert made[-1]["enet.connection.connect_data"] == 0x1234ABCD
    assert made[-1]["enet.connection.channel_count"] == 4
    compressed = sum(1 for p in made if p["enet.compressed"])
    assert (compressed > 20) == name.endswith("-rc.pcap")
    assert not any(p.values("_ws.expert") for p in made)


def test_lossy_link_resent_commands_and_fragments():
    """enet-lossy-rc.pcap (tools/make_enet_captures.py): the link dropped a share of the datagrams after tcpdump saw
    them, so libenet resent reliable commands and fragments the peer may already have had. Each message is
    reassembled once, from its first full set of fragments (a resent fragment is shown, not reassembled again), and
    nothing is an expert. (tshark + plugin agree frame by frame: the per-capture parity suites take it.)"""
    made = packets("enet-lossy-rc.pcap")
    sizes = sorted(p["enet.reassembled.length"] for p in made if "enet.reassembled" in p)
    assert sizes == [5000, 9000, 12000]
    sent: dict = {}
    for p in made:
        for kind, c in commands(p):
            if kind in (6, 8):                 # SEND_RELIABLE, SEND_FRAGMENT
                key = (kind, p["udp.srcport"], c["enet.command.channel"], c["enet.command.reliable_seq"])
                sent[key] = sent.get(key, 0) + 1
    assert any(n > 1 and key[0] == 6 for key, n in sent.items())        # a reliable command sent again
    assert any(n > 1 and key[0] == 8 for key, n in sent.items())        # ... and a fragment
    assert sum(1 for key in sent if key[0] == 8) == 4 + 9 + 7           # the three messages' fragments
    assert sum(1 for p in made if p["enet.compressed"]) > len(made) // 2
    assert not any(p.values("_ws.expert") for p in made)


def test_iceball_session_every_range_coded_datagram_decompresses():
    session = packets("iceball-enet-session.pcap")
    assert len(session) == 775 and all("enet" in [g.proto for g in p.games] for p in session)
    compressed = [p for p in session if p["enet.compressed"]]
    assert len(compressed) == 37 and all("enet.decompressed_length" in p for p in compressed)
    assert not any(i.expert_info.abbrev.startswith("enet.") for p in session for i in p.index().get("_ws.expert", []))


# --- bad input ------------------------------------------------------------------------------------------------------

def test_bad_capture_reports_every_problem():
    """Port 27016: the CONNECT is recognised, and the conversation stays ENet's however bad what follows is."""
    bad = packets("enet-bad.pcap")
    assert all(p.games[0].proto == "enet" for p in bad)
    experts = [[i.expert_info.message for i in p.index().get("_ws.expert", [])] for p in bad]
    assert experts[2] == ["Invalid command type 13: the receiver stops here"]
    assert experts[3] == ["Invalid command type 0: the receiver stops here"]
    assert experts[4][0].startswith("Truncated:")
    assert experts[5] == ["Data: 500 bytes announced, 4 present"]
    assert experts[6] == experts[7] == ["Range-coded data does not decompress"]
    assert experts[8] == ["Fragment 90+20 lies beyond the total length 100"]
    assert experts[9] == ["Fragment count 4294967295 is outside 1..1048576"]
    assert experts[10] == ["Fragment number 5 is not below the fragment count 2"]
    assert experts[14][0].startswith("Fragment count 4 / total 40 differ")
    done = bad[15]                  # fragments 2, 0, 0 again (other bytes: ignored, as libenet does), then 1
    assert done.values("enet.reassembled.frame") == [12, 13, 16]
    assert next(s for s in done.sources if s.name == "Reassembled ENet").data == b"A" * 10 + b"B" * 10 + b"C" * 10
    assert bad[16]["enet.reassembled_in"] == 16
    assert "enet.acknowledge.frame" not in bad[17]
    assert bad[18].info == "Malformed (truncated header)"
    assert bad[20]["enet.disconnect.data"] == 0xDEADBEEF    # decoding went on to the end


def test_pending_messages_are_bounded():
    """Fragments of many never-finished messages: the conversation keeps at most MESSAGE_LIMIT of them."""
    from protodump.dissectors import enet_analysis
    from protodump.engine.context import Ctx
    from protodump.engine.tree import Item
    conv: dict = {}
    for seq in range(600):
        payload = PROTOCOL.encode({"peer_id": 0, "sent_time": seq}, [dict(
            type=8, channel=0, reliable_seq=seq, acknowledge=1, start_seq=seq, fragment_count=1000,
            fragment_number=0, total_length=1 << 24, fragment_offset=0, data=b"x" * 100)])
        tree = Item(PROTOCOL.info, "ENet", 0, len(payload))
        PROTOCOL.dissect(Ctx(payload, 0, len(payload), tree, PROTOCOL, conv, "a:1>b:2", seq + 1, []), {})
    assert len(conv["enet_messages"]) == enet_analysis.MESSAGE_LIMIT


# --- checksum preference -----------------------------------------------------------------------------------------

def test_real_checksums_verify():
    """enet-checksum.pcap: both libenet hosts with enet_crc32 (and the range coder): every CRC is good, and the
    commands are the same exchange as without checksums."""
    checked = packets("enet-checksum.pcap", prefs={"enet.checksum": "on"})
    assert [p.values("enet.checksum.status") for p in checked] == [[1]] * len(checked)
    assert {t for p in checked for t, _ in commands(p)} == set(COMMAND_NAMES)


def test_checksum_preference_verifies_crc32():
    import zlib
    cmds = [dict(type=6, channel=0, reliable_seq=1, acknowledge=1, data=b"checked")]
    head = PROTOCOL.encode({"peer_id": 0xFFF, "sent_time": 7, "checksum": 0}, [], checksum=True)
    crc = zlib.crc32(head + PROTOCOL.encode({}, cmds)[2:])
    good = PROTOCOL.encode({"peer_id": 0xFFF, "sent_time": 7, "checksum": crc}, cmds, checksum=True)
    values, tree = PROTOCOL.decode_values(good, {"enet.checksum": "on"})
    assert values["commands"][0]["data"] == b"checked" and tree.find("enet.checksum.status").value == 1
    bad = good[:-1] + b"!"
    _, tree = PROTOCOL.decode_values(bad, {"enet.checksum": "on"})
    assert tree.find("enet.checksum.status").value == 0
    assert any(n.expert_info and n.expert_info.message == "Bad checksum" for n in tree.walk())


# --- parity with the plugin ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=ENET_VARIANTS, ids=lambda v: " ".join((v[0], *v[1])))
def both(request, protodump_run, tshark_run):
    name, extra = request.param
    return name, protodump_run("-T", "json", *extra, name), tshark_run("-T", "json", *extra, "-r", name)


def test_enet_layer_parity(both):
    name, ours, theirs = both
    assert ours.returncode == 0 and theirs.returncode == 0, theirs.stderr
    m = LUA_ERROR.search(theirs.stdout)
    assert m is None, theirs.stdout[max(0, m.start() - 300):m.end() + 300]
    a = [layer_of(p, "enet") is not None for p in packet_layers(ours.stdout)]
    b = [layer_of(p, "enet") is not None for p in packet_layers(theirs.stdout)]
    assert all(a) and a == b
    reports = layer_mismatches(ours.stdout, theirs.stdout, "enet")
    if reports:
        pytest.fail(f"{name}: {len(reports)} packet(s) differ\n\n" + "\n\n".join(reports[:3]), pytrace=False)


def fuzz_datagrams(seed: int, n: int = 200) -> list[tuple[bool, bytes]]:
    """Noise, and real datagrams of the captures truncated, extended or with flipped bytes (compressed ones too)."""
    rng = random.Random(seed)
    real = []
    for name in ("enet-plain.pcap", "enet-rangecoder.pcap"):
        real += [decode(f).payload for f in open_capture(capture_path(name))]
    out = []
    for i in range(n):
        if i % 3 == 0:
            data = bytes(rng.randrange(256) for _ in range(rng.randint(1, 120)))
        else:
            data = bytearray(rng.choice(real))
            for _ in range(rng.randint(1, 4)):
                at = rng.randrange(len(data))
                data[at] = rng.randrange(256)
            if rng.random() < 0.3:
                data = data[:rng.randint(1, len(data))]
            data = bytes(data)
        out.append((i % 2 == 0, data))
    return out


@pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH")
@pytest.mark.parametrize("seed", [1, 2])
def test_fuzz_parity(tmp_path, seed):
    pcap = tmp_path / f"enet-fuzz-{seed}.pcap"
    write_pcap(pcap, fuzz_datagrams(seed), dport=27016)
    run = lambda cmd: subprocess.run(cmd, capture_output=True, text=True, errors="surrogateescape",
                                     timeout=300)
    theirs = run([TSHARK, "-X", f"lua_script:{PLUGIN}", *BAD, "-r", str(pcap), "-T", "json"])
    ours = run([*PROTODUMP, "-T", "json", *BAD, str(pcap)])
    assert ours.returncode == 0 and theirs.returncode == 0, (ours.stderr, theirs.stderr)
    assert LUA_ERROR.search(theirs.stdout) is None and "Dissector error" not in ours.stdout
    reports = layer_mismatches(ours.stdout, theirs.stdout, "enet")
    if reports:
        pytest.fail(f"seed {seed}: {len(reports)} packet(s) differ\n\n" + "\n\n".join(reports[:3]), pytrace=False)


# --- properties from the tables -------------------------------------------------------------------------------------

_RANGES = {"B": 0xFF, "H": 0xFFFF, "I": 0xFFFFFFFF}


def _field_values(packet) -> st.SearchStrategy:
    parts = {}
    for f in packet.fields:
        if isinstance(f, fields.Bytes):
            parts[f.name] = st.binary(max_size=80)
        elif f.name != "data_length":
            parts[f.name] = st.integers(0, _RANGES[f.codes[0]])
    return st.fixed_dictionaries(parts)


@st.composite
def a_command(draw):
    kind = draw(st.sampled_from(sorted(PROTOCOL.commands)))
    values = draw(_field_values(PROTOCOL.commands[kind]))
    values.update(type=kind, channel=draw(st.integers(0, 255)), reliable_seq=draw(st.integers(0, 0xFFFF)),
                  acknowledge=draw(st.integers(0, 1)), unsequenced=draw(st.integers(0, 1)))
    return values


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(a_command(), min_size=1, max_size=6), st.integers(0, 0xFFE), st.integers(0, 3),
       st.one_of(st.none(), st.integers(0, 0xFFFF)), st.booleans())
def test_round_trip(cmds, peer, session, sent_time, compress):
    header = {"peer_id": peer, "session_id": session}
    if sent_time is not None:
        header["sent_time"] = sent_time
    payload = PROTOCOL.encode(header, cmds, compress=compress)
    values, _ = PROTOCOL.decode_values(payload)
    assert (values["peer_id"], values["session_id"], values.get("sent_time")) == (peer, session, sent_time)
    assert values["compressed"] == int(compress)
    got = values["commands"]
    assert len(got) == len(cmds)
    for want, have in zip(cmds, got):
        assert {k: v for k, v in have.items() if k not in ("code", "data_length")} == want


def test_heuristic_on_real_traffic():
    """Every datagram of the ENet captures is recognised (range-coded ones through the decoder), no blank one."""
    for name in ("enet-plain.pcap", "enet-rangecoder.pcap", "iceball-enet-session.pcap", "enet-all-commands.pcap"):
        assert all(looks_like_enet(decode(f).payload) for f in open_capture(capture_path(name))), name
    assert not any(looks_like_enet(decode(f).payload) for f in open_capture(capture_path("blank-server-session.pcap")))


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=300), st.sampled_from(["off", "on"]))
def test_random_bytes_never_raise(payload, checksum):
    looks_like_enet(payload)
    _, tree = PROTOCOL.decode_values(payload, {"enet.checksum": checksum})
    assert not any(n.expert_info and "Dissector error" in n.expert_info.message for n in tree.walk())


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=200))
def test_random_range_coded_bodies_never_raise(body):
    _, tree = PROTOCOL.decode_values(b"\xc0\x00\x12\x34" + body)
    assert not any(n.expert_info and "Dissector error" in n.expert_info.message for n in tree.walk())


# --- preferences -------------------------------------------------------------------------------------------------

def test_handoff_preferences():
    """auto: payloads go up by connect data (Iceball on 20737); off: none do; payload=<protocol>: every payload
    goes to that protocol, whatever the connect data and port (tshark 4.0 has no Decode As for Lua tables)."""
    def uppers(name, prefs):
        return sum(len(p.games) - 1 for p in packets(name, prefs=prefs))
    assert uppers("enet-plain.pcap", {}) == 6          # frame 5, the 3 sends of frame 13, 2 reassembled messages
    assert uppers("enet-plain.pcap", {"enet.handoff": "off"}) == 0
    assert uppers("enet-all-commands.pcap", {}) == 0               # port 27015, connect data 0x1234abcd
    assert uppers("enet-all-commands.pcap", {"enet.payload": "iceball"}) == 9


# --- the Lua runtime's pure parts, standalone ----------------------------------------------------------------------

LUA = next((p for p in ("lua5.2", "lua5.4") if __import__("shutil").which(p)), None)


@pytest.mark.skipif(LUA is None, reason="no standalone Lua")
def test_lua_crc32_and_offsets_match_python():
    """rt.crc32 is zlib's CRC-32 and rt.offsets_add assembles like OffsetReassembly (first copy of a byte wins),
    on random overlapping pieces in random order."""
    import zlib

    from protodump.engine.lua_literals import lua_str
    from protodump.reassembly.offsets import OffsetReassembly
    rng = random.Random(7)
    from protodump.dissectors import PROTOCOLS
    from protodump.engine.lua_runtime import limits_line
    lines, want = [limits_line(PROTOCOLS), "rt = {}", f"dofile({lua_str(str(Path(PLUGIN).parent / 'rt_enet.lua'))})",
                   "local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end"], []
    for case in range(60):
        data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
        lines.append(f"print(string.format('%d', rt.crc32({lua_str(data)})))")
        want.append(str(zlib.crc32(data)))
        total = rng.randint(1, 200)
        r, done = OffsetReassembly(total, 1 << 20), None
        lines.append(f"local r{case} = rt.offsets_new({total}); local out{case} = nil")
        frame = 0
        while done is None:
            at = rng.randrange(total)
            piece = bytes(rng.randrange(256) for _ in range(rng.randint(1, total - at)))
            frame += 1
            done = r.add(at, piece, frame)
            lines.append(f"out{case} = out{case} or rt.offsets_add(r{case}, {at}, {lua_str(piece)}, {frame})")
        lines.append(f"print(hex(out{case}))")
        want.append(done.hex())
    proc = subprocess.run([LUA, "-"], input="\n".join(lines), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == want


def test_fragment_limit():
    """A message announcing more fragments than we hold is reported, not reassembled (nothing is allocated)."""
    from protodump.dissectors.enet_analysis import FRAGMENT_LIMIT
    payload = PROTOCOL.encode({"peer_id": 0, "sent_time": 1}, [dict(
        type=12, channel=0, reliable_seq=1, start_seq=1, fragment_count=FRAGMENT_LIMIT + 1, fragment_number=0,
        total_length=10 << 20, fragment_offset=0, data=b"x" * 100)])
    _, tree = PROTOCOL.decode_values(payload)
    messages = [n.expert_info.message for n in tree.walk() if n.expert_info]
    assert messages == [f"Not reassembled: {FRAGMENT_LIMIT + 1} fragments exceed the limit of {FRAGMENT_LIMIT}"]


def test_repeated_fragment_numbers_are_ignored():
    """A flood of copies of one fragment keeps one piece (a message never holds more than its fragment count)."""
    from protodump.engine.context import Ctx
    from protodump.engine.tree import Item
    conv: dict = {}
    for i in range(300):
        payload = PROTOCOL.encode({"peer_id": 0, "sent_time": i}, [dict(
            type=8, channel=0, reliable_seq=1, acknowledge=1, start_seq=1, fragment_count=2, fragment_number=0,
            total_length=20, fragment_offset=0, data=bytes([i % 256]) * 10)])
        tree = Item(PROTOCOL.info, "ENet", 0, len(payload))
        PROTOCOL.dissect(Ctx(payload, 0, len(payload), tree, PROTOCOL, conv, "a:1>b:2", i + 1, []), {})
    (message, count, total, numbers), = conv["enet_messages"].values()
    assert len(message.pieces) == 1 and numbers == {0} and not message.done


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 120), st.lists(st.tuples(st.integers(0, 119), st.integers(1, 120)), min_size=1, max_size=40))
def test_incremental_coverage_is_offset_reassembly(total, spans):
    """OffsetReassembly's running coverage (the spans merged piece by piece) completes exactly when a byte map of
    every piece placed so far is full, and assembles the first copy of every byte."""
    from protodump.reassembly.offsets import OffsetReassembly
    message, have, first = OffsetReassembly(total, 1 << 20), [False] * total, bytearray(total)
    for frame, (at, length) in enumerate(spans, 1):
        at = at % total
        piece = bytes([frame]) * min(length, total - at)
        for i in range(at, at + len(piece)):
            if not have[i]:
                have[i], first[i] = True, frame
        whole = message.add(at, piece, frame)
        if message.done == frame:
            assert whole == bytes(first) and all(have)
        elif not message.done:
            assert whole is None and message.covered() == sum(have) and not all(have)
