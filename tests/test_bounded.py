"""Constant memory whatever the file size: per-conversation state is bounded (finished transfers keep no bytes,
old transfers and sequence numbers are forgotten), and Python and the plugin forget at the same points."""
import io
import json
import shutil
import sys
from pathlib import Path

import dpkt
import pytest

from protodump.engine.protocol import REMEMBER_LIMIT, SEEN_WINDOW
from protodump.output.json_out import JsonWriter
from protodump.session import packets

from no_cycles import cycles_left

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from bench import replayed_session  # noqa: E402  (the real server session, replayed with renumbered seq/ids)

COUNT = 6000      # > 2 * SEEN_WINDOW datagrams in the server's direction: the window is pruned


@pytest.fixture(scope="module")
def long_session(tmp_path_factory):
    path = tmp_path_factory.mktemp("bounded") / "long.pcap"
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for ts, frame in replayed_session(COUNT):
            w.writepkt(frame, ts=ts)
    return path


def test_state_stays_bounded(long_session):
    from protodump.engine.dispatch import Dispatcher
    from protodump.dissectors import PROTOCOLS
    dispatcher = Dispatcher(PROTOCOLS)
    for _ in packets(long_session, dispatcher=dispatcher):
        pass
    (conv,) = dispatcher.conversations.values()
    assert all(len(s["seen"]) <= 2 * SEEN_WINDOW for s in conv["seq"].values())
    transfers = conv["transfers"].values()
    assert all(t[1].pieces == [] for t in transfers if t[1].done)     # finished transfers keep no bytes
    assert sum(1 for t in transfers if t[1].done) > 300


def test_bounded_put_forgets_the_oldest_key():
    from protodump.engine.context import bounded_put
    table: dict = {}
    for key in range(REMEMBER_LIMIT + 5):
        bounded_put(table, key, key, REMEMBER_LIMIT)
    bounded_put(table, 10, "again", REMEMBER_LIMIT)       # an existing key keeps its place and evicts nothing
    assert len(table) == REMEMBER_LIMIT
    assert min(table) == 5 and table[10] == "again"


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not on PATH")
def test_plugin_forgets_at_the_same_points(long_session):
    from conftest import tshark_cmd_run     # unprivileged, clean configuration (Wireshark >= 4.2: no Lua as root)
    out = tshark_cmd_run(["-X", f"lua_script:{ROOT / 'lua' / 'protodump.lua'}", "-r", str(long_session),
                          "-T", "json"], check=True, timeout=300).stdout
    theirs = json.loads(out.decode("utf-8", "surrogateescape"), object_pairs_hook=lambda kv: kv)
    text = io.StringIO()
    writer = JsonWriter(text)
    for packet in packets(long_session):
        writer.write(packet)
    writer.close()
    ours = json.loads(text.getvalue(), object_pairs_hook=lambda kv: kv)

    def blank_layer(packet):
        layers = dict(dict(packet)["_source"])["layers"]
        found = [v for k, v in layers if k == "blank"]
        return norm(found[0]) if found else None

    def norm(pairs):
        return [(k, norm(v) if isinstance(v, list) else v) for k, v in pairs]

    assert len(ours) == len(theirs) == COUNT
    mismatched = [i + 1 for i, (o, t) in enumerate(zip(ours, theirs)) if blank_layer(o) != blank_layer(t)]
    assert not mismatched, f"frames differ: {mismatched[:10]}"


def test_no_packet_forms_a_reference_cycle():
    """The read loop runs with automatic GC off (protodump/session.py): a packet whose tree, Info closure or
    conversation state formed a cycle would stay alive until the next manual collection. Decoding every bundled
    capture (after a first pass, which may make module-level caches) leaves nothing for the collector."""
    cyclic = cycles_left(sorted((ROOT / "captures").glob("*.pcap")))
    assert not cyclic, f"unreachable cycles left by: {cyclic}"


# --- conversation lifetime and global budgets (engine/lifetime.py, reassembly/budget.py) -----------------------

def _write(path, frames):
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for ts, buf in frames:
            w.writepkt(buf, ts=ts)
    return path


def _decode(path, prefs=None, watch=None):
    """Decode with a fresh dispatcher; watch(dispatcher, packet) after each packet. Returns the dispatcher."""
    from protodump.dissectors import PROTOCOLS
    from protodump.engine.dispatch import Dispatcher, Settings
    dispatcher = Dispatcher(PROTOCOLS, Settings(dict(prefs or {})))
    for packet in packets(path, dispatcher=dispatcher):
        if watch:
            watch(dispatcher, packet)
    return dispatcher


def _live(dispatcher) -> int:
    return len(dispatcher.lifetimes.live) + len(dispatcher.lifetimes.ending)


def test_ended_connections_are_freed(tmp_path):
    """Rutentoy over TCP, 80 connections one after another, each closed with FIN both ways: the state of each is
    freed a few (capture) seconds after its end, so only the recent ones are ever held."""
    from replay import conversation_frames
    path = _write(tmp_path / "tcp.pcap", conversation_frames("mix", 80 * 37, 80, 2, ["rutentoy"]))
    from protodump import session
    peak, dropped = [], []
    forget = session._forget_tcp

    def spy(table, pair):               # the TCP analysis table drops the ended connection too
        before = len(table.connections)
        forget(table, pair)
        dropped.append(before - len(table.connections))

    session._forget_tcp = spy
    try:
        dispatcher = _decode(path, watch=lambda d, p: peak.append(_live(d)))
    finally:
        session._forget_tcp = forget
    assert max(peak) < 25
    assert len(dispatcher.streams.connections) < 25 and len(dispatcher.pair_keys) < 25
    assert len(dropped) > 50 and set(dropped) == {1}


def test_the_cap_frees_the_oldest_and_notes_it(tmp_path):
    """Beyond protodump.max_conversations the oldest idle conversation is freed; its next packet says so."""
    from replay import _template, conversation_frames
    session, _ = _template("blank-server-session.pcap")
    t0 = 1_700_000_000.0
    flood = [(ts, buf) for ts, buf in conversation_frames("opened-once", 300, 300, 1, ["blank"], start=t0 + 1)]
    frames = [(t0 + ts / 100, buf) for ts, buf in session[:10]] + flood + \
             [(flood[-1][0] + 0.001 * i, buf) for i, (_, buf) in enumerate(session[10:20], 1)]
    path = _write(tmp_path / "flood.pcap", frames)
    peak, notes = [], []

    def watch(d, packet):
        peak.append(_live(d))
        notes.extend(packet.number for item in packet.index().get("blank.sequence", ())
                     if "Conversation state was dropped" in item.expert_info.message)

    _decode(path, {"protodump.max_conversations": "50"}, watch)
    assert max(peak) <= 51
    assert notes == [311]                # the first packet of the first conversation after the flood, only it


def test_idle_conversations_are_freed_in_capture_time(tmp_path):
    from replay import _template
    session, _ = _template("blank-server-session.pcap")
    frames = [(1000 + ts, buf) for ts, buf in session[:5]] + [(2000 + ts, buf) for ts, buf in session[5:10]]
    path = _write(tmp_path / "idle.pcap", frames)
    seen = []
    _decode(path, {"protodump.conversation_timeout": "60"},
            lambda d, p: seen.append(id(next(iter(d.conversations.values())))))
    assert len(set(seen[:5])) == 1 and len(set(seen[5:])) == 1 and seen[4] != seen[5]


def test_reassembly_budget_is_an_expert_not_a_crash(tmp_path):
    """ENet fragments that never complete, 40 peers: past the global budget pieces are refused with an expert
    note on the packet, decoding goes on, and the bytes held stay under the budget."""
    from protodump.reassembly.budget import PENDING
    from replay import conversation_frames
    path = _write(tmp_path / "frag.pcap", conversation_frames("enet-fragments", 400, 40, 1, []))
    refused, held = [], []

    def watch(d, packet):
        held.append(PENDING.used)
        refused.extend(packet.number for item in packet.index().get("enet.reassembly", ())
                       if "exceeds the budget" in item.expert_info.message)

    _decode(path, {"protodump.reassembly_budget": "200000"}, watch)
    assert max(held) <= 200_000
    assert len(refused) == 400 - 200_000 // (1000 + 160)
    assert refused[0] == 200_000 // (1000 + 160) + 1


def test_bad_engine_preferences_are_refused():
    from protodump.dissectors import PROTOCOLS
    from protodump.engine.dispatch import Dispatcher, DispatchError, Settings
    for value in ("0", "-3", "x"):
        with pytest.raises(DispatchError):
            Dispatcher(PROTOCOLS, Settings({"protodump.max_conversations": value}))


def test_large_blocks_come_from_the_heap(tmp_path):
    """A frame's large blocks (its JSON text, a reassembled and inflated WebSocket message) come from the C heap,
    not from a fresh mapping each (cli/allocator.py): page faults grow with the capture's memory, not with its
    frames. Freeblox replayed on 30 connections: without the thresholds, about 7 minor faults a frame."""
    import resource
    import subprocess
    from conftest import PROTODUMP
    from replay import conversation_frames
    path = _write(tmp_path / "freeblox.pcap", conversation_frames("mix", 3000, 30, 2, ["freeblox"]))
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
    subprocess.run([*PROTODUMP, "-j", "1", "-T", "json", str(path)], check=True, stdout=subprocess.DEVNULL)
    faults = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - before
    assert faults < 15_000, faults         # start-up (modules, tables) is about 6,000


def test_udp_stream_numbers_past_the_table_limit(monkeypatch):
    """udp.stream is first-seen order, both directions one stream; past LIMIT conversations the first seen is
    forgotten (its next datagram opens a new stream, numbers never reused), however recently it was used."""
    from protodump.capture import conversations
    monkeypatch.setattr(conversations, "LIMIT", 3)
    table = conversations.UdpTable()
    number = lambda a, b: table._conv("10.0.0.1", a, "10.0.0.2", b, 0)[0]     # noqa: E731
    answer = table._conv("10.0.0.2", 9, "10.0.0.1", 1, 0)[0]
    assert [number(1, 9), answer, number(2, 9), number(3, 9), number(1, 9)] == [0, 0, 1, 2, 0]
    assert number(4, 9) == 3                         # (1, 9) goes: first seen
    assert [number(2, 9), number(1, 9), number(3, 9), number(2, 9)] == [1, 4, 2, 5]   # (2, 9) went for (1, 9)
    assert len(table.streams) == 3
