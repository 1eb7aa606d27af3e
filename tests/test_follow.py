"""-z follow: byte for byte against tshark's own follow output (udp on the blank captures, tcp on a real TCP
session), and follow,blank's messages and reassembled chunk buffers."""
from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import pytest

from conftest import CAPTURES_DIR, TSHARK
from protodump.analysis import stats
from protodump.output import stats_out
from protodump.session import packets

pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")

SEQ = str(CAPTURES_DIR / "blank-sequence.pcap")
BAD = str(CAPTURES_DIR / "blank-bad.pcap")
SESSION = str(CAPTURES_DIR / "blank-server-session.pcap")
TCP = "/work/shared/captures/iceball-tcp-session.pcap"

CASES = [(SEQ, f"follow,udp,{m},0") for m in ("ascii", "hex", "raw", "yaml")] + [
    (SEQ, "follow,udp,hex,127.0.0.1:12354,127.0.0.1:40123"),
    (SEQ, "follow,udp,ascii,1"),                       # no such stream: empty, "Node 0: :0"
    (BAD, "follow,udp,hex,0"),
] + [(TCP, f"follow,tcp,{m},0") for m in ("ascii", "hex", "raw", "yaml")]
CASES = [c for c in CASES if os.path.exists(c[0])]


def _tshark(case):
    path, arg = case
    # bytes, not text=True: the ascii form keeps the payload's \r, which universal newlines would rewrite
    return subprocess.run([TSHARK, "-n", "-r", path, "-q", "-z", arg], capture_output=True,
                          check=True).stdout.decode()


@lru_cache(maxsize=None)
def tshark_outputs() -> dict:
    with ThreadPoolExecutor(4) as pool:
        return dict(zip(CASES, pool.map(_tshark, CASES)))


@lru_cache(maxsize=None)
def decoded(path):
    return list(packets(path))


def ours(path, arg) -> str:
    (result,) = stats.run(decoded(path), [arg])
    return stats_out.render_text(result)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{os.path.basename(c[0])}:{c[1]}")
def test_follow_matches_tshark(case):
    assert ours(*case) == tshark_outputs()[case]


def test_follow_tcp_drops_retransmissions():
    """A retransmitted segment (same bytes again) does not repeat in the stream; an overlap is trimmed."""
    from protodump.analysis.follow import FollowTcp
    tap = FollowTcp(["raw", "0"])
    frames = decoded(TCP)
    for p in frames:
        tap.add(p)
    first = [r["data"] for r in tap.result()["records"]]
    tap = FollowTcp(["raw", "0"])
    for p in frames + [frames[7]]:            # frame 8 (3601 bytes) again at the end
        tap.add(p)
    assert [r["data"] for r in tap.result()["records"]] == first


def test_follow_blank_shows_messages_and_reassembled_chunks():
    (result,) = stats.run(decoded(SESSION), ["follow,blank,hex,0"])
    records = result["records"]
    assert len(records) == 1342 and result["filter"] == "udp.stream eq 0 and blank"
    chunk = next(r for r in records if r["buffers"])
    assert chunk["frame"] == 6 and chunk["info"].startswith("Chunk Data")
    assert [(b["name"], len(b["data"])) for b in chunk["buffers"]] == [("Reassembled chunk", 45),
                                                                       ("Inflated chunk (zlib)", 45),
                                                                       ("Inflated chunk", 20484)]
    text = stats_out.render_text(result)
    assert "\tFrame 6: Chunk Data seq=3" in text and "\t[Inflated chunk: 20484 bytes]" in text
    import zlib
    assert zlib.decompress(chunk["buffers"][0]["data"]) == chunk["buffers"][-1]["data"]


def test_follow_blank_yaml_carries_the_buffers():
    (result,) = stats.run(decoded(SEQ), ["follow,blank,yaml,0"])
    text = stats_out.render_text(result)
    assert text.startswith("peers:\n  - peer: 0\n    host: 127.0.0.1\n    port: 40123\n")
    assert text.count("  - packet: ") == 24 and '    info: "Login seq=' in text


def _gapped_v6(path):
    """A Rutentoy-like TCP connection over IPv6 whose client segment 71-141 is not in the capture (the server
    acknowledges it), then data both ways and a close; and a UDP stream whose payloads end in spaces."""
    from scapy.all import IPv6, TCP, UDP, Ether, IP, wrpcap
    e = Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00")
    c, s = dict(src="::1", dst="::1", sport=40003, dport=29778), dict(src="::1", dst="::1", sport=29778, dport=40003)

    def seg(side, flags, seq, ack, data=b""):
        return e / IPv6(src=side["src"], dst=side["dst"]) / TCP(sport=side["sport"], dport=side["dport"], flags=flags,
                                                                 seq=seq, ack=ack, window=512) / data
    a, b = 1000, 5000
    frames = [seg(c, "S", a, 0), seg(s, "SA", b, a + 1), seg(c, "A", a + 1, b + 1),
              seg(c, "PA", a + 1, b + 1, b"x" * 70),
              seg(s, "PA", b + 1, a + 141, b"reply one " * 7),           # acknowledges bytes never captured
              seg(c, "PA", a + 141, b + 71, b"tail of the client  "),
              seg(c, "PA", a + 181, b + 71, b"out of order"),            # 20 more bytes missing before it
              seg(s, "A", b + 71, a + 161),                               # (not the out-of-order one yet)
              seg(c, "PA", a + 193, b + 71, b"more"),                    # in flight again after the peer's ACK
              seg(s, "A", b + 71, a + 197),
              seg(c, "FA", a + 197, b + 71), seg(s, "FA", b + 71, a + 198), seg(c, "A", a + 198, b + 72)]
    u = [e / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1000, dport=2000) / pl
         for pl in (b"A" * 14 + b"  ", b"B" * 8, b"C" * 6 + b"  ", b"D" * 15 + b" " + b"E" * 3 + b" ", b" " * 16,
                    b"G" * 9 + b"  ")]
    for i, p in enumerate(frames + u):
        p.time = 1700000000 + i / 1000
    wrpcap(str(path), frames + u)
    return str(path)


@pytest.mark.parametrize("args", [("follow,tcp,ascii,0",), ("follow,tcp,hex,0",), ("follow,tcp,raw,0",),
                                  ("follow,tcp,yaml,0",), ("follow,udp,hex,0",)], ids=lambda a: a[0])
def test_follow_gaps_ipv6_and_trailing_spaces_are_tsharks(tmp_path_factory, protodump_run, standard_run, args):
    """Bytes the capture lacks but the peer acknowledged become "[N bytes missing in capture file]" and a NUL
    (a segment past a gap is held until then); IPv6 nodes are [ADDR]:PORT; a hex line loses one trailing space."""
    path = _gapped_v6(tmp_path_factory.mktemp("gap") / "gap.pcap")
    ours, theirs = protodump_run("-q", "-z", args[0], path), standard_run("-q", "-z", args[0], "-r", path)
    assert ours.stdout == theirs.stdout
    if args[0].startswith("follow,tcp,ascii"):
        assert "[70 bytes missing in capture file]." in ours.stdout and "Node 0: [::1]:40003" in ours.stdout


def test_gapped_connection_whole_frames(tmp_path_factory, protodump_run, standard_run):
    """An ACK from the peer counts a direction's bytes in flight again after its lost segment (tshark:
    valid_bif), so the SEQ/ACK analysis of the segments after it is tshark's."""
    from whole_frame import compare
    path = _gapped_v6(tmp_path_factory.mktemp("gapj") / "gap.pcap")
    same, compared, left_out, differ = compare(protodump_run("-T", "json", path).stdout,
                                               standard_run("-T", "json", "-r", path).stdout)
    assert (same, compared, left_out, differ) == (19, 19, [], [])
