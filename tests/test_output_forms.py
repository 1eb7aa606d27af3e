"""-T psml|ek|jsonraw, -T json with -j/-J/-x, -T json|ek -e: against tshark with the generated plugin on the
bundled captures. PSML and `-e` outputs are compared whole; the tree forms layer by layer for the game layers (the
standard layers' fields are another issue's). `-T jsonraw` and `-T json -x` now include the items inside
reassembled and inflated buffers (each item records its data source) and the zero-length reassembly summaries
(placed where wslua places an item added with no byte range: the layer's start)."""
from __future__ import annotations

import json
import re

import pytest

from conftest import VARIANTS, get, layers_of, packet_layers, pairs, variant_id

GAMES = ("blank", "enet", "iceball", "rutentoy", "freeblox")
CREATOR = ('creator="wireshark/', 'creator="protodump/')
SMALL = [v for v in VARIANTS if not v[0].startswith(("iceball-enet-session", "freeblox-session", "freeblox-burst"))]
NOT_ICEBALL = [v for v in SMALL if not v[0].startswith("iceball") or "spec" in v[0]]
FEW = [v for v in SMALL if v[0] in ("blank-bad.pcap", "enet-bad.pcap", "iceball-tcp-all.pcap", "rutentoy-bad.pcap",
                                    "rutentoy-sctp.pcap", "freeblox-plain.pcap")]


def both(protodump_run, standard_run, variant, *args):
    name, extra = variant
    ours = protodump_run(*extra, *args, name)
    theirs = standard_run(*extra, "-r", name, *args)
    assert ours.returncode == 0, ours.stderr
    return ours.stdout, theirs.stdout


def game_layers(layers) -> list:
    return [(k, v) for k, v in layers if k in GAMES or k.endswith("_raw") and k[:-4] in GAMES]


def compare_json_game_layers(ours: str, theirs: str) -> None:
    mine, their = packet_layers(ours), packet_layers(theirs)
    assert len(mine) == len(their)
    for number, (a, b) in enumerate(zip(mine, their), 1):
        assert game_layers(a) == game_layers(b), f"frame {number}"


def psml_rows(text: str, udp: bool) -> list:
    """Rows of sections; over TCP and SCTP only No., Time, Source, Destination and Length (the Protocol and Info
    columns of TCP, HTTP, WebSocket and of several PDUs in one segment are the summary's, another issue's)."""
    rows = [re.findall(r"<section>(.*?)</section>", block) for block in text.split("<packet>")[1:]]
    return [row if udp else row[:4] + row[5:6] for row in rows]


@pytest.mark.parametrize("variant", VARIANTS, ids=variant_id)
def test_psml_is_tsharks(protodump_run, standard_run, variant):
    ours, theirs = both(protodump_run, standard_run, variant, "-T", "psml")
    theirs = re.sub(r'creator="wireshark/[^"]*"', 'creator="protodump/0.1.0"', theirs)
    udp = variant[0].startswith(("blank", "enet", "iceball-enet"))
    if udp:
        assert ours == theirs
    head = theirs.split("<packet>")[0]
    assert ours.startswith(head) and ours.endswith("</packet>\n\n</psml>\n")
    assert psml_rows(ours, udp) == psml_rows(theirs, udp)


@pytest.mark.parametrize("variant", FEW, ids=variant_id)
@pytest.mark.parametrize("args", [("-j", "blank enet iceball rutentoy freeblox"),
                                  ("-J", "blank iceball"), ("-j", "blank.ack_history udp enet.command")],
                         ids=["j-games", "J", "j-fields"])
def test_json_protocol_filters(protodump_run, standard_run, variant, args):
    ours, theirs = both(protodump_run, standard_run, variant, "-T", "json", *args)
    compare_json_game_layers(ours, theirs)
    for a, b in zip(packet_layers(ours), packet_layers(theirs)):       # filtered standard layers: the same
        for key in ("frame", "eth", "ip"):
            if args[0] == "-j" and "udp" in args[1] and key != "udp":
                assert get(a, key) == get(b, key) == [("filtered", key)]


@pytest.mark.parametrize("variant", SMALL, ids=variant_id)
def test_json_x_raw_arrays(protodump_run, standard_run, variant):
    ours, theirs = both(protodump_run, standard_run, variant, "-T", "json", "-x")
    compare_json_game_layers(ours, theirs)


@pytest.mark.parametrize("variant", SMALL, ids=variant_id)
def test_jsonraw(protodump_run, standard_run, variant):
    ours, theirs = both(protodump_run, standard_run, variant, "-T", "jsonraw")
    compare_json_game_layers(ours, theirs)


def ek_packets(text: str) -> list:
    lines = text.splitlines()
    assert all(json.loads(line)["index"]["_type"] == "doc" for line in lines[0::2])
    return [pairs(line) for line in lines[1::2]]


def compare_ek(protodump_run, standard_run, variant, *args) -> None:
    ours, theirs = both(protodump_run, standard_run, variant, "-T", "ek", *args)
    mine, their = ek_packets(ours), ek_packets(theirs)
    assert len(mine) == len(their)
    for number, (a, b) in enumerate(zip(mine, their), 1):
        assert get(a, "timestamp") == get(b, "timestamp")
        assert game_layers(get(a, "layers")) == game_layers(get(b, "layers")), f"frame {number}"


@pytest.mark.parametrize("variant", SMALL, ids=variant_id)
def test_ek_game_layers(protodump_run, standard_run, variant):
    compare_ek(protodump_run, standard_run, variant)


@pytest.mark.parametrize("variant", FEW, ids=variant_id)
@pytest.mark.parametrize("args", [("-j", "blank enet iceball"), ("-J", "rutentoy freeblox")], ids=["j", "J"])
def test_ek_protocol_filters(protodump_run, standard_run, variant, args):
    compare_ek(protodump_run, standard_run, variant, *args)


@pytest.mark.parametrize("variant", [v for v in NOT_ICEBALL if v in FEW or v[0].startswith("blank")], ids=variant_id)
def test_ek_x(protodump_run, standard_run, variant):
    compare_ek(protodump_run, standard_run, variant, "-x")


FIELDS = ["frame.number", "ip.addr", "udp.port", "tcp.port", "_ws.col.No.", "_ws.col.Time", "_ws.col.Source",
          "_ws.col.Destination", "_ws.col.Protocol", "_ws.col.Length", "_ws.col.Info", "_ws.col.Nothing"]


@pytest.mark.parametrize("variant", SMALL, ids=variant_id)
@pytest.mark.parametrize("form", ["json", "ek", "fields"])
def test_e_fields_and_columns_whole(protodump_run, standard_run, variant, form):
    udp = variant[0].startswith(("blank", "enet", "iceball-enet"))
    fields = FIELDS if udp else [f for f in FIELDS if f not in ("_ws.col.Info", "_ws.col.Protocol")]  # TCP
    args = [a for f in fields for a in ("-e", f)]
    ours, theirs = both(protodump_run, standard_run, variant, "-T", form, *args)
    assert ours == theirs


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v[0].startswith("blank")], ids=variant_id)
def test_e_game_fields_in_json(protodump_run, standard_run, variant):
    args = [a for f in ("blank.seq", "blank.type", "blank.login.name", "blank.ack_history.received",
                        "blank.malformed", "_ws.expert.message") for a in ("-e", f)]
    ours, theirs = both(protodump_run, standard_run, variant, "-T", "json", *args)
    assert ours == theirs


def test_time_column_counts_from_the_first_frame(protodump_run, standard_run):
    """-Y hides the first frames: the Time column still counts from the capture's first frame (tshark's)."""
    args = ("-Y", 'blank.type == "Chunk Data" && blank.chunk')
    ours, theirs = both(protodump_run, standard_run, ("blank-all-current.pcap", ()), *args)
    assert ours == theirs and "0.007571" in ours


def test_bad_combinations_are_one_line(protodump_run):
    for args, code in [(("-T", "text", "-e", "frame.number"), 1), (("-T", "fields", "-e", "no.such"), 1)]:
        r = protodump_run(*args, "blank-all-current.pcap")
        assert r.returncode == code and r.stdout == "" and r.stderr.count("\n") == 1, (args, r.stderr)


@pytest.mark.parametrize("flags", [("-j", "ip", "-J", "udp"), ("-J", "udp", "-j", "ip")])
def test_second_protocol_filter_overrides_the_first(protodump_run, standard_run, flags):
    """tshark warns that -j or -J was already given, and the last one wins."""
    args = ("-T", "json", *flags, "-c", "2", "-r", "blank-all-current.pcap")
    ours, theirs = protodump_run(*args), standard_run(*args)
    assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout)
    assert ours.stderr.endswith("-j or -J was already specified. Overwriting previous protocol filter.\n")



FREEBLOX = [v for v in VARIANTS if v[0].startswith("freeblox")]


@pytest.mark.parametrize("variant", FREEBLOX, ids=variant_id)
@pytest.mark.parametrize("detail", [(), ("-V",)], ids=["x", "V-x"])
def test_x_freeblox_data_sources(protodump_run, standard_run, variant, detail):
    """-x (alone and with -V) byte for byte on every Freeblox capture: tshark's websocket buffers (Unmasked data,
    Reassembled Message, its Decompressed payload, inflated from its own context even where that is out of step)
    and, for each compressed message, the two the plugin's inflate adds (Compressed message, Decompressed
    payload), in tshark's order. With -V the trees differ where protodump differs on purpose (a fragmented
    message whose last frame is empty): there the buffers are compared."""
    ours, theirs = both(protodump_run, standard_run, variant, *detail, "-x")
    if detail and variant[0] in ("freeblox-plain.pcap", "freeblox-fragments-plain.pcap"):
        ours, theirs = hex_blocks(ours), hex_blocks(theirs)
    assert ours == theirs


@pytest.mark.parametrize("variant", [v for v in SMALL if not v[0].startswith("freeblox")], ids=variant_id)
def test_x_data_sources(protodump_run, standard_run, variant):
    """-x byte for byte on every other capture: the frame, then each reassembled or inflated buffer the plugin
    makes, in its order (a zlib stream with a bad Adler-32 is a buffer too; an Iceball file that does not inflate
    is kept as "Reassembled file" in both halves)."""
    ours, theirs = both(protodump_run, standard_run, variant, "-x")
    assert ours == theirs


def hex_blocks(text: str) -> list[str]:
    """The -x part of -V -x output: the offset lines and the buffers' headings."""
    return [line for line in text.splitlines()
            if re.match(r"[0-9a-f]{4,}  ", line) or re.match(r"[A-Z][A-Za-z ]*\(\d+ bytes?\):$", line)]


def raw_types(text: str) -> dict:
    """Every `_raw` array's type (its last member, Wireshark's ftenum) by key, over the whole output."""
    found: dict = {}

    def walk(members):
        for key, value in members:
            if key.endswith("_raw") and isinstance(value, list) and value and isinstance(value[-1], int):
                found.setdefault(key, set()).add(value[-1])
            elif isinstance(value, list) and value and isinstance(value[0], tuple):
                walk(value)
            elif isinstance(value, list):
                for each in value:
                    if isinstance(each, list) and each and isinstance(each[0], (tuple, list)):
                        walk([(key, x) for x in each] if isinstance(each[0], list) else each)
    for packet in json.loads(text, object_pairs_hook=list):
        walk(packet)
    return found


@pytest.mark.parametrize("variant", FEW, ids=variant_id)
def test_raw_types_are_tsharks(protodump_run, standard_run, variant):
    """-T jsonraw: the type of every key's _raw array, standard layers too (frame's and tcp's times are 25, an
    absolute time 24, a frame reference 35, where the field table keeps a string or a number)."""
    ours, theirs = map(raw_types, both(protodump_run, standard_run, variant, "-T", "jsonraw"))
    assert {k: v for k, v in ours.items() if k in theirs} == {k: v for k, v in theirs.items() if k in ours}
    assert theirs.get("frame.time_raw") == {24} and theirs.get("frame.time_relative_raw") == {25}


def _as_ipv6_cooked(src, dst):
    """A bundled TCP capture moved to IPv6 over Linux cooked v2 (tcpdump -i any), checksums recomputed: longer
    headers put the TCP payload further into the frame than a short reassembled PDU is long."""
    from scapy.all import IP, TCP, CookedLinuxV2, IPv6, rdpcap, wrpcap
    out = []
    for p in rdpcap(str(src)):
        tcp = TCP(bytes(p[TCP]))
        del tcp.chksum
        q = CookedLinuxV2(proto=0x86DD, ifindex=1, lladdrtype=772, pkttype=0, lladdrlen=6, src=b"\0" * 8) / \
            IPv6(src="::1", dst="::1") / tcp
        q.time = p.time
        out.append(q)
    assert all(IP not in q for q in out)
    wrpcap(str(dst), out)
    return str(dst)


@pytest.mark.parametrize("form", [("-T", "jsonraw"), ("-T", "json", "-x"), ("-T", "pdml")], ids=" ".join)
def test_zero_length_items_past_a_short_buffer(tmp_path_factory, protodump_run, standard_run, form):
    """A zero-length item (a reassembly summary at the layer's start) never prints "field length invalid!", even
    where its offset is past the end of the buffer its parent sits in (print.c: tvb_captured_length_remaining is 0
    there, and 0 bytes fit)."""
    from conftest import CAPTURES_DIR
    path = _as_ipv6_cooked(CAPTURES_DIR / "rutentoy-segmentation.pcap",
                           tmp_path_factory.mktemp("v6") / "rutentoy-segmentation-v6.pcap")
    ours, theirs = protodump_run(*form, path), standard_run(*form, "-r", path)
    if form[-1] == "pdml":
        ours_text, theirs_text = (re.sub(r"<pdml [^>]*>", "<pdml>", t.stdout) for t in (ours, theirs))
    else:
        ours_text, theirs_text = ours.stdout, theirs.stdout
    assert ours_text == theirs_text
    assert "field length invalid!" not in ours_text
