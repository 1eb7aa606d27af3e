"""tshark's smaller statistics against tshark 4.0: -z icmp,srt and icmpv6,srt (echo loss and response times),
-z sctp,stat (chunks per direction) and -z hosts, on bundled and made captures, with their filters and their
corner cases (duplicate replies, replies earlier than their request, replies to nothing, no reply at all)."""
from __future__ import annotations

import random
import re

import pytest

from conftest import CAPTURES_DIR


def _pings(v6: bool, seed: int, count: int) -> list:
    from scapy.all import ICMP, IP, Ether, ICMPv6EchoReply, ICMPv6EchoRequest, IPv6
    rng = random.Random(seed)
    a, b = ("fe80::1", "fe80::2") if v6 else ("10.0.0.1", "10.0.0.2")
    net = IPv6 if v6 else IP

    def request(ident, seq):
        return Ether() / net(src=a, dst=b) / (ICMPv6EchoRequest(id=ident, seq=seq) if v6 else ICMP(id=ident, seq=seq))

    def reply(ident, seq):
        return Ether() / net(src=b, dst=a) / (ICMPv6EchoReply(id=ident, seq=seq) if v6
                                              else ICMP(type=0, id=ident, seq=seq))
    packets, t = [], 1_700_000_000.0
    for i in range(count):
        t += rng.random()
        p = request(7, i % 30)
        p.time = t
        packets.append(p)
        r = rng.random()
        if r < 0.8:      # answered, sometimes before the request (clock steps) and sometimes twice
            q = reply(7, i % 30)
            q.time = t + rng.choice([0, 0.0004, 0.013, -0.002, 0.25])
            packets.append(q)
            if r < 0.15:
                packets.append(q.copy())
        elif r < 0.9:    # a reply to no request
            q = reply(9, i)
            q.time = t + 0.1
            packets.append(q)
    return packets


@pytest.fixture(scope="module")
def pings(tmp_path_factory):
    from scapy.all import wrpcap
    folder = tmp_path_factory.mktemp("pings")
    wrpcap(str(folder / "ping.pcap"), _pings(False, 5, 60))
    wrpcap(str(folder / "ping6.pcap"), _pings(True, 6, 40))
    wrpcap(str(folder / "unanswered.pcap"), _pings(False, 7, 1)[:1])
    return folder


@pytest.mark.parametrize("name", ["ping.pcap", "ping6.pcap", "unanswered.pcap"])
@pytest.mark.parametrize("args", [("-z", "icmp,srt"), ("-z", "icmpv6,srt"),
                                  ("-z", "icmp,srt,icmp.type==0", "-z", "icmpv6,srt,frame.number>20")])
def test_echo_response_times_are_tsharks(protodump_run, standard_run, pings, name, args):
    ours, theirs = protodump_run("-q", *args, "-r", name, cwd=pings), standard_run("-q", *args, "-r", name, cwd=pings)
    assert ours.returncode == theirs.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout
    assert "Service Response Time" in ours.stdout


def test_a_duplicate_reply_answers_nothing(protodump_run, standard_run, pings):
    """tshark matches a request to its first reply only: the copy has no icmp.resp_to, as in tshark."""
    args = ("-T", "fields", "-e", "frame.number", "-e", "icmp.resp_to", "-e", "icmp.resptime", "-r", "ping.pcap")
    ours, theirs = protodump_run(*args, cwd=pings), standard_run(*args, cwd=pings)
    assert ours.stdout == theirs.stdout
    matched = [line.split("\t")[1] for line in ours.stdout.splitlines() if line.split("\t")[1]]
    assert len(matched) == len(set(matched))        # no request answered twice


@pytest.mark.parametrize("name", ["rutentoy-sctp.pcap", "blank-server-session.pcap"])
@pytest.mark.parametrize("stat", ["sctp,stat", "sctp,stat,sctp.srcport==40009", "hosts", "hosts,ipv4,ipv6"])
def test_sctp_chunks_and_hosts_are_tsharks(protodump_run, standard_run, name, stat):
    """sctp,stat ignores its filter (tshark 4.0 never takes one); hosts prints tshark's header (no name is
    resolved without -N n, and no DNS answer is in these captures)."""
    ours, theirs = protodump_run("-q", "-z", stat, "-r", name), standard_run("-q", "-z", stat, "-r", name)
    assert ours.returncode == theirs.returncode == 0, ours.stderr
    # (the tests' tshark reads a copy of the file: the path it names is the copy's)
    assert ours.stdout == re.sub(r"(?m)^(# Host data gathered from ).*$", rf"\g<1>{name}", theirs.stdout)
    if stat.startswith("hosts"):
        assert f"# Host data gathered from {name}\n" in ours.stdout
    if stat.startswith("sctp") and name.startswith("rutentoy"):
        assert "|       10.0.0.2|29778|       10.0.0.1|40009|      16|" in ours.stdout


def test_a_bad_hosts_argument_is_tsharks(protodump_run, standard_run):
    args = ("-q", "-z", "hosts,ipv5", "-r", "blank-sequence.pcap")
    ours, theirs = protodump_run(*args), standard_run(*args)
    assert ours.returncode == theirs.returncode == 1
    assert ours.stderr.replace("protodump:", "tshark:") == theirs.stderr


def test_sctp_stat_of_every_bundled_capture_merged(protodump_run, standard_run, tmp_path):
    """Every bundled capture at once: the SCTP ones, the others' packets counted nowhere."""
    import shutil
    import subprocess
    if shutil.which("mergecap") is None:
        pytest.skip("no mergecap")
    subprocess.run(["mergecap", "-w", str(tmp_path / "all.pcap"), *map(str, sorted(CAPTURES_DIR.glob("*.pcap")))],
                   check=True)
    args = ("-q", "-z", "sctp,stat", "-z", "icmp,srt", "-r", "all.pcap")
    assert protodump_run(*args, cwd=tmp_path).stdout == standard_run(*args, cwd=tmp_path).stdout
