"""-T pdml: whole packets (geninfo, frame, eth, ip, udp/tcp/sctp, the game layers) against tshark 4.0 + the
generated plugin, packet by packet, on every bundled capture. The preamble is compared but for the creator and
the time stamp. Packets left out are in KNOWN with the reason (docs/tshark-formats.md, "-T pdml")."""
from __future__ import annotations

import re

import pytest

from conftest import VARIANTS, variant_id

WS_SIZES = "tshark's websocket item spans only the frame header and puts the payload in a tvb of its own (positions " \
           "relative to it); protodump's websocket item spans header and payload"
SCTP_SIZES = "tshark's sctp item and DATA chunk text item span only the chunk header, and its fragment items point " \
             "into the reassembled buffer; protodump's span the whole chunk"
HEURISTIC_TRIES = "a game layer found by heuristics: every Lua heuristic dissector tshark tries before the one that " \
                  "takes the datagram adds its own fake item"
NO_LAYER_CALLS = "a TCP segment the plugin is called on but shows nothing for (out of order, retransmitted, held for " \
                 "reassembly) still gets a fake item in tshark"

# capture -> the kinds of difference its packets may have (docs/tshark-formats.md 10); the others are identical
KNOWN: dict[str, tuple[str, ...]] = {
    **{name: (WS_SIZES,) for name in ("freeblox-burst.pcap", "freeblox-plain.pcap", "freeblox-session.pcap",
                                      "freeblox-fragments.pcap", "freeblox-fragments-plain.pcap",
                                      "freeblox-fragments-nocontext.pcap", "freeblox-nocontext.pcap",
                                      "freeblox-bad.pcap", "websocket-bad.pcap")},
    "rutentoy-sctp.pcap": (SCTP_SIZES,),
    "blank-port-23456.pcap": (HEURISTIC_TRIES,),      # without -d: frame 1
    "rutentoy-lost-reordered.pcap": (NO_LAYER_CALLS,),
    "rutentoy-segmentation.pcap": (NO_LAYER_CALLS,),
}


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
    if name not in KNOWN or (extra and name == "blank-port-23456.pcap"):     # -d: no heuristics
        assert not differ, f"{name}: packets {differ[:10]} differ"


def test_pdml_without_packets(protodump_run, standard_run):
    ours = protodump_run("-T", "pdml", "-Y", "frame.number == 0", "-r", "blank-bad.pcap")
    theirs = standard_run("-T", "pdml", "-Y", "frame.number == 0", "-r", "blank-bad.pcap")
    assert head(ours.stdout) + "</pdml>\n" == head(theirs.stdout) + "</pdml>\n"
    assert ours.stdout.endswith('">\n</pdml>\n') and theirs.stdout.endswith('">\n</pdml>\n')
