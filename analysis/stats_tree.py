"""Wireshark's stats_tree: a tree of counters, with averages, rates, percentages and burst rates, as tshark 4.0
prints it for `-z plen,tree`, `-z ip_hosts,tree` and the other `*,tree` statistics (stats_trees.py defines them).

The arithmetic is Wireshark's (epan/stats_tree.c): a node's average is a C float (single precision), its rate the
count per millisecond since the first packet the tree saw, and its burst rate the most packets it counted in any
100 ms window, counted in 5 ms buckets (the preferences' defaults), with the window's first bucket's time as the
burst start. Children print busiest first (ties by name, also reversed), range nodes in their own order, and a
node flagged "top" before its siblings.

Unlike Wireshark's, a tree has a limit: NODE_LIMIT nodes (about 450 bytes each; -o protodump.stats_tree_nodes).
Past it, a packet's item that has no node yet is left out (the nodes above it still count the packet), and the
result says how many were (`left_out`, and a line on the standard error): a flood of a million addresses reads in
bounded memory.
"""
from __future__ import annotations

import math
import re
import struct
from collections.abc import Iterator

from .spill_table import LazyRows

BURST_WINDOW_MS = 100.0      # prefs.st_burst_windowlen
BURST_RESOLUTION_MS = 5.0    # prefs.st_burst_resolution
_BURST_BUCKETS = BURST_WINDOW_MS / BURST_RESOLUTION_MS
INT_MAX, INT_MIN = 2**31 - 1, -2**31
NODE_LIMIT = 50_000          # nodes one tree keeps (about 36 MB with its output); the preference's default is
                             # engine/lifetime.py's (the engine imports no statistic), kept equal by a test

COLUMNS = ("Count", "Average", "Min Val", "Max Val", "Rate (ms)", "Percent", "Burst Rate", "Burst Start")


def _float32(x: float) -> float:
    """x rounded to a C float, as Wireshark computes a node's average."""
    return struct.unpack("f", struct.pack("f", x))[0]


class StatNode:
    """One counter of the tree: a name, a count, the values it averaged, and its burst buckets."""

    __slots__ = ("name", "parent", "children", "by_name", "range", "count", "total", "low", "high", "averaged",
                 "top", "root_child", "buckets", "burst", "max_burst", "burst_ms")

    def __init__(self, name: str, parent: StatNode | None, with_hash: bool = False, value_range=None):
        self.name, self.parent, self.range = name, parent, value_range
        self.children: list[StatNode] | tuple = ()      # a list from the first child on (most nodes are leaves)
        self.by_name: dict | None = {} if with_hash else None     # the children, when looked up by name
        self.count = self.total = 0
        self.low, self.high = INT_MAX, INT_MIN
        self.averaged = False         # ST_FLG_AVERAGE: the node shows average, minimum and maximum
        self.top = False              # ST_FLG_SORT_TOP
        self.root_child = False       # ST_FLG_ROOTCHILD: shown by the last part of its path
        # the 5 ms buckets of the last 100 ms, oldest first, three numbers each in one flat list (a third of the
        # memory of a list per bucket): bucket number, count, start ms. Wireshark starts every node with one
        # empty bucket numbered 0
        self.buckets = [0, 0, 0.0]
        self.burst = self.max_burst = 0
        self.burst_ms = -1.0

    def value(self, value: int) -> None:
        """An averaged value (MN_AVERAGE_NOTICK)."""
        self.total += value
        self.low, self.high = min(self.low, value), max(self.high, value)
        self.averaged = True

    def tick_burst(self, now: float, value: int) -> None:
        """update_burst_calc: add `value` at time `now` (ms) to the window of buckets."""
        buckets = self.buckets
        current = math.floor(now / BURST_RESOLUTION_MS)
        if current > buckets[-3]:
            buckets += (current, value, now)
            self.burst += value
            while current >= buckets[0] + _BURST_BUCKETS:        # the oldest bucket left the window
                self.burst -= buckets[1]
                del buckets[:3]
        elif current < buckets[0]:
            if current + _BURST_BUCKETS > buckets[-3]:             # earlier, but still inside the window
                buckets[0:0] = (current, value, now)
                self.burst += value
        else:
            i = len(buckets) - 3
            while current < buckets[i]:
                i -= 3
            if current == buckets[i]:
                buckets[i + 1] += value
                buckets[i + 2] = min(buckets[i + 2], now)
            else:
                buckets[i + 3:i + 3] = (current, value, now)
            self.burst += value
        if self.burst > self.max_burst:
            self.max_burst = self.burst
            self.burst_ms = buckets[2]


class StatsTree:
    """One tree: its nodes, and the clock of the packets it counted (ms from the capture's first frame)."""

    def __init__(self, path: str, limit: int | None = None):
        self.path = path
        self.root = StatNode(display_name(path), None)
        self.names: dict[str, StatNode] = {}      # st->names: the nodes made as parents, by name
        self.limit = NODE_LIMIT if limit is None else limit
        self.size = 0
        # past the limit, a new item's node: attached to no parent (never shown), no child ever kept under it
        self.left_out_node = StatNode("", None, with_hash=True)
        self.left_out = 0             # ticks of items that got no node
        self.start = -1.0
        self.elapsed = 0.0
        self.now = -1.0

    def at(self, now_ms: float) -> None:
        """stats_tree_packet: the time of the packet about to be counted."""
        self.now = now_ms
        if self.start < 0.0:
            self.start = now_ms
        self.elapsed = now_ms - self.start

    def _new(self, name: str, parent: StatNode, with_hash: bool, as_parent: bool, value_range=None) -> StatNode:
        if self.size >= self.limit:
            self.left_out += 1
            return self.left_out_node
        self.size += 1
        node = StatNode(name, parent, with_hash, value_range)
        node.root_child = parent is self.root
        if as_parent:
            self.names[name] = node
        if parent.children:
            parent.children.append(node)
        else:
            parent.children = [node]
        if parent.by_name is not None:
            parent.by_name[name] = node
        return node

    def node(self, name: str, parent: StatNode | None = None, with_hash: bool = True) -> StatNode:
        """stats_tree_create_node."""
        return self._new(name, parent or self.root, with_hash, True)

    def range_node(self, name: str, ranges: list[str]) -> StatNode:
        """stats_tree_create_range_node_string: a node whose children count the values in each range ("a-b",
        the last one open when it is a single number)."""
        node = self._new(name, self.root, False, True)
        for n, text in enumerate(ranges):
            low, _, high = text.partition("-")
            floor = _strtol(low) if low else INT_MIN
            ceil = (_strtol(high) if high else INT_MAX) if "-" in text else floor
            if n == len(ranges) - 1 and floor == ceil:
                ceil = INT_MAX
            self._new(text, node, False, False, (floor, ceil))
        return node

    def tick(self, name: str, parent: StatNode | None = None, with_hash: bool = False) -> StatNode:
        """tick_stat_node: count one packet on the node `name` under `parent`, made when new."""
        parent = parent or self.root
        lookup = parent.by_name if parent.by_name is not None else self.names
        node = lookup.get(name)
        if node is None:
            node = self._new(name, parent, with_hash, with_hash)
        node.count += 1
        node.tick_burst(self.now, 1)
        return node

    def tick_range(self, node: StatNode, value: int) -> None:
        """stats_tree_tick_range: the (already ticked) range node's values, and the child whose range holds it."""
        node.value(value)
        for child in node.children:
            floor, ceil = child.range
            if floor <= value <= ceil:
                child.count += 1
                child.value(value)
                child.tick_burst(self.now, 1)
                return

    def tick_pivot(self, pivot: StatNode, value: str) -> None:
        """stats_tree_tick_pivot: count the pivot node and its child named `value`."""
        pivot.count += 1
        pivot.tick_burst(self.now, 1)
        self.tick(value, pivot)

    def rows(self) -> LazyRows:
        """Every node but the root, depth first, each child list sorted as tshark prints it: made as they are
        read (a tree of many nodes is not held twice)."""
        return LazyRows(self._walk, self.size)

    def _walk(self) -> Iterator[dict]:
        pending = [(child, 0) for child in reversed(self.root.children)]
        while pending:
            node, depth = pending.pop()
            yield self._row(node, depth)
            pending.extend((child, depth + 1) for child in reversed(_sorted(node.children)))

    def _row(self, node: StatNode, depth: int) -> dict:
        shows_values = node.averaged or node.range is not None
        counted = shows_values and node.count > 0
        parent = node.parent
        percent = node.count * 100.0 / parent.count if parent.count else None
        return {
            "item": display_name(node.name) if node.root_child else node.name, "depth": depth,
            "root_child": node.root_child,
            "count": node.count,
            "average": _float32(_float32(node.total) / node.count) if counted else None,
            "min": node.low if counted else None, "max": node.high if counted else None,
            "values": shows_values,
            "rate": _float32(node.count) / self.elapsed if self.elapsed else None,
            "percent": percent,
            "burst_rate": node.max_burst / BURST_WINDOW_MS if node.max_burst else None,
            "burst_start": node.burst_ms / 1000.0 if node.max_burst else None,
        }

    def name_width(self) -> int:
        """stats_tree_branch_max_namelen: the widest name plus its indent (the root's name counts, at 0)."""
        def widest(node: StatNode, indent: int) -> int:
            name = display_name(node.name) if node.root_child else node.name
            return max([len(name) + indent] + [widest(c, indent + 1) for c in node.children])
        return widest(self.root, 0)


def _sorted(children: list[StatNode]) -> list[StatNode]:
    """Count descending, ties by name descending (the default sort, prefs.st_sort_defcolflag and
    st_sort_defdescending); ranges by their floor, ascending; "top" nodes first. Python's sort is stable, as
    GLib's merge sort."""
    if all(c.range is not None for c in children):
        return sorted(children, key=lambda c: c.range[0])
    ordered = sorted(children, key=lambda c: (c.count, c.name), reverse=True)
    return sorted(ordered, key=lambda c: not c.top)


def _strtol(text: str) -> int:
    """C's strtol: the leading number of `text` ("5120 and greater": 5120), 0 when there is none."""
    m = re.match(r"\s*[+-]?\d+", text)
    return int(m.group(0)) if m else 0


def display_name(path: str) -> str:
    """stats_tree_get_displayname: the part after the last "/" ("//" is a slash in a name)."""
    parts = path.replace("//", "\0").split("/")
    return parts[-1].replace("\0", "/")


def text_lines(result: dict) -> list[str]:
    """tshark's plain layout of a stats tree (stats_tree_format_as_str, ST_FORMAT_PLAIN)."""
    width = result["name_width"]
    line = width + len(COLUMNS) * 14
    lines = ["", "=" * line, f"{result['title']}:",
             f"{'Topic / Item':<{width}}" + "".join(f" {c:<13}" for c in COLUMNS), "-" * line]
    for r in result["rows"]:
        lines.append(" " * r["depth"] + f"{r['item']:<{width - r['depth']}}"
                     + "".join(f" {cell:<13}" for cell in _cells(r)))
    return lines + ["", "-" * line]


def _cells(r: dict) -> list[str]:
    def value(v, form):
        return "-" if v is None else form % v
    if r["values"]:
        values = [value(r["average"], "%.2f"), value(r["min"], "%d"), value(r["max"], "%d")]
    else:
        values = ["", "", ""]
    percent = r["percent"]
    if percent is None:         # the root counts nothing: its children are each 100 %
        percent_text = "100%" if r["root_child"] else ""
    else:
        percent_text = "%.2f%%" % percent
    return [str(r["count"]), *values, "" if r["rate"] is None else "%.4f" % r["rate"], percent_text,
            value(r["burst_rate"], "%.4f"), value(r["burst_start"], "%.3f")]
