"""Constant memory whatever the file size: per-conversation state is bounded (finished transfers keep no bytes,
old transfers and sequence numbers are forgotten), and Python and the plugin forget at the same points."""
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import dpkt
import pytest

from protodump.engine.protocol import REMEMBER_LIMIT, SEEN_WINDOW
from protodump.output.json_out import JsonWriter
from protodump.session import packets

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
    out = subprocess.run(["tshark", "-X", f"lua_script:{ROOT / 'lua' / 'protodump.lua'}", "-r", str(long_session),
                          "-T", "json"], capture_output=True, check=True, timeout=300).stdout
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
    import gc
    captures = sorted((ROOT / "captures").glob("*.pcap"))
    for path in captures:                  # warm-up: lazy imports and caches made once
        for packet in packets(path):
            packet.info
    cyclic = {}
    was = gc.isenabled()
    try:
        for path in captures:
            gc.collect()
            gc.disable()
            for packet in packets(path):
                packet.info
                packet.index()
            found = gc.collect()
            if found:
                cyclic[path.name] = found
    finally:
        if was:
            gc.enable()
    assert not cyclic, f"unreachable cycles left by: {cyclic}"
