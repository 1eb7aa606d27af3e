"""-z io,phs by the fused per-conversation machine (analysis/stats_fused.py) gives exactly the full decode's tree:
on every bundled capture, on a many-conversation replay of every family, through the CLI, on damaged and
reordered input (a property), and where a global bound could be reached (it then decodes everything)."""
import gc
import random
from itertools import islice
import subprocess
import sys
from pathlib import Path

import dpkt
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import PLUGIN, PROTODUMP, TSHARK
from protodump.analysis import stats, stats_fused
from protodump.capture.files import open_capture
from protodump.dissectors import PROTOCOLS
from protodump.engine.dispatch import Dispatcher, Settings
from protodump.output import stats_out
from protodump.session import packets

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from replay import conversation_frames  # noqa: E402

BUNDLED = sorted(str(p) for p in (ROOT / "captures").glob("*.pcap*"))
FAMILIES = ["blank", "enet", "iceball-tcp", "rutentoy", "freeblox"]


def full_tree(path, prefs=None) -> dict:
    gc.collect()        # the reassembly budget is the process's: what an earlier decode's cycles hold goes first
    tap = stats.make_tap("io,phs")
    for packet in packets(path, dispatcher=Dispatcher(PROTOCOLS, Settings(dict(prefs or {})))):
        tap.add(packet)
    return tap.root


def fused_tree(path, prefs=None) -> dict:
    gc.collect()
    return stats_fused.protocol_tree(path, Dispatcher(PROTOCOLS, Settings(dict(prefs or {}))))


def modelled(path) -> tuple[int, int]:
    """(conversations the machine counted, keys it left to the full decode)."""
    machine = stats_fused.Fused(Dispatcher(PROTOCOLS))
    machine.run(path)
    return len(machine.convs), len(machine.full)


def write(path, frames) -> Path:
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for ts, buf, *rest in frames:
            w.writepkt(buf, ts=ts) if not rest else _cut(w, f, ts, buf, rest[0])
    return Path(path)


def _cut(w, f, ts, buf, wire):
    """A record whose frame was cut by the snap length (captured < on the wire)."""
    import struct
    sec, usec = int(ts), int(round((ts - int(ts)) * 1e6))
    f.write(struct.pack("<IIII", sec, usec, len(buf), wire) + buf)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    path = tmp_path_factory.mktemp("fused") / "mix.pcap"
    return write(path, conversation_frames("mix", 6000, 12, 4, FAMILIES))


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.rsplit("/", 1)[-1])
def test_fused_equals_full_decode_on_every_bundled_capture(path):
    assert fused_tree(path) == full_tree(path)
    assert repr(fused_tree(path)) == repr(full_tree(path))      # the same first-seen order too


def test_the_machine_models_the_clean_conversations():
    """Not a vacuous equality: the UDP, ENet, TCP and WebSocket sessions are counted by the machine (a direction
    that stops framing too; WebSocket with and without compression, context takeover, fragments), SCTP, MPTCP and
    a capture that starts mid-stream or reorders segments by the full decode."""
    for name in ("blank-server-session", "iceball-tcp-session", "rutentoy-messages", "rutentoy-struct-numbering",
                 "rutentoy-login-texture", "rutentoy-segmentation", "iceball-enet-session", "enet-all-commands-rc",
                 "blank-port-23456", "rutentoy-bad", "iceball-tcp-bad", "freeblox-session", "freeblox-plain",
                 "freeblox-nocontext", "freeblox-fragments", "freeblox-fragments-nocontext", "freeblox-bad"):
        assert modelled(ROOT / "captures" / f"{name}.pcap") == (1, 0), name
    for name in ("rutentoy-midstream", "rutentoy-lost-reordered", "rutentoy-mptcp",
                 "rutentoy-sctp"):
        assert modelled(ROOT / "captures" / f"{name}.pcap")[0] == 0, name


WS_CAPTURES = ["freeblox-session", "freeblox-fragments", "freeblox-nocontext", "freeblox-bad", "freeblox-burst"]


@pytest.mark.parametrize("prefs", [{"freeblox.ws_port": "8765"}, {"websocket.decompress": "FALSE"},
                                   {"websocket.checks": "TRUE"}, {"protodump.state_budget": "60000"}],
                         ids=lambda p: next(iter(p)))
def test_fused_websocket_with_preferences(prefs):
    """The WebSocket model under the preferences it reads: a registered ws.port instead of the heuristic, no
    inflation, protodump's own checks, a state budget that two inflate windows overrun (the full decode frees
    conversations: the machine's charges then send it all to the full decode)."""
    for name in WS_CAPTURES:
        path = ROOT / "captures" / f"{name}.pcap"
        assert repr(fused_tree(path, prefs)) == repr(full_tree(path, prefs)), name


def _retransmitted(frames, conversations: int) -> list:
    """The frames with the first data segment of `conversations` TCP connections sent twice (a retransmission:
    the machine leaves those connections to the full decode)."""
    out, done = [], set()
    for ts, buf in frames:
        out.append((ts, buf))
        eth = dpkt.ethernet.Ethernet(buf)
        tcp = getattr(eth.data, "data", None)
        if len(done) < conversations and isinstance(tcp, dpkt.tcp.TCP) and tcp.data:
            key = frozenset([(eth.data.src, tcp.sport), (eth.data.dst, tcp.dport)])
            if key not in done:
                done.add(key)
                out.append((ts, buf))
    return out


def test_fused_equals_full_decode_on_many_conversations(tmp_path):
    """Both halves at work and merged: the clean conversations (every family; WebSocket's lost segments before
    the goodbye too) by the machine, the retransmitting ones by the full decode."""
    path = write(tmp_path / "retransmitted.pcap", _retransmitted(conversation_frames("mix", 6000, 12, 4, FAMILIES),
                                                                  12))
    fast, left = modelled(path)
    assert fast >= 40 and left >= 10
    assert repr(fused_tree(path)) == repr(full_tree(path))


def test_websocket_after_a_lost_segment_is_modelled(tmp_path):
    """Freeblox sessions cut to their share keep their goodbye after a gap ([TCP Previous segment not captured],
    no PDU pending): tshark frames the next segment from its start, and so does the machine, which keeps them."""
    path = write(tmp_path / "goodbye.pcap", conversation_frames("mix", 1200, 12, 4, ["freeblox"]))
    fast, left = modelled(path)
    assert (fast, left) == (12, 0)
    assert repr(fused_tree(path)) == repr(full_tree(path))


@pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
@pytest.mark.parametrize("name", ["blank-server-session", "iceball-tcp-session", "rutentoy-messages",
                                  "rutentoy-server-info", "iceball-enet-session", "rutentoy-login-texture"])
def test_fused_matches_tshark_with_the_plugin(name):
    from test_stats import phs_rows
    path = str(ROOT / "captures" / f"{name}.pcap")
    theirs = subprocess.run([TSHARK, "-n", "-X", f"lua_script:{PLUGIN}", "-r", path, "-q", "-z", "io,phs"],
                            capture_output=True, text=True, check=True).stdout
    ours = stats_out.render_text({"kind": "phs", "filter": "", "protocols": _listed(fused_tree(path))})
    assert phs_rows(ours) == phs_rows(theirs)


def _listed(level):
    return [{"protocol": k, "frames": n[0], "bytes": n[1], "children": _listed(n[2])} for k, n in level.items()]


@pytest.mark.parametrize("form", ["text", "json"])
def test_cli_fused_output_is_the_full_decodes(mixed, form):
    """The CLI takes the fused path for -q -z io,phs alone; a preference (-o) makes it decode in full."""
    base = [*PROTODUMP, "--jobs", "1", "-q", "-z", "io,phs", "--format", form, str(mixed)]
    fast = subprocess.run(base, capture_output=True, text=True, check=True)
    full = subprocess.run([*base, "-o", "protodump.conversation_timeout:600"], capture_output=True, text=True,
                          check=True)
    assert fast.stdout == full.stdout and fast.stdout.count("rutentoy") > 0


def test_fused_counts_only_the_first_frames_given_a_limit(mixed):
    """-c N: both passes stop after the N-th frame of the file, where the machine's conversations are cut mid-way."""
    gc.collect()
    tap = stats.make_tap("io,phs")
    for packet in islice(packets(mixed, dispatcher=Dispatcher(PROTOCOLS)), 2500):
        tap.add(packet)
    gc.collect()
    fast = stats_fused.protocol_tree(mixed, Dispatcher(PROTOCOLS), limit=2500)
    assert repr(fast) == repr(tap.root)
    assert sum(n[0] for n in fast.values()) == 2500


@pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
def test_cli_fused_with_a_count_is_tsharks(mixed):
    """-c N -q -z io,phs takes the fused path and prints tshark's rows for the same first N frames."""
    from test_stats import phs_rows
    ours = subprocess.run([*PROTODUMP, "--jobs", "1", "-c", "1800", "-q", "-z", "io,phs", str(mixed)],
                          capture_output=True, text=True, check=True).stdout
    theirs = subprocess.run([TSHARK, "-n", "-X", f"lua_script:{PLUGIN}", "-r", str(mixed), "-c", "1800", "-q",
                             "-z", "io,phs"], capture_output=True, text=True, check=True).stdout
    assert phs_rows(ours) == phs_rows(theirs) and "frames:1800 " in ours


@pytest.mark.parametrize("prefs", [{"protodump.max_conversations": "10"}, {"protodump.conversation_timeout": "1"},
                                   {"protodump.reassembly_budget": "3000"}])
def test_near_a_global_bound_it_is_still_the_full_decode(mixed, prefs):
    """Few live conversations allowed, a short idle timeout, a tiny reassembly budget: the machine gives the
    conversations (or the whole capture) to the full decode, which sees what one pass would."""
    assert repr(fused_tree(mixed, prefs)) == repr(full_tree(mixed, prefs))


# --- damaged and reordered input --------------------------------------------------------------------------------

def _template(names, own_ports=False) -> list:
    """The recordings' frames in time order; with own_ports, the k-th recording's TCP client port moved by k, so
    that recordings made on the same ports stay separate conversations."""
    frames = []
    for k, name in enumerate(names):
        for frame in open_capture(str(ROOT / "captures" / f"{name}.pcap")):
            frames.append((frame.ts_ns / 1e9, _client_port_moved(frame.data, k) if own_ports else frame.data))
    frames.sort(key=lambda f: f[0])
    return frames


def _client_port_moved(buf: bytes, k: int) -> bytes:
    """An Ethernet/IPv4/TCP frame with its port above 10,000 (the client's) plus k; the checksum is not checked."""
    if k == 0 or buf[12:14] != b"\x08\x00" or buf[23] != 6:
        return buf
    at = 14 + (buf[14] & 15) * 4
    ports = [int.from_bytes(buf[at + i:at + i + 2], "big") for i in (0, 2)]
    ports = [p + k if p > 10000 else p for p in ports]
    return buf[:at] + b"".join(p.to_bytes(2, "big") for p in ports) + buf[at + 4:]


TEMPLATE = _template(("rutentoy-messages", "iceball-tcp-session", "blank-sequence", "rutentoy-login-texture",
                      "enet-all-commands-rc", "iceball-enet-all"))
# WebSocket: compressed with context takeover, fragmented, without takeover, plain, damaged (recorded on the same
# ports: each is given its own client port)
WS_TEMPLATE = _template(("freeblox-session", "freeblox-fragments", "freeblox-nocontext", "freeblox-plain",
                         "freeblox-bad"), own_ports=True)
OPS = st.sampled_from(["drop", "repeat", "swap", "cut", "flip", "late", "shift", "icmp"])
EDITS = st.lists(st.tuples(OPS, st.integers(0, len(TEMPLATE) - 1), st.integers(0, 1 << 16)), max_size=6)
WS_EDITS = st.lists(st.tuples(OPS, st.integers(0, len(WS_TEMPLATE) - 1), st.integers(0, 1 << 16)), max_size=6)


def _damaged(edits, template=TEMPLATE) -> list:
    frames = [list(f) for f in template]
    for op, i, arg in edits:
        i %= len(frames)
        ts, buf = frames[i][0], frames[i][1]
        if op == "drop":
            del frames[i]
        elif op == "repeat":                   # a retransmission (or a duplicated datagram)
            frames.insert(i + 1, [ts, buf])
        elif op == "swap" and i + 1 < len(frames):   # out of order, times kept in order
            frames[i][1], frames[i + 1][1] = frames[i + 1][1], frames[i][1]
        elif op == "cut" and len(buf) > 20:    # snap length
            frames[i] = [ts, buf[:14 + arg % (len(buf) - 14)], len(buf)]
        elif op == "flip" and len(buf) > 14:   # any byte (headers, lengths, opcodes)
            at = 14 + arg % (len(buf) - 14)
            frames[i][1] = buf[:at] + bytes([buf[at] ^ (1 + arg % 255)]) + buf[at + 1:]
        elif op == "late":                     # an idle pause longer than a short timeout
            for f in frames[i:]:
                f[0] += 2.0
        elif op == "shift":                    # a sequence number moved (gap or overlap)
            if len(buf) > 54 and buf[23] == 6:
                seq = (int.from_bytes(buf[38:42], "big") + (arg % 64) - 32) % (1 << 32)
                frames[i][1] = buf[:38] + seq.to_bytes(4, "big") + buf[42:]
        elif op == "icmp" and len(buf) > 42 and buf[23] in (6, 17):   # an ICMP error quoting it, sent back
            frames.insert(i + 1, [ts, _icmp_error(buf, arg)])
    return [tuple(f) for f in frames]


def _icmp_error(buf: bytes, arg: int) -> bytes:
    """Port unreachable (or time exceeded) quoting the frame's IP header and some of its payload."""
    quoted = buf[14:14 + 28 + arg % 64]
    icmp = dpkt.icmp.ICMP(type=3 if arg & 1 else 11, code=3 if arg & 1 else 0, data=b"\0\0\0\0" + quoted)
    ip = dpkt.ip.IP(src=buf[30:34], dst=buf[26:30], p=1, ttl=64, data=icmp)
    ip.len = len(ip)
    return bytes(dpkt.ethernet.Ethernet(src=buf[0:6], dst=buf[6:12], type=0x0800, data=ip))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=EDITS, timeout=st.sampled_from([None, "1"]))
def test_prop_fused_equals_full_on_damaged_input(tmp_path, edits, timeout):
    path = write(tmp_path / f"damaged-{random.getrandbits(32)}.pcap", _damaged(edits))
    prefs = {"protodump.conversation_timeout": timeout} if timeout else {}
    assert repr(fused_tree(path, prefs)) == repr(full_tree(path, prefs))


def test_the_templates_are_modelled(tmp_path):
    """The properties below compare something: undamaged, every conversation of their templates is the machine's."""
    assert modelled(write(tmp_path / "template.pcap", TEMPLATE)) == (6, 0)
    assert modelled(write(tmp_path / "ws-template.pcap", WS_TEMPLATE)) == (5, 0)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=WS_EDITS, timeout=st.sampled_from([None, "1"]))
def test_prop_fused_websocket_equals_full_on_damaged_input(tmp_path, edits, timeout):
    """The WebSocket model (analysis/fused_ws.py) on damaged connections: frames lost, repeated, reordered, cut,
    with flipped bytes (headers, lengths, compressed data), paused."""
    path = write(tmp_path / f"ws-{random.getrandbits(32)}.pcap", _damaged(edits, WS_TEMPLATE))
    prefs = {"protodump.conversation_timeout": timeout} if timeout else {}
    assert repr(fused_tree(path, prefs)) == repr(full_tree(path, prefs))
