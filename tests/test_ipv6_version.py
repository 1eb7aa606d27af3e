"""IPv6's hidden `ip.version`: packet-ipv6.c registers its own field (hf_ip_version, bitmask 0xF0, under ipv6) and
appends a note to its label, so PDML shows the bit picture and the note, `value` is the masked value with
`unmaskedvalue` the byte, JSON `-x` gives the mask, and EK names it `ipv6_ip_version`. (IPv4's ip.version, like
ipv6.version, has no bitmask in 4.0: the dissector draws the picture itself.) The whole packet is compared with
tshark + plugin; the bundled captures hold no IPv6."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import tshark_available

pytestmark = pytest.mark.skipif(not tshark_available(), reason="tshark is not on PATH")
TMP = Path(__file__).resolve().parent / "tmp"


@pytest.fixture(scope="module")
def v6_capture() -> str:
    from scapy.all import IP, IPv6, UDP, Ether, wrpcap
    pl = b"\xaf\xb1\x1a\xfb" + b"\x00" * 20
    e = Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00")
    pkts = [e / IPv6(src="::1", dst="::1") / UDP(sport=40000, dport=12354) / pl,
            e / IP(src="127.0.0.1", dst="127.0.0.1") / UDP(sport=40000, dport=12354) / pl,
            # a traffic class: EF (tshark's IPv6 text says "EF PHB"), AF11 with ECT(1)
            e / IPv6(src="::1", dst="::1", tc=0xb8) / UDP(sport=40000, dport=12354) / pl,
            e / IPv6(src="::1", dst="::1", tc=0x29) / UDP(sport=40000, dport=12354) / pl]
    for i, p in enumerate(pkts):
        p.time = 1700000000 + i * 0.25
    TMP.mkdir(exist_ok=True)
    path = TMP / "ipv6-version.pcap"
    wrpcap(str(path), pkts)
    return str(path)


def test_pdml_hidden_ip_version(v6_capture, protodump_run, standard_run):
    theirs = standard_run("-T", "pdml", "-r", v6_capture).stdout
    ours = protodump_run("-T", "pdml", "-r", v6_capture).stdout
    line = next(x for x in theirs.splitlines() if 'name="ip.version"' in x)
    assert 'value="6" unmaskedvalue="60"' in line and "[This field makes the filter match on" in line
    preamble = re.compile(r'^<pdml .*$', re.M)
    assert preamble.sub("", ours) == preamble.sub("", theirs)


@pytest.mark.parametrize("form", [("-T", "json", "-x"), ("-T", "ek", "-x"), ("-T", "json"), ("-V",)])
def test_whole_ipv6_packet(form, v6_capture, protodump_run, standard_run):
    theirs = standard_run(*form, "-r", v6_capture).stdout
    assert protodump_run(*form, "-r", v6_capture).stdout == theirs
    if "ek" in form:
        assert '"ipv6_ip_version_raw":"6"' in theirs


def test_ip_version_filter_matches_both(v6_capture, protodump_run, standard_run):
    args = ("-Y", "ip.version == 6", "-T", "fields", "-e", "frame.number", "-e", "ip.version")
    expected = "1\t6\n3\t6\n4\t6\n"
    assert protodump_run(*args, "-r", v6_capture).stdout == standard_run(*args, "-r", v6_capture).stdout == expected
