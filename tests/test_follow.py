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
