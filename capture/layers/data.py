"""tshark's "data" protocol: bytes no dissector claimed. In -V its line is followed by a hex dump of those bytes
(print.c does this for the data protocol only, and not when -x prints the packet's bytes): output/text.py draws it
with hex_rows from the item's data.data child."""
from __future__ import annotations

from ...engine.tree import Item, Layer
from .. import fields as f


def hex_rows(data: bytes) -> list[str]:
    rows = []
    width = max(4, len(f"{len(data) - 1:x}"))          # offsets as wide as the last one needs (5 past 64 KiB)
    for at in range(0, len(data), 16):
        chunk = data[at:at + 16]
        hexes = " ".join(f"{b:02x}" for b in chunk)       # one group of 16 here, unlike tshark -x
        text = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in chunk)
        rows.append(f"{at:0{width}x}  {hexes:<47}   {text}")
    return rows


def data_item(data: bytes, off: int) -> Item:
    n = len(data)
    top = Item(f.data, None, off, n, f"Data ({n} byte{'s' if n != 1 else ''})")
    # a bytes label shows 36 bytes at most (epan's bytes_to_str)
    top.add(Item(f.data_data, data, off, n, f"Data: {data[:36].hex()}{'…' if n > 36 else ''}"))
    top.add(Item(f.data_len, n, off, 0, f"[Length: {n}]", generated=True))
    return top


def data_layer(data: bytes, off: int) -> Layer:
    return Layer("data", data_item(data, off))
