"""Whole-frame comparison of protodump's and tshark + plugin's JSON forms (-T json, -x, jsonraw, -j/-J; shared by
tests/test_whole_frame.py and tools/parity_report.py --whole): every layer of every frame, wslua's `_ws.lua.fake`
items included."""
from __future__ import annotations

from conftest import packet_layers


def _object(value) -> bool:
    """A parsed JSON object ((key, value) pairs), not an array (a `_raw` array's members)."""
    return isinstance(value, list) and all(isinstance(x, tuple) for x in value)


def first_difference(a, b, path: str = "") -> str:
    """Where two (key, value) trees first differ, as a readable path."""
    if _object(a) and _object(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x[0] != y[0]:
                return f"{path}[{i}]: key {x[0]!r} (protodump) vs {y[0]!r} (tshark)"
            if x[1] != y[1]:
                return first_difference(x[1], y[1], f"{path}/{x[0]}")
        if len(a) != len(b):
            extra = a[len(b):] or b[len(a):]
            return f"{path}: {'protodump' if len(a) > len(b) else 'tshark'} has more: {extra[0][0]!r}"
        return ""
    return f"{path}: {a!r} (protodump) vs {b!r} (tshark)"


def compare(ours_text: str, theirs_text: str):
    """(identical frames, compared frames, left out [(0, why)] when the frame counts differ, differing [(frame,
    where)]). Every frame is compared: a WebSocket message tshark 4.0 does not hand up as protodump would is no
    exception any more (dissectors/websocket.py shows tshark's websocket layer)."""
    ours, theirs = packet_layers(ours_text), packet_layers(theirs_text)
    same, left_out, differ = 0, [], []
    if len(ours) != len(theirs):
        left_out.append((0, f"protodump has {len(ours)} frames, tshark {len(theirs)}"))
    for i, (o, t) in enumerate(zip(ours, theirs)):
        if o == t:
            same += 1
        else:
            differ.append((i + 1, first_difference(o, t)))
    return same, min(len(ours), len(theirs)), left_out, differ
