"""Tree templates (engine/template.py): a templated layer's -V and JSON text, made from its compiled template, is
exactly the text of the items it materialises (what filters, -T fields, EK and the API read), frame by frame."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from protodump.engine.template import Slot, SlotLayer, Template, positional, positional_runs
from protodump.output import json_out, text
from protodump.session import packets

CAPTURES = Path(__file__).resolve().parents[1] / "captures"
TCP = ["rutentoy-lost-reordered.pcap", "rutentoy-segmentation.pcap", "freeblox-fragments.pcap",
       "iceball-tcp-bad.pcap", "websocket-bad.pcap", "rutentoy-midstream.pcap"]


# the frame and IPv4 templates over UDP, ENet and SCTP too (and a long frame.protocols, cut as items)
OTHERS = ["blank-server-session.pcap", "enet-rangecoder.pcap", "rutentoy-sctp.pcap", "blank-bad.pcap",
          "freeblox-burst.pcap"]


@pytest.mark.parametrize("name", TCP + OTHERS)
def test_template_text_is_the_items_text(name):
    check_templates(CAPTURES / name)


def test_frame_template_of_pcapng_interfaces(tmp_path):
    """Frames of several pcapng interfaces (named, described, neither, described in non-ASCII: the template's
    runs of lines, engine.template.positional_runs) and resolutions: one frame template per interface, each equal
    to its items."""
    from scapy.all import IP, UDP, Ether
    from test_std_details import pcapng
    pkt = bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=2) / b"x")
    ifaces = [{"resol": 9, "name": "eth0"}, {"resol": None, "description": "a port"}, {"resol": 3},
              {"resol": 6, "name": "caf\u00e9 \u2192 port"}]
    path = tmp_path / "ifaces.pcapng"
    path.write_bytes(pcapng(ifaces, [(i % 4, 1_700_000_000_000 + i * 7, pkt) for i in range(12)]))
    assert check_templates(path) == 12


def check_templates(path) -> int:
    """Every templated layer's -V and JSON text, before and after its items are made, frame by frame; the frames
    with a templated layer (frame, IPv4 and TCP are templates)."""
    templated = 0
    for packet in packets(path):
        slot_layers = [layer for layer in packet.layers() if layer.__class__ is SlotLayer]
        fast_json, fast_text = json_out.packet_text(packet), text.detail_text(packet)
        for layer in slot_layers:
            assert layer.item.children           # materialised: the outputs now render the items
        assert json_out.packet_text(packet) == fast_json, packet.number
        assert text.detail_text(packet) == fast_text, packet.number
        templated += bool(slot_layers)
    assert templated
    return templated


def test_positional_keeps_literal_percent_signs():
    fmt = "100%% of %(a)d, 0x%(b)04x, %(a)d again, %(c)s"
    text_, values = positional(fmt)
    vals = {"a": 7, "b": 255, "c": "x%y"}
    assert text_ % values(vals) == fmt % vals == "100% of 7, 0x00ff, 7 again, x%y"
    assert positional("no slots")[0] % positional("no slots")[1](vals) == "no slots"
    one, get = positional("only %(c)s")
    assert one % get(vals) == "only x%y"


def test_slot_lengths_may_be_values():
    from protodump.capture import fields as f
    tpl = Template([Slot(f.tcp_payload, "TCP payload (%(n)d bytes)", "data", 20, "n")])
    (item,) = tpl.items({"data": b"abc", "n": 3}, 34)
    assert (item.offset, item.length, item.value, item.label) == (54, 3, b"abc", "TCP payload (3 bytes)")


def test_a_long_frame_protocols_label_is_cut_as_wireshark_cuts_it():
    """frame.protocols past LONG_PROTOCOLS: the frame layer is made as items, so -V cuts its label at Wireshark's
    240-byte label buffer (a template's labels are never cut)."""
    from protodump.capture import decode, open_capture
    from protodump.capture.layers.frame import LONG_PROTOCOLS, frame_layer
    d = decode(next(iter(open_capture(CAPTURES / "blank-server-session.pcap"))))
    d.protocols = ["eth", "ethertype", "ip", "udp"] + ["blank"] * 60
    assert len(":".join(d.protocols)) > LONG_PROTOCOLS
    layer = frame_layer(d)
    assert layer.materialized is not None
    out: list[str] = []
    text._detail(layer.item.children, 1, out)
    (line,) = [x for x in "".join(out).splitlines() if "Protocols in frame" in x]
    assert line.strip().startswith("[Protocols in frame [truncated]: eth:ethertype:ip:udp:blank")
    assert len(line.strip().encode()) < 240


_TOKENS = ["abc ", "x", "\u00b7\u00b7A\u00b7", "caf\u00e9 ", "100%% ", "%(a)d ", "0x%(a)04x", "%(b)s", "\u2192 ", ""]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_TOKENS), max_size=4).map("".join), min_size=1, max_size=8),
       st.booleans())
def test_positional_runs_are_the_format_cut_at_lines(lines, newline_at_end):
    """positional_runs: the texts joined are `fmt % vals`; a text is all ASCII or only non-ASCII lines, so the
    sink encodes each non-ASCII line at CPython's slow rate and nothing else."""
    fmt = "\n".join(lines) + ("\n" if newline_at_end else "")
    vals = {"a": 4242, "b": "v%s"}
    text_, values = positional_runs(fmt)
    if text_ is not None:              # one run: positional's form
        assert text_ % values(vals) == fmt % vals
        return
    texts = values(vals)
    assert "".join(texts) == fmt % vals
    assert len(texts) > 1 and all(texts)
    for piece in texts:
        lines_ = piece.splitlines(keepends=True)
        assert piece.isascii() or not any(line.isascii() for line in lines_)
    assert all(a.isascii() != b.isascii() for a, b in zip(texts, texts[1:]))      # runs alternate


def test_tcp_flags_line_is_a_text_of_its_own():
    """The TCP template's flags line ("[TCP Flags: ·······AP···]") is a -V and JSON text apart from the rest of
    the layer: output/sink.py encodes each text on its own, so only that line pays for its non-ASCII character."""
    packet = next(p for p in packets(CAPTURES / "rutentoy-segmentation.pcap") if p.decoded.transport == "tcp")
    for parts in (text.detail_parts(packet), json_out.layer_parts(packet)):
        wide = [p for p in parts if not p.isascii()]
        assert wide and all("TCP Flags" in p or "tcp.flags.str" in p for p in wide)
        assert all(len(p) < 80 for p in wide), wide
