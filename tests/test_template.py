"""Tree templates (engine/template.py): a templated layer's -V and JSON text, made from its compiled template, is
exactly the text of the items it materialises (what filters, -T fields, EK and the API read), frame by frame."""
from __future__ import annotations

from pathlib import Path

import pytest

from protodump.engine.template import Slot, SlotLayer, Template, positional
from protodump.output import json_out, text
from protodump.session import packets

CAPTURES = Path(__file__).resolve().parents[1] / "captures"
TCP = ["rutentoy-lost-reordered.pcap", "rutentoy-segmentation.pcap", "freeblox-fragments.pcap",
       "iceball-tcp-bad.pcap", "websocket-bad.pcap", "rutentoy-midstream.pcap"]


@pytest.mark.parametrize("name", TCP)
def test_template_text_is_the_items_text(name):
    templated = 0
    for packet in packets(CAPTURES / name):
        slot_layers = [layer for layer in packet.layers() if layer.__class__ is SlotLayer]
        fast_json, fast_text = json_out.packet_text(packet), text.detail_text(packet)
        for layer in slot_layers:
            assert layer.item.children           # materialised: the outputs now render the items
        assert json_out.packet_text(packet) == fast_json, packet.number
        assert text.detail_text(packet) == fast_text, packet.number
        templated += bool(slot_layers)
    assert templated


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
