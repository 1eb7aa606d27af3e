"""Decode only what is asked (engine.demand): statistics, -T fields with a few fields and filters with -q read only
some fields, so the dispatcher skips what nothing reads. Every such run must print exactly what the full decode
prints, on every bundled capture and on a many-conversation replay."""
from pathlib import Path

import pytest
from click.testing import CliRunner

from protodump.cli import read_cmd
from protodump.dissectors import PROTOCOLS
from protodump.engine import demand
from protodump.engine.protocol import Protocol

from test_fast_path import mixed  # noqa: F401  (the many-conversation replay fixture)

ROOT = Path(__file__).resolve().parents[1]

GAMES = [p.name for p in PROTOCOLS]
MODES = [
    ["-q", "-z", "io,phs"],
    ["-q", "-z", "io,stat,1", "-z", "conv,udp", "-z", "conv,tcp"],
    ["-q", *(a for name in GAMES for a in ("-z", f"{name},types"))],
    ["-q", "-z", "io,stat,1,blank.seq>3,tcp.len>10", "-z", "conv,tcp,freeblox", "-z", "io,phs,rutentoy"],
    ["-T", "fields", "-e", "frame.number", "-e", "blank.seq", "-e", "blank.type", "-e", "_ws.col.Protocol",
     "-e", "ip.addr", "-e", "tcp.stream"],
    ["-T", "fields", "-e", "frame.protocols", "-e", "freeblox.id", "-e", "rutentoy.opcode", "-e", "iceball.id",
     "-e", "iceball.lua_id", "-e", "enet.command.type", "-e", "websocket.opcode", "-e", "blank.acked"],
    ["-Y", "blank.seq > 3 || freeblox || rutentoy.opcode == 2", "-T", "fields", "-e", "frame.number",
     "-e", "udp.port", "-e", "sctp.chunk_type", "-e", "tcp.segments"],
    # ENet's generated items, each asked alone of the fields its walk may leave out (enet_analysis.shown)
    ["-T", "fields", "-e", "frame.len", "-e", "enet.connection.mtu", "-e", "enet.decompressed_length",
     "-e", "enet.acknowledge.rtt", "-e", "enet.reassembled.length", "-e", "enet.reassembled_in"],
]


def run(args, full: bool, monkeypatch) -> str:
    with monkeypatch.context() as m:
        if full:
            m.setattr(read_cmd, "run_demand", lambda *a: None)
        result = CliRunner().invoke(read_cmd.read, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "captures").glob("*.pcap")))
def test_asked_fields_only_equal_the_full_decode(name, monkeypatch):
    path = ROOT / "captures" / name
    for args in MODES:
        assert run([*args, path], False, monkeypatch) == run([*args, path], True, monkeypatch), args


@pytest.mark.parametrize("args", MODES, ids=[" ".join(m[:3]) for m in MODES])
def test_asked_fields_only_on_many_conversations(mixed, args, monkeypatch):
    fast = run([*args, mixed], False, monkeypatch)
    assert fast == run([*args, mixed], True, monkeypatch)
    assert fast.strip()


def test_these_runs_ask_for_a_few_fields_and_others_for_everything():
    assert read_cmd.run_demand([], None, None, False, True, "text", ()).names == frozenset()
    asked = read_cmd.run_demand([], "blank.seq > 3", None, False, False, "fields", ("frame.number",))
    assert asked.of("blank") == {"blank.seq"} and asked.roots == {"blank", "frame"}
    assert read_cmd.run_demand([], None, None, False, False, "text", ()) is None          # the summary's Info
    assert read_cmd.run_demand([], None, None, False, False, "fields", ("_ws.col.Info",)) is None
    assert read_cmd.run_demand([], "_ws.expert", None, False, True, "text", ()) is None
    assert read_cmd.run_demand([], None, None, True, True, "text", ()) is None             # -2


def test_a_layer_nothing_reads_is_not_dissected(monkeypatch):
    calls = []
    original = Protocol.dissect
    monkeypatch.setattr(Protocol, "dissect", lambda self, ctx, prefs: calls.append(1) or original(self, ctx, prefs))
    path = ROOT / "captures" / "blank-server-session.pcap"
    phs = run(["-q", "-z", "io,phs", path], False, monkeypatch)
    assert "blank" in phs and calls == []
    run(["-q", "-z", "blank,types", path], False, monkeypatch)
    assert calls                              # the type is in the header: dissected, up to the header


def test_the_comparison_sees_a_missing_field(monkeypatch):
    """The equality above can fail: a run that asks for nothing loses blank.seq."""
    path = ROOT / "captures" / "blank-server-session.pcap"
    args = ["-T", "fields", "-e", "blank.seq", path]
    with monkeypatch.context() as m:
        m.setattr(read_cmd, "run_demand", lambda *a: demand.Demand(()))
        starved = CliRunner().invoke(read_cmd.read, [str(a) for a in args]).output
    assert starved != run(args, True, monkeypatch)


def test_enet_read_for_its_presence_keeps_its_state_and_builds_no_items(monkeypatch):
    """io,phs reads nothing of ENet: its datagrams are scanned (engine.fields scan: values, no items), and what
    they keep (CONNECT, fragments) still hands every Iceball message up, as the full decode does."""
    from protodump.dissectors import enet_analysis
    scanned, walked = [], []
    original_scan, original_walk = enet_analysis.scan_datagram, enet_analysis.walk_commands
    monkeypatch.setattr(enet_analysis, "scan_datagram", lambda *a: scanned.append(1) or original_scan(*a))
    monkeypatch.setattr(enet_analysis, "walk_commands", lambda *a: walked.append(1) or original_walk(*a))
    path = ROOT / "captures" / "iceball-enet-session.pcap"
    phs = run(["-q", "-z", "io,phs", path], False, monkeypatch)
    assert scanned and not walked and "iceball" in phs
    assert phs == run(["-q", "-z", "io,phs", path], True, monkeypatch)


def test_rutentoy_read_for_its_presence_keeps_its_state_and_builds_no_items(monkeypatch):
    """io,phs outside the fused machine (beside another statistic here) reads nothing of Rutentoy but its presence:
    its stateful messages (text commands, textures) are scanned (their state kept; no items, no hash, no QOI walk),
    and the hierarchy is the full decode's."""
    from protodump.engine import blocks_cookies
    shown = []
    for cls in (blocks_cookies.TextReassembly, blocks_cookies.ImageReassembly):
        monkeypatch.setattr(cls, "show", lambda self, *a, _show=cls.show: shown.append(1) or _show(self, *a))
    args = ["-q", "-z", "io,phs", "-z", "conv,tcp", ROOT / "captures" / "rutentoy-login-texture.pcap"]
    phs = run(args, False, monkeypatch)
    assert not shown and "rutentoy" in phs
    assert phs == run(args, True, monkeypatch)
    assert shown                                # (the full decode shows them)

def test_only_the_asked_fields_of_a_table_get_items():
    """A run asking for blank.type gets that item and not the header's other fields (Ctx.asked), with the same
    values in the scope as the full decode."""
    from protodump.engine.context import Ctx
    from protodump.engine.tree import Item
    blank = next(p for p in PROTOCOLS if p.name == "blank")
    import dpkt
    with open(ROOT / "captures" / "blank-server-session.pcap", "rb") as f:
        payload = bytes(dpkt.ethernet.Ethernet(next(iter(dpkt.pcap.Reader(f)))[1]).data.data.data)
    trees, scopes = [], []
    for asked in (None, frozenset({"blank.type"})):
        tree = Item(blank.info, None, 0, len(payload))
        ctx = Ctx(payload, 0, len(payload), tree, blank, {}, "a>b", 1, [])
        ctx.asked = asked
        blank.header.decode(ctx, tree)
        trees.append([i.field.abbrev for i in tree.walk() if i.field is not None and i is not tree])
        scopes.append(ctx.scopes[0])
    assert "blank.type" in trees[1] and "blank.seq" not in trees[1] and "blank.seq" in trees[0]
    assert scopes[0] == scopes[1]
