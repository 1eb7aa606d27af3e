"""-T pdml: whole packets (geninfo, frame, eth, ip, udp/tcp/sctp, the game layers) against tshark 4.0 + the
generated plugin, packet by packet, on every bundled capture. The preamble is compared but for the creator and
the time stamp. Packets left out are in KNOWN with the reason (docs/tshark-formats.md, "-T pdml")."""
from __future__ import annotations

import re

import pytest

from conftest import VARIANTS, variant_id

WS_SIZES = "tshark's websocket item spans only the frame header and puts the payload in a tvb of its own (positions " \
           "relative to it); protodump's websocket item spans header and payload"
TCP_PDU_TVB = "a rutentoy/iceball message reassembled inside a TCP segment holding several PDUs: the plugin adds the " \
              "summary with no byte range, at the start of the segment's tvb; protodump at the start of the PDU"
SCTP_SIZES = "tshark's sctp item and DATA chunk text item span only the chunk header; protodump's the whole chunk"
RAW_SOURCE = "an item inside a reassembled buffer recorded against the wrong data source (value hex)"
WS_EMPTY_END = "tshark 4.0's websocket never hands over a fragmented message ending with an empty frame (the " \
               "plugin's postdissector shows it): the layer order differs"

# capture -> {packet number: reason}; None: every packet with a difference is of that kind
KNOWN: dict[str, tuple[str, ...]] = {
    "freeblox-burst.pcap": (WS_SIZES,),
    "freeblox-plain.pcap": (WS_SIZES, WS_EMPTY_END),
    "freeblox-session.pcap": (WS_SIZES,),
    "freeblox-fragments.pcap": (WS_SIZES,),
    "freeblox-fragments-plain.pcap": (WS_SIZES, WS_EMPTY_END),
    "freeblox-fragments-nocontext.pcap": (WS_SIZES,),
    "freeblox-nocontext.pcap": (WS_SIZES,),
    "freeblox-bad.pcap": (WS_SIZES,),
    "websocket-bad.pcap": (WS_SIZES,),
    "rutentoy-sctp.pcap": (SCTP_SIZES,),
    "rutentoy-messages.pcap": (TCP_PDU_TVB,),
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
    if name not in KNOWN:
        assert not differ, f"{name}: packets {differ[:10]} differ"


def test_pdml_without_packets(protodump_run, standard_run):
    ours = protodump_run("-T", "pdml", "-Y", "frame.number == 0", "-r", "blank-bad.pcap")
    theirs = standard_run("-T", "pdml", "-Y", "frame.number == 0", "-r", "blank-bad.pcap")
    assert head(ours.stdout) + "</pdml>\n" == head(theirs.stdout) + "</pdml>\n"
    assert ours.stdout.endswith('">\n</pdml>\n') and theirs.stdout.endswith('">\n</pdml>\n')
