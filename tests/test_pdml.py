"""-T pdml: whole packets (geninfo, frame, eth, ip, udp/tcp/sctp, the game layers) against tshark 4.0 + the
generated plugin, packet by packet, on every bundled capture. The preamble is compared but for the creator and
the time stamp. Packets left out are in KNOWN with the reason (docs/tshark-formats.md, "-T pdml")."""
from __future__ import annotations

import re

import pytest

from conftest import VARIANTS, variant_id

WS_FRAGMENTS = "a fragmented message whose last frame is empty: tshark 4.0 never reassembles it, protodump does (the " \
               "deliberate difference of docs/tshark-formats.md 8)"
WS_EXPERTS = "protodump's own WebSocket experts (reserved bits, unknown opcode, unmasked client frame, a failed " \
             "inflate's reason) where tshark 4.0 has none or its own wording"

# capture -> the kinds of difference its packets may have (docs/tshark-formats.md 10); the others are identical
KNOWN: dict[str, tuple[str, ...]] = {
    "freeblox-fragments-plain.pcap": (WS_FRAGMENTS,),
    "freeblox-plain.pcap": (WS_FRAGMENTS,),            # frame 126
    "websocket-bad.pcap": (WS_EXPERTS,),
}
# what a packet of protodump's that differs for that reason holds
SIGNS = {WS_FRAGMENTS: re.compile(r'name="websocket\.fragment" showname="[^"]*\(0 bytes\)"'),
         WS_EXPERTS: re.compile(r'name="websocket\.(unexpected|undecoded|malformed)"')}


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


@pytest.mark.parametrize("name", ["rutentoy-sctp.pcap", "freeblox-plain.pcap", "blank-server-session.pcap"])
def test_pdml_with_fields_is_tsharks(protodump_run, standard_run, name):
    """-T pdml -e: the geninfo block, then one `<field name value/>` per value of each field (print.c)."""
    args = ("-T", "pdml", "-e", "frame.number", "-e", "ip.addr", "-e", "_ws.col.Info", "-e", "blank.seq",
            "-e", "tcp.port", "-r", name)
    ours, theirs = protodump_run(*args), standard_run(*args)
    assert ours.returncode == 0, ours.stderr
    assert packets(ours.stdout) == packets(theirs.stdout) and len(packets(ours.stdout)) > 20
