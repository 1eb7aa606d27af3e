"""The fuzz harness (tools/fuzz.py) on a small fixed sample, its pieces (header rewriting, reproducibility, the
minimiser), and hypothesis for the standard layers: random link/IP/TCP/UDP/SCTP headers through capture.decode
never raise."""
from __future__ import annotations

import struct
import sys

import dpkt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CAPTURES_DIR, ROOT, TSHARK
from protodump.capture.decode import decode
from protodump.capture.files import RawFrame
from protodump.capture.link import LINK_DECODERS
from protodump.capture.sctp import TsnTable
from protodump.capture.tcp_analysis import TcpTable

sys.path.insert(0, str(ROOT / "tools"))
import fuzz  # noqa: E402
from sctp_frames import crc32c  # noqa: E402

# --- the harness ------------------------------------------------------------------------------------------------------


def test_cases_are_reproducible():
    for family in fuzz.FAMILIES:
        a, fa = fuzz.make_case(family, 5, 3)
        b, fb = fuzz.make_case(family, 5, 3)
        assert (a.capture, a.prefs, a.ops, fa) == (b.capture, b.prefs, b.ops, fb)


@pytest.mark.parametrize("name", ["rutentoy-segmentation.pcap", "rutentoy-sctp.pcap", "blank-bad.pcap"])
def test_payload_mutation_keeps_headers_consistent(name):
    """After a payload grows: lengths and checksums recomputed (dpkt verifies both when reading back), the TCP
    stream shifted so later segments still follow on."""
    original = fuzz.read_frames(CAPTURES_DIR / name)
    frames = list(original)
    i = next(k for k, (_, f) in enumerate(frames) if fuzz.payload_of(f))
    old = fuzz.payload_of(frames[i][1])
    new, delta = fuzz.with_payload(frames[i][1], old + b"\xAA" * 5)
    frames[i] = (frames[i][0], new)
    fuzz.shift_tcp(frames, i, delta)
    assert fuzz.payload_of(new) == old + b"\xAA" * 5
    rewritten = [f for (_, f), (_, g) in zip(frames, original) if f != g]   # loopback captures keep stale sums
    assert rewritten
    for frame in rewritten:
        parts = fuzz.l4_of(frame)
        if parts is None:
            continue
        eth, ip, l4 = parts
        raw = bytes(ip)
        assert dpkt.in_cksum(raw[:ip.hl * 4]) == 0                       # IPv4 header checksum
        if isinstance(l4, (dpkt.udp.UDP, dpkt.tcp.TCP)):
            pseudo = struct.pack("!4s4sxBH", ip.src, ip.dst, ip.p, len(raw) - ip.hl * 4)
            assert dpkt.in_cksum(pseudo + raw[ip.hl * 4:]) == 0          # UDP/TCP checksum over the pseudo-header
        else:
            body = bytearray(raw[ip.hl * 4:])
            stored = struct.unpack_from("<I", body, 8)[0]
            body[8:12] = bytes(4)
            assert crc32c(bytes(body)) == stored                             # SCTP CRC32c


def test_minimiser_shrinks_to_the_failing_frames(monkeypatch):
    """The minimiser keeps a case failing while it drops frames: here "failing" is holding frame 7 and 9."""
    frames = fuzz.read_frames(CAPTURES_DIR / "blank-all-current.pcap")
    wanted = {frames[6][1], frames[8][1]}
    monkeypatch.setattr(fuzz, "run_case", lambda path, prefs, names, timeout=60: fuzz.Outcome(
        differ=[1] if wanted <= {f for _, f in fuzz.read_frames(path)} else []))
    small = fuzz.minimise(frames, (), ("blank",))
    assert {f for _, f in small} == wanted


@pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH")
def test_fixed_sample_through_both_halves():
    """Seed 1, three cases per family (about a minute): no crash, hang, Lua error or dissector error, and the game
    layers of protodump and tshark + plugin equal in every frame. docs/fuzzing.md has longer runs."""
    totals = fuzz.campaign(list(fuzz.FAMILIES), seed=1, cases=3, log=lambda line: None)
    for family, t in totals.items():
        assert t["frames"] > 0, family
        assert (t["crashes"], t["hangs"], t["lua_errors"], t["dissector_errors"]) == (0, 0, 0, 0), (family, t)
        assert t["differ"] == 0, (family, t["failing"])


# --- standard layers: any header bytes --------------------------------------------------------------------------------

def ipv4(proto: int, body: bytes, ihl: int, flags_frag: int, total: int | None) -> bytes:
    head = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, total if total is not None else 4 * ihl + len(body), 1,
                       flags_frag, 64, proto, 0, b"\x0a\0\0\x01", b"\x0a\0\0\x02")
    return head + bytes(4 * ihl - 20) + body if ihl >= 5 else head + body


headers = st.fixed_dictionaries({
    "linktype": st.sampled_from(sorted(LINK_DECODERS)),
    "proto": st.sampled_from([6, 17, 132, 41, 1, 0]),
    "ihl": st.integers(0, 15),
    "flags_frag": st.integers(0, 0xFFFF),
    "total": st.one_of(st.none(), st.integers(0, 0xFFFF)),
    "l4": st.binary(max_size=80),
    "tail": st.binary(max_size=40),
    "ethertype": st.sampled_from([b"\x08\x00", b"\x86\xdd", b"\x81\x00", b"\x88\xa8"]),
    "cut": st.integers(0, 200),
})


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(headers)
def test_random_standard_headers_never_raise(h):
    l3 = ipv4(h["proto"], h["l4"] + h["tail"], h["ihl"], h["flags_frag"], h["total"])
    link = {1: b"\x02" * 12 + h["ethertype"], 113: bytes(14) + h["ethertype"], 0: b"\x02\0\0\0",
            108: b"\0\0\0\x02"}.get(h["linktype"], b"")
    data = (link + l3)[:max(0, len(link + l3) - h["cut"])] if h["cut"] < 100 else link + l3
    tcp, tsn = TcpTable(), TsnTable()
    for number in (1, 2):                       # twice: the second frame meets the state the first left
        decode(RawFrame(number, number * 1000, len(data), len(data) + h["cut"] % 7, h["linktype"], 0, data),
               tcp, tsn)


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=120), st.sampled_from(sorted(LINK_DECODERS)))
def test_random_frames_never_raise(data, linktype):
    decode(RawFrame(1, 0, len(data), len(data), linktype, 0, data), TcpTable(), TsnTable())
