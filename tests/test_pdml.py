"""-T pdml: whole packets (geninfo, frame, eth, ip, udp/tcp/sctp, the game layers) against tshark 4.0 + the
generated plugin, packet by packet, on every bundled capture. The preamble is compared but for the creator and
the time stamp. Packets left out are in KNOWN with the reason (docs/tshark-formats.md, "-T pdml")."""
from __future__ import annotations

import re

import pytest

from conftest import VARIANTS, variant_id

# capture -> the kinds of difference its packets may have (docs/tshark-formats.md 10); the others are identical.
# Empty since the postdissector's fake item comes before the layers it shows (output/lua_fakes.py).
KNOWN: dict[str, tuple[str, ...]] = {}
# kind -> what a packet of protodump's that differs for that reason holds
SIGNS: dict[str, re.Pattern] = {}


def packets(text: str) -> list[str]:
    return re.findall(r"<packet>\n.*?</packet>\n", text, re.S)


def head(text: str) -> str:
    first = text.split("<packet>", 1)[0]
    return re.sub(r'creator="[^"]*" time="[^"]*" capture_file="[^"]*"', "", first)   # the fixture stages the file


@pytest.mark.parametrize("variant", VARIANTS, ids=variant_id)
def test_pdml_is_tsharks(protodump_run, standard_run, variant):
    name, extra = variant
    ours = protodump_run("-T", "pdml", *extra, "-r", name)
    theirs = standard_run("-T", "pdml", *extra, "-r", name)
    assert ours.returncode == 0, ours.stderr
    assert head(ours.stdout) == head(theirs.stdout)
    assert f'capture_file="{name}">' in ours.stdout.split("<packet>", 1)[0]
    assert ours.stdout.endswith("</packet>\n\n\n</pdml>\n") and theirs.stdout.endswith("</packet>\n\n\n</pdml>\n")
    mine, their = packets(ours.stdout), packets(theirs.stdout)
    assert len(mine) == len(their)
    differ = [n for n, (a, b) in enumerate(zip(mine, their), 1) if a != b]
    print(f"{name}: {len(mine) - len(differ)}/{len(mine)} packets identical")
    unexplained = [n for n in differ if not any(SIGNS[why].search(mine[n - 1]) for why in KNOWN.get(name, ()))]
    assert not unexplained, f"{name}: packets {unexplained[:10]} differ"


def test_pdml_without_packets(protodump_run, standard_run):
    ours = protodump_run("-T", "pdml", "-Y", "frame.number == 0", "-r", "blank-bad.pcap")
    theirs = standard_run("-T", "pdml", "-Y", "frame.number == 0", "-r", "blank-bad.pcap")
    assert head(ours.stdout) + "</pdml>\n" == head(theirs.stdout) + "</pdml>\n"
    assert ours.stdout.endswith('">\n</pdml>\n') and theirs.stdout.endswith('">\n</pdml>\n')


@pytest.mark.parametrize("name, flag, names", [
    ("freeblox-fragments.pcap", "-j", "ip"), ("freeblox-fragments.pcap", "-J", "tcp"),
    ("rutentoy-lost-reordered.pcap", "-j", "tcp tcp.flags tcp.flags.syn"), ("blank-bad.pcap", "-j", "blank"),
    ("blank-bad.pcap", "-j", "blank _ws.expert"), ("rutentoy-sctp.pcap", "-J", "sctp"),
    ("iceball-enet-session.pcap", "-j", "frame")])
def test_pdml_with_protocol_filter_is_tsharks(protodump_run, standard_run, name, flag, names):
    """-j / -J in PDML (print.c): every node is written, but one with children that the list does not name shows
    `<field name="filtered" value="ABBREV" />` in their place (-J: all under a named one); geninfo always."""
    ours, theirs = (run("-T", "pdml", flag, names, "-r", name) for run in (protodump_run, standard_run))
    assert ours.returncode == 0, ours.stderr
    assert 'name="filtered"' in theirs.stdout
    assert packets(ours.stdout) == packets(theirs.stdout)


def test_protocol_filter_is_ignored_outside_the_trees(protodump_run, standard_run):
    """tshark takes -j with any output form and ignores it where there is no tree to filter."""
    for form in (("-T", "psml"), ("-T", "fields", "-e", "ip.src"), ()):
        args = (*form, "-j", "ip", "-c", "3", "-r", "blank-bad.pcap")
        ours, theirs = protodump_run(*args), standard_run(*args)
        creator = re.compile(r'creator="[^"]*"')
        assert (ours.returncode, creator.sub("", ours.stdout)) == (theirs.returncode, creator.sub("", theirs.stdout))


@pytest.mark.parametrize("name", ["rutentoy-sctp.pcap", "freeblox-plain.pcap", "blank-server-session.pcap"])
def test_pdml_with_fields_is_tsharks(protodump_run, standard_run, name):
    """-T pdml -e: the geninfo block, then one `<field name value/>` per value of each field (print.c)."""
    args = ("-T", "pdml", "-e", "frame.number", "-e", "ip.addr", "-e", "_ws.col.Info", "-e", "blank.seq",
            "-e", "tcp.port", "-r", name)
    ours, theirs = protodump_run(*args), standard_run(*args)
    assert ours.returncode == 0, ours.stderr
    assert packets(ours.stdout) == packets(theirs.stdout) and len(packets(ours.stdout)) > 20


@pytest.fixture(scope="module")
def cut_segments(tmp_path_factory):
    """TCP segments whose data offset runs past their end (each an exception in tshark: `[Malformed Packet]`)
    behind Ethernet, an 802.1Q tag, Linux cooked capture and BSD loopback, one with an option running past the
    options, one with a timestamps option cut after 4 bytes; a VLAN tag's DEI bit (a boolean in EK)."""
    from scapy.all import IP, TCP, CookedLinux, Dot1Q, Ether, Loopback, Raw, wrpcap

    def segment(sport: int, opts: bytes, words: int, flags: str = "A"):
        raw = bytearray(bytes(TCP(sport=sport, dport=5000, flags=flags, seq=1000, ack=2000, window=502)) + opts)
        raw[12] = (words << 4) | (raw[12] & 0x0F)
        return IP(src="10.0.0.1", dst="10.0.0.2", proto=6) / Raw(bytes(raw))
    eth = Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02")
    option_past = segment(40002, b"ab", 8)
    links = {"eth": [eth / option_past, eth / segment(40004, b"\x01\x01\x08\x0a\x00\x00", 9, "S")],
             "vlan": [eth / Dot1Q(vlan=5) / option_past],
             "sll": [CookedLinux(pkttype=0, lladdrtype=1, lladdrlen=6, src=b"\0\0\0\0\0\1\0\0", proto=0x800) /
                     option_past],
             "null": [Loopback(type=2) / option_past]}
    tmp = tmp_path_factory.mktemp("cut")
    for name, pkts in links.items():
        for i, p in enumerate(pkts):
            p.time = 1700000000 + i
        wrpcap(str(tmp / f"{name}.pcap"), pkts)
    return tmp


@pytest.mark.parametrize("link", ["eth", "vlan", "sll", "null"])
@pytest.mark.parametrize("form", [("-T", "pdml"), ("-T", "ek", "-x"), ("-T", "jsonraw")])
def test_cut_segment(cut_segments, link, form, protodump_run, standard_run):
    """`[Malformed Packet]` at the start of the tvb packet-ethertype.c handed on (after eth, a VLAN tag, sll; 0
    behind loopback, where frame.c catches it); an option item cut to the bytes captured (proto.c cuts an
    FT_PROTOCOL/FT_NONE item, and tshark adds a TCP option with length -1); tshark's type codes of sll's and
    VLAN's fields."""
    path = str(cut_segments / f"{link}.pcap")
    ours, theirs = protodump_run(*form, "-r", path), standard_run(*form, "-r", path)
    assert ours.returncode == 0, ours.stderr
    mine = re.sub(r',\n *"_ws\.lua\.fake_raw": \[[^]]*\]', "", ours.stdout)
    their = re.sub(r',\n *"_ws\.lua\.fake_raw": \[[^]]*\]', "", theirs.stdout)
    if form[1] == "pdml":
        mine, their = packets(mine), packets(their)
        assert any('name="_ws.malformed" showname="[Malformed' in p for p in their)
    assert mine == their
