"""IPv4 and IPv6 datagrams reassembled from fragments (reassembly/ip_fragments.py), as tshark's ip.defragment and
ipv6.defragment: game datagrams of the bundled sessions cut into fragments with scapy, sent in order, last
fragment first, interleaved with another datagram's, or with a fragment lost; whole frames against tshark 4.0 +
plugin in every form (one pass and -2); the table's rules and bounds property-based."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from conftest import CAPTURES_DIR, PROTODUMP
from test_std_details import same_as_tshark
from protodump.reassembly.budget import PENDING
from protodump.reassembly.ip_fragments import DATAGRAM_LIMIT, IpFragments

CLIENT, SERVER = "00:1d:7e:d9:94:c0", "52:54:00:12:34:56"


def _fragmented(session: str, count: int, v6: bool = False) -> list:
    """The session's first `count` datagrams; those over 200 bytes as fragments of 128 (IPv6: 200) bytes, by the
    datagram's index: in order, last first, one lost (never complete), or interleaved with the next one's."""
    from scapy.all import IP, UDP, Ether, IPv6, IPv6ExtHdrFragment, fragment, fragment6, rdpcap
    out, held = [], []
    for i, p in enumerate(rdpcap(str(CAPTURES_DIR / session))[:count]):
        ip = IP(bytes(p[IP]))
        ip.id = 3 * i + 1                              # small: the Info column writes four hex digits
        if v6:
            l4 = ip.payload.copy()
            del l4[UDP].chksum, l4[UDP].len
            ip = IPv6(src="fd00::a", dst="fd00::b") / IPv6ExtHdrFragment(id=i + 5) / l4
        if len(ip) <= 200:
            out.append(Ether(src=CLIENT, dst=SERVER) / (ip if not v6 else
                                                        IPv6(src="fd00::a", dst="fd00::b") / ip[UDP]))
            continue
        pieces = [Ether(src=CLIENT, dst=SERVER) / f for f in (fragment6(ip, 200) if v6 else fragment(ip, 128))]
        kind = i % 5
        if kind == 1:
            pieces.reverse()
        elif kind == 2 and len(pieces) > 2:
            del pieces[1]
        elif kind == 3:
            held = pieces
            continue
        if held:
            n = min(len(held), len(pieces))
            pieces = [q for pair in zip(held, pieces) for q in pair] + held[n:] + pieces[n:]
            held = []
        out.extend(pieces)
    out.extend(held)
    for k, q in enumerate(out):
        q.time = 1795285865 + 0.001 * k
    return out


@pytest.fixture(scope="module")
def fragmented(tmp_path_factory) -> list[Path]:
    from scapy.all import wrpcap
    tmp = tmp_path_factory.mktemp("fragments")
    paths = []
    for name, session, count, v6 in (("blank", "blank-server-session.pcap", 80, False),
                                     ("enet", "iceball-enet-session.pcap", 80, False),
                                     ("enet-rc", "enet-rangecoder.pcap", 80, False),
                                     ("blank-v6", "blank-server-session.pcap", 40, True)):
        paths.append(tmp / f"fragments-{name}.pcap")
        wrpcap(str(paths[-1]), _fragmented(session, count, v6))
    return paths


def test_the_captures_hold_reassembled_lost_and_reordered_datagrams(fragmented):
    for path in fragmented:
        out = subprocess.run([*PROTODUMP, "-V", str(path)], capture_output=True, text=True, check=True).stdout
        name = "IPv6" if "v6" in path.name else "IPv4"
        assert out.count(f" {name} Fragments (") >= 3, path.name
        lines = subprocess.run([*PROTODUMP, str(path)], capture_output=True, text=True, check=True).stdout
        assert ("IPv6 fragment (off=" if name == "IPv6" else "Fragmented IP protocol (") in lines, path.name
    summary = subprocess.run([*PROTODUMP, "-2", str(fragmented[0])], capture_output=True, text=True).stdout
    assert " [Reassembled in #" in summary


FORMS = [(), ("-T", "json"), ("-V",), ("-x",), ("-x", "-T", "json"), ("-T", "ek"), ("-2",), ("-2", "-V"),
         ("-2", "-T", "json"), ("-q", "-z", "expert"), ("-T", "fields", "-e", "ip.fragment", "-e", "ipv6.fragment",
                                                         "-e", "udp.stream", "-e", "udp.length")]


@pytest.mark.parametrize("args", FORMS, ids=[" ".join(a) or "summary" for a in FORMS])
def test_fragments_as_tshark(fragmented, args, protodump_run, standard_run):
    for path in fragmented:
        same_as_tshark(path, args, protodump_run, standard_run)


def test_the_protocol_hierarchy_as_tshark(fragmented, tshark_run):
    """io,phs: a reassembled datagram counts under IP as its UDP and game layers; IPv6's fragment header is no
    level of its own (its protocol item sits inside the IPv6 one)."""
    from test_stats import phs_rows
    for path in fragmented:
        ours = protodump_phs(path)
        theirs = tshark_run("-q", "-z", "io,phs", "-r", str(path)).stdout
        assert phs_rows(ours) == phs_rows(theirs), path.name


def protodump_phs(path: Path) -> str:
    return subprocess.run([*PROTODUMP, "-q", "-z", "io,phs", str(path)], capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture(scope="module")
def extension_headers(tmp_path_factory) -> Path:
    """UDP over IPv6 behind a hop-by-hop, a destination options and a routing header."""
    from scapy.all import UDP, Ether, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, wrpcap
    path = tmp_path_factory.mktemp("extensions") / "extensions.pcap"
    base = Ether(src=CLIENT, dst=SERVER) / IPv6(src="fd00::a", dst="fd00::b")
    pkts = [base / ext / UDP(sport=5000, dport=5001) / b"hello"
            for ext in (IPv6ExtHdrHopByHop(), IPv6ExtHdrDestOpt(), IPv6ExtHdrRouting(addresses=["fd00::c"]))]
    for k, q in enumerate(pkts):
        q.time = 1795285865 + k
    wrpcap(str(path), pkts)
    return path


def test_extension_headers_as_tshark(extension_headers, protodump_run, standard_run):
    """An extension header's fields carry its own protocol's EK prefix (ipv6_hopopts_ipv6_hopopts_nxt), and no
    extension header is a level of io,phs."""
    from test_stats import phs_rows
    same_as_tshark(extension_headers, ("-T", "ek"), protodump_run, standard_run)
    theirs = standard_run("-q", "-z", "io,phs", "-r", str(extension_headers)).stdout
    assert phs_rows(protodump_phs(extension_headers)) == phs_rows(theirs)
    assert [row[1] for row in phs_rows(theirs)][:4] == ["eth", "ipv6", "udp", "data"]


def test_a_capture_with_fragments_is_read_by_one_process(fragmented):
    """-j 2 cannot share out a datagram's fragments: it says so and reads in one process, the same output."""
    path = fragmented[1]
    one = subprocess.run([*PROTODUMP, "-j", "1", "-T", "json", str(path)], capture_output=True, text=True)
    two = subprocess.run([*PROTODUMP, "-j", "2", "-T", "json", str(path)], capture_output=True, text=True,
                         env={**__import__("os").environ, "PROTODUMP_JOBS_VERBOSE": "1"})
    assert two.stdout == one.stdout
    assert "one process (an IP fragment at frame" in two.stderr


# --- the table -------------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(size=st.integers(1, 3000), cut=st.integers(8, 1480), order=st.randoms(use_true_random=False),
       lose=st.booleans())
def test_prop_a_datagram_completes_with_its_last_missing_piece_whatever_the_order(size, cut, order, lose):
    payload = bytes(i % 251 for i in range(size))
    cut -= cut % 8
    pieces = [(at, payload[at:at + cut]) for at in range(0, size, cut)]
    order.shuffle(pieces)
    if lose and len(pieces) > 1:
        pieces.pop()
    table, used = IpFragments(), PENDING.used
    results = [table.add("k", at, data, at + len(data) < size, frame) for frame, (at, data) in enumerate(pieces)]
    if lose and len(results) < -(-size // cut):
        assert results == [None] * len(results) and len(table.pending) == 1
        table.pending.clear()
    else:
        assert results[:-1] == [None] * (len(results) - 1)
        shown, whole = results[-1]
        assert whole == payload and [s[1] for s in shown] == sorted(at for at, _ in pieces)
        assert not table.pending
    PENDING.used = used


def test_overlaps_and_pieces_past_the_end_give_the_datagram_up_and_its_bytes_back():
    used = PENDING.used
    table = IpFragments()
    assert table.add("a", 0, b"x" * 16, True, 1) is None
    assert table.add("a", 8, b"y" * 16, True, 2) is None            # overlaps the first: given up
    assert not table.pending and PENDING.used == used
    assert table.add("b", 16, b"x" * 8, False, 3) is None           # the end: 24
    assert table.add("b", 24, b"y" * 8, True, 4) is None            # past it: given up
    assert not table.pending and PENDING.used == used
    assert table.add("c", 65528, b"z" * 16, False, 5) is None       # over 65,535 bytes
    assert not table.pending


def test_pending_datagrams_are_bounded_in_number_and_by_the_budget():
    used = PENDING.used
    table = IpFragments(limit=3)
    for key in range(10):
        table.add(key, 0, b"x" * 8, True, key)
    assert list(table.pending) == [7, 8, 9]
    table.pending.clear()
    PENDING.used = used
    limit, PENDING.limit = PENDING.limit, used + 500
    try:
        table = IpFragments()
        assert table.add("a", 0, b"x" * 200, True, 1) is None and table.refused == 0
        assert table.add("a", 200, b"x" * 200, True, 2) is None and table.refused == 1
        assert not table.pending and PENDING.used == used
    finally:
        PENDING.limit = limit
    assert DATAGRAM_LIMIT == IpFragments().limit


def test_the_budget_refusal_is_an_expert_note_and_the_fragments_stay_fragments(fragmented):
    out = subprocess.run([*PROTODUMP, "-o", "protodump.reassembly_budget:200", "-q", "-z", "expert",
                          str(fragmented[0])], capture_output=True, text=True, check=True).stdout
    assert "Reassemble               IPv4  Pending reassembly exceeds the budget of 200 bytes" in out
    summary = subprocess.run([*PROTODUMP, "-o", "protodump.reassembly_budget:200", str(fragmented[0])],
                             capture_output=True, text=True, check=True).stdout
    assert "Fragmented IP protocol" in summary
