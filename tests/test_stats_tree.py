"""The stats trees (-z plen,tree, ptype,tree, ip_hosts,tree, ip_srcdst,tree, dests,tree and the IPv6 forms)
against tshark 4.0 on the bundled captures, on them merged and concatenated, and on a made capture of the
standard layers' corners; the burst-rate window against a count made the slow way."""
from __future__ import annotations

import math
import random
import re
import shutil
import subprocess

import pytest
from hypothesis import given, settings, strategies as st

from conftest import CAPTURES, CAPTURES_DIR, exchanges_pcap
from protodump.analysis.stats_tree import BURST_RESOLUTION_MS, NODE_LIMIT, StatNode, StatsTree

TREES = ["plen", "ptype", "ip_hosts", "ip_srcdst", "dests",
         "ipv6_hosts", "ipv6_srcdst", "ipv6_ptype", "ipv6_dests"]
EVERY_TREE = [a for name in TREES for a in ("-z", f"{name},tree")]


def _same(protodump_run, standard_run, *args, cwd=CAPTURES_DIR):
    ours, theirs = protodump_run(*args, cwd=cwd), standard_run(*args, cwd=cwd)
    assert ours.returncode == theirs.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout
    return ours


@pytest.mark.parametrize("name", CAPTURES)
def test_every_tree_of_every_capture_is_tsharks(protodump_run, standard_run, name):
    ours = _same(protodump_run, standard_run, "-q", *EVERY_TREE, "-r", name)
    assert ours.stdout.count("Topic / Item") == len(TREES)


@pytest.fixture(scope="module")
def capture_sets(tmp_path_factory):
    """Every bundled capture merged in time order (mergecap), and one after another (mergecap -a): many
    addresses and ports, hours between the captures, and times going backwards."""
    if shutil.which("mergecap") is None:
        pytest.skip("no mergecap")
    folder = tmp_path_factory.mktemp("trees")
    paths = [str(CAPTURES_DIR / name) for name in CAPTURES]
    subprocess.run(["mergecap", "-w", str(folder / "merged.pcap"), *paths], check=True)
    subprocess.run(["mergecap", "-a", "-w", str(folder / "concatenated.pcap"), *paths], check=True)
    return folder


@pytest.mark.parametrize("name", ["merged.pcap", "concatenated.pcap"])
@pytest.mark.parametrize("extra", [(), ("-z", "plen,tree,udp", "-z", "dests,tree,tcp.flags.syn==1")])
def test_trees_of_capture_sets_are_tsharks(protodump_run, standard_run, capture_sets, name, extra):
    _same(protodump_run, standard_run, "-q", *EVERY_TREE, *extra, "-r", name, cwd=capture_sets)


@pytest.fixture(scope="module")
def corners(tmp_path_factory):
    """ICMP echo and errors quoting UDP and TCP (counted with the quoted port), ICMPv6 errors, IPv6 extension
    headers, VLAN, ARP, SCTP, an unknown IP protocol, a bad IHL, and random lengths and times (backwards too)."""
    from scapy.all import (ARP, ICMP, IP, SCTP, TCP, UDP, Dot1Q, Ether, ICMPv6DestUnreach, ICMPv6EchoRequest,
                           IPv6, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, wrpcap)
    e = Ether(src="00:11:22:33:44:55", dst="66:77:88:99:aa:bb")
    packets = [
        e / IP(src="10.1.1.1", dst="10.2.2.2") / ICMP() / b"hello",
        e / IP(src="10.2.2.2", dst="10.1.1.1") / ICMP(type=0) / b"hello",
        e / IP(src="10.3.3.3", dst="10.1.1.1") / ICMP(type=3, code=3)
        / IP(src="10.1.1.1", dst="10.2.2.2") / UDP(sport=1234, dport=5678) / b"abcd",
        e / IP(src="10.3.3.3", dst="10.1.1.1") / ICMP(type=3, code=3)
        / IP(src="10.1.1.1", dst="10.2.2.2") / TCP(sport=1234, dport=80),
        e / IPv6(src="fe80::1", dst="2001:db8::2") / UDP(sport=5, dport=6) / b"q",
        e / IPv6(src="fe80::1", dst="2001:db8::2") / IPv6ExtHdrHopByHop() / IPv6ExtHdrRouting() / TCP(sport=5, dport=6),
        e / IPv6(src="2001:db8::2", dst="fe80::1") / ICMPv6DestUnreach()
        / IPv6(src="fe80::1", dst="2001:db8::2") / UDP(sport=5, dport=6),
        e / IPv6(src="2001:db8::2", dst="ff02::1") / ICMPv6EchoRequest(),
        e / Dot1Q(vlan=5) / IP(src="192.168.0.1", dst="192.168.0.2") / UDP(sport=53, dport=53) / b"zz",
        e / ARP(),
        e / IP(src="9.9.9.9", dst="8.8.8.8", ihl=3) / UDP(),
        e / IP(src="9.9.9.9", dst="8.8.8.8") / SCTP(sport=1, dport=2),
        e / IP(src="9.9.9.9", dst="8.8.8.8", proto=200) / b"abc",
    ]
    rng = random.Random(3)
    for _ in range(600):
        packets.append(e / IP(src=f"10.0.0.{rng.randint(1, 9)}", dst=f"10.0.1.{rng.randint(1, 5)}")
                       / UDP(sport=1, dport=rng.randint(1, 20)) / (b"x" * rng.randint(0, 3000)))
    t = 1_700_000_000.0
    for p in packets:
        t += rng.choice([0.0001, 0.001, 0.004, 0.02, 0.3, -0.05])
        p.time = t
    folder = tmp_path_factory.mktemp("corners")
    wrpcap(str(folder / "corners.pcap"), packets)
    return folder


@pytest.mark.parametrize("extra", [(), ("-z", "ptype,tree,udp||icmp", "-z", "dests,tree,frame.number>3",
                                        "-z", "plen,tree,ip.src==10.1.1.1", "-z", "ipv6_dests,tree,icmpv6")])
def test_trees_of_the_standard_layers_corners_are_tsharks(protodump_run, standard_run, corners, extra):
    ours = _same(protodump_run, standard_run, "-q", *EVERY_TREE, *extra, "-r", "corners.pcap", cwd=corners)
    assert " UDP " in ours.stdout and " SCTP " in ours.stdout and " 5678 " in ours.stdout


def test_a_tree_whose_filter_is_bad_is_left_out(protodump_run, standard_run, corners):
    """tshark says the tree failed to attach to its tap, prints the others, and exits 0."""
    args = ("-q", "-z", "ip_hosts,tree,bogus==", "-z", "plen,tree", "-r", "corners.pcap")
    ours, theirs = protodump_run(*args, cwd=corners), standard_run(*args, cwd=corners)
    assert ours.returncode == theirs.returncode == 0
    assert ours.stdout == theirs.stdout and "Packet Lengths:" in ours.stdout and "Addresses" not in ours.stdout
    line = ('stats_tree for: IPv4 Statistics/All Addresses failed to attach to the tap: Filter "bogus==" is '
            'invalid - Unexpected end of filter expression.')
    assert f"protodump: {line}" in ours.stderr and f"tshark: {line}" in theirs.stderr


def _rows(text: str) -> dict[str, list[str]]:
    """A tree's printed rows (between the dashed line under the header and the blank line), by their indented
    item, each with its cells (the name column's width left aside)."""
    lines = text.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("-")) + 1
    rows = {}
    for line in lines[start:lines.index("", start)]:
        name, *cells = line.rstrip().split("  ")
        rows[name.rstrip()] = [c.strip() for c in cells if c.strip()]
    return rows


@pytest.mark.parametrize("limit", [2, 4])
def test_a_tree_past_its_node_limit_leaves_new_items_out_and_counts_the_rest(protodump_run, capture_sets, limit):
    """-o protodump.stats_tree_nodes:N: the first N nodes made are the tree's; a packet's item that would be a
    new node past them is left out (a line on the standard error says how many were), and every node kept
    prints as it does without the limit (its parents still count every packet)."""
    args = ("-q", "-z", "ip_hosts,tree", "-r", "merged.pcap")
    whole = protodump_run(*args, cwd=capture_sets)
    cut = protodump_run(*args, "-o", f"protodump.stats_tree_nodes:{limit}", cwd=capture_sets)
    assert whole.returncode == cut.returncode == 0
    assert "left out" not in whole.stderr
    kept, every = _rows(cut.stdout), _rows(whole.stdout)
    assert len(kept) == limit and len(every) > limit
    assert all(every[name] == cells for name, cells in kept.items())
    left_out = int(re.search(r"ip_hosts,tree: (\d+) items of packets left out, past the tree's limit of "
                             rf"{limit} nodes", cut.stderr).group(1))
    hosts = every["All Addresses"][0]
    assert left_out == 2 * int(hosts) - sum(int(cells[0]) for name, cells in kept.items() if name != "All Addresses")


def test_the_node_limit_preference_defaults_to_the_trees_own_limit():
    """The engine reads the preference (it imports no statistic), so its default is written twice."""
    from protodump.engine.lifetime import PREFERENCES
    assert int(PREFERENCES["stats_tree_nodes"][1]) == NODE_LIMIT == StatsTree("x").limit


def test_a_tree_node_limit_must_be_a_positive_number(protodump_run, corners):
    ours = protodump_run("-q", "-z", "plen,tree", "-o", "protodump.stats_tree_nodes:0", "-r", "corners.pcap",
                         cwd=corners)
    assert ours.returncode != 0 and "protodump.stats_tree_nodes" in ours.stderr and "Packet" not in ours.stdout


def _slow_burst(times_ms: list[float]) -> tuple[int, float]:
    """The most packets within the 20 buckets of 5 ms that end at some packet's bucket, counted the slow way,
    and the start of that window's first bucket: its first packet's time, or 0 while Wireshark's initial empty
    bucket (number 0, time 0) is still inside the window."""
    buckets = [math.floor(t / BURST_RESOLUTION_MS) for t in times_ms]
    best, start = 0, -1.0
    for i, b in enumerate(buckets):
        inside = [j for j in range(i + 1) if buckets[j] > b - 20]
        if len(inside) > best:
            first = min(buckets[j] for j in inside)
            best = len(inside)
            start = 0.0 if b < 20 else min(times_ms[j] for j in inside if buckets[j] == first)
    return best, start


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=40, allow_nan=False), min_size=1, max_size=60))
def test_burst_window_counts_as_the_slow_way(gaps):
    times, now = [], 0.0
    for gap in gaps:
        now += gap
        times.append(now)
    node = StatNode("n", None)
    for t in times:
        node.tick_burst(t, 1)
    assert (node.max_burst, node.burst_ms) == _slow_burst(times)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=70000), min_size=1, max_size=80))
def test_packet_length_ranges_hold_every_packet(lengths):
    """Each length counts in exactly one range, and the ranges' counts, totals and extremes are the parent's."""
    from protodump.analysis.stats_trees import PACKET_LENGTHS
    tree = StatsTree("Packet Lengths")
    node = tree.range_node("Packet Lengths", PACKET_LENGTHS)
    for n, length in enumerate(lengths):
        tree.at(float(n))
        tree.tick("Packet Lengths")
        tree.tick_range(node, length)
    assert sum(c.count for c in node.children) == node.count == len(lengths)
    assert sum(c.total for c in node.children) == node.total == sum(lengths)
    assert min(c.low for c in node.children) == min(lengths)
    assert max(c.high for c in node.children if c.count) == max(lengths)
    for child in node.children:
        floor, ceil = child.range
        assert child.count == sum(floor <= n <= ceil for n in lengths)


HTTP_TREES = [a for name in ("http", "http_req", "http_srv", "http_seq") for a in ("-z", f"{name},tree")]


@pytest.mark.parametrize("name", [n for n in CAPTURES if n.startswith(("freeblox", "websocket"))])
def test_http_trees_of_websocket_captures_are_tsharks(protodump_run, standard_run, name):
    ours = _same(protodump_run, standard_run, "-q", *HTTP_TREES, "-r", name)
    assert "Total HTTP Packets" in ours.stdout


def test_http_trees_of_every_capture_merged_are_tsharks(protodump_run, standard_run, capture_sets):
    ours = _same(protodump_run, standard_run, "-q", *HTTP_TREES, "-z", "http_srv,tree,tcp.dstport==8765",
                 "-r", "merged.pcap", cwd=capture_sets)
    assert "101 Switching Protocols" in ours.stdout


@pytest.fixture(scope="module")
def upgrades(tmp_path_factory):
    """WebSocket upgrades with Referer headers (a chain: / -> /lobby -> /play) answered 101, 404, 999 and a
    redirect (302, Location: /play?room=2)."""
    def upgrade(path, referer):
        return (f"GET {path} HTTP/1.1\r\nHost: game.example:8765\r\nReferer: {referer}\r\nUpgrade: websocket\r\n"
                "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n").encode()
    # (a refusal states its length: without one tshark reads its body up to the connection's end)
    lobby = "http://game.example:8765/lobby"
    folder = tmp_path_factory.mktemp("upgrades")
    exchanges_pcap(folder / "upgrades.pcap", [
        (40001, upgrade("/lobby", "http://game.example/"), b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"),
        (40002, upgrade("/play", lobby), b"HTTP/1.1 999 Odd\r\nContent-Length: 0\r\n\r\n"),
        (40004, upgrade("/old", lobby), b"HTTP/1.1 302 Found\r\nLocation: /play?room=2\r\nContent-Length: 0\r\n\r\n"),
        (40003, upgrade("/play", lobby), b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                         b"Connection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")])
    return folder


def test_http_trees_of_made_upgrades_are_tsharks(protodump_run, standard_run, upgrades):
    ours = _same(protodump_run, standard_run, "-q", *HTTP_TREES, "-r", "upgrades.pcap", cwd=upgrades)
    for text in ("999 Unknown (999)", "404 Not Found", "  KO ", "  http://game.example:8765/lobby ",
                 "   http://game.example:8765/play?room=2 "):
        assert text in ours.stdout


@pytest.mark.parametrize("base,location,target", [
    ("http://a.example/x/y?q=1#f", "", "http://a.example/x/y?q=1#f"),
    ("http://a.example/x/y", "//b.example/z", "http://b.example/z"),
    ("http://a.example/x/y", "https://c.example/", "https://c.example/"),
    ("http://a.example/x/y?q=1", "?r=2", "http://a.example/x/y?r=2"),
    ("http://a.example/x/y?q=1", "/top", "http://a.example/top"),
    ("http://a.example", "/top", None),
    ("http://a.example/x/y", "z", "http://a.example/x/z"),
    ("http://a.example", "z", "http://a.example/z"),
    ("/relative/base", "z", None)])
def test_redirect_targets_resolve_as_tsharks(base, location, target):
    from protodump.analysis.stats_http import location_target
    assert location_target(base, location) == target
