"""wslua's `_ws.lua.fake` items: Wireshark adds one to the top of the tree at each call of a Lua dissector (a
layer of the plugin, a heuristic of the plugin that said no, a stream dissector that kept a segment's bytes, and
the plugin's postdissector at the end of every frame). `-T pdml`, `-T ek` and the JSON forms show them.

How many a frame gets where a heuristic list was tried depends on the order of that list, which every earlier
frame of the capture changes (engine/dispatch.py `settle`: a heuristic that wins moves to the front). Under -j no
worker sees every frame, so (api/jobs_worker.py, api/jobs_merge.py):
- the worker renders each frame with its own count, but marks where each lookup's run of fake items starts
  (`Mark`, found and taken out of the frame's bytes by `unmark`) and reports the frame's lookups (list, winner,
  its count) with the runs' byte offsets;
- the parent replays every reported lookup in frame order on the lists' starting order (`Replay`, through the
  same `settle` as one process) and patches only a frame where a count differs (`patch`): a run grows or shrinks
  by whole items, each one the same text.
"""
from __future__ import annotations

import re

from ..dissectors import PROTOCOLS

TCP_CALLED = frozenset(("rutentoy", "iceball"))     # the plugin protocols TCP hands its segments to
LUA_PROTOCOLS = frozenset(p.name for p in PROTOCOLS if getattr(p, "lua", True))

MARKING = False        # set in a -j worker whose output shows the fake items: renderers write each lookup's Mark


class Mark:
    """Where the run of fake items of a frame's lookup number `event` starts (in lua_calls' offsets)."""

    __slots__ = ("event", "at")

    def __init__(self, event: int, at: int):
        self.event, self.at = event, at

    def text(self, unit: str) -> str:
        """The mark in a -j worker's output: its lookup and the text of one of its items (NUL, STX and SOH never
        appear in JSON text: tshark escapes control characters)."""
        return f"\0{self.event}\2{unit}\1"


def lua_calls(packet, marks: bool = False) -> list[tuple]:
    """(layer, offsets) for each layer of the packet, then (None, offsets) for the end of the tree: the offsets of
    the `_ws.lua.fake` items wslua adds before it, one per plugin call. A call: the first layer of each call to a
    plugin protocol (not the C dissectors it emulates), at the start of the tvb it was called with; a heuristic
    of the plugin that ran and said no, or a stream dissector that kept a segment's bytes, before the layer made
    next (or, when none was, before the data layer of the payload nobody took or the note that it was cut, else at
    the end); the
    postdissector's at 0, last, or before the first layer it shows. marks: a lookup's run starts with its Mark
    (see the module docstring)."""
    games, tries = packet.games, packet.tries
    if not games and not tries:            # (most frames of a capture: only the postdissector's call)
        return [(layer, ()) for layer in packet.layers()] + [_END]
    # layers by identity (a game layer is the same object in packet.games, packet.layers() and packet.tries; never
    # `layer.item`, which would build a standard layer's template items)
    calls = {id(layer) for layer in games if layer.listed and layer.proto in LUA_PROTOCOLS}
    tried: dict[int, list] = {}
    event = 0
    for layer, at, names, heard in tries or ():
        run = tried.setdefault(id(layer) if layer is not None else 0, [])
        if marks and heard is not None:
            run.append(Mark(event, at))
            event += 1
        run.extend([at] * len(names))
    out = []
    # the postdissector's call (at 0) comes before the layers it shows (Stack.run_late), else it is the last item
    late = id(games[-packet.postdissected]) if packet.postdissected else None
    postdissector = [0]
    for layer in packet.layers():
        key = id(layer)
        if key == late:
            out.append((layer, postdissector))
            postdissector = []
            continue
        fakes = tried.pop(key, None) or (tried.pop(0, None) if layer.proto in NOBODYS else None)
        if key in calls:           # a layer in a reassembled buffer was called on the segment's payload (the
            # plugin reassembles inside the call); not freeblox: websocket calls it on a buffer of its own
            top = layer.item
            over_tcp = top.source and getattr(packet.decoded, "transport", None) == "tcp" \
                and layer.proto in TCP_CALLED
            fakes = (fakes or []) + [packet.decoded.payload_offset if over_tcp else top.offset]
        out.append((layer, fakes or ()))
    out.append((None, [at for ats in tried.values() for at in ats] + postdissector))
    return out


_END = (None, (0,))
# the layers that follow a payload nobody took: the data layer, or the note of a cut one a dissector threw on
NOBODYS = frozenset(("data", "_ws.short"))


# --- -j: the worker's side ----------------------------------------------------------------------------------------

_MARK = re.compile(rb"\x00(\d+)\x02([^\x01]*)\x01")


def lookups(packet) -> list:
    """The frame's heuristic list lookups, in order: (list, winner or None, the worker's count of Lua calls)."""
    return [heard for _, _, _, heard in packet.tries or () if heard is not None]


def unmark(data: bytes) -> tuple[bytes, list]:
    """A frame's bytes without its marks, and each mark as (lookup number, byte offset in those bytes, the
    text of one of its items)."""
    runs, parts, at, size = [], [], 0, 0
    for m in _MARK.finditer(data):
        part = data[at:m.start()]
        parts.append(part)
        size += len(part)
        runs.append((int(m.group(1)), size, m.group(2)))
        at = m.end()
    if not runs:
        return data, runs
    parts.append(data[at:])
    return b"".join(parts), runs


# --- -j: the parent's side ----------------------------------------------------------------------------------------

class Replay:
    """The dispatcher's heuristic lists in the order one process would have them at each frame: the workers'
    lookups replayed in frame order."""

    def __init__(self, dispatcher):
        self.lists = {name: list(entries) for name, entries in dispatcher.heuristic_lists.items()}

    def counts(self, found: list) -> list[int]:
        """One frame's lookups (lookups()): each one's count of Lua calls as one process would make them."""
        from ..engine.dispatch import settle
        out = []
        for name, won, _ in found:
            entries = self.lists[name]
            i = None if won is None else next(i for i, (p, _) in enumerate(entries) if p.name == won)
            out.append(len(settle(entries, i)))
        return out

    def fix(self, found: list, runs: list) -> list:
        """The frame's runs (unmark) whose count differs from the worker's: (offset, unit, worker's, right)."""
        right = self.counts(found)
        return [(at, unit, found[event][2], right[event]) for event, at, unit in runs
                if right[event] != found[event][2]]


def patch(data: bytes, fixes: list, shift: int = 0) -> bytes:
    """A frame's bytes with each run of `fixes` (Replay.fix) grown or shrunk to its right count (shift: where the
    frame starts in `data`)."""
    out, at = [], 0
    for where, unit, had, right in sorted(fixes):
        where += shift
        out.append(data[at:where])
        if right > had:
            out.append(unit * (right - had))
            at = where
        else:
            at = where + len(unit) * (had - right)
    out.append(data[at:])
    return b"".join(out)
