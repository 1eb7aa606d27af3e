"""Statistics of several shards merged into what one process would print (-j's workers, --dask's shards, the
files of a capture set): each -z tap's state is kept per shard (`prepare`, `state_of`), then merged per kind
(`merge_taps`). Counts add up, first and last times take the extremes, and every table tshark prints in
first-seen order is ordered by the set-wide frame number at which each key first appeared, which the shard
records in `FirstSeen` dicts (`FRAME`: the frame being tapped). Nested orders inside one conversation (message
types of equal counts) follow shard order, exact whenever a conversation is in one file."""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .shards import ShardResult

# the set-wide number of the frame being tapped, per thread: a `dask worker --nthreads N` runs N shards at once
FRAME = threading.local()


class FirstSeen(dict):
    """A dict that remembers the frame number at which each key was first inserted (`.first`)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.first = {k: 0 for k in self}

    def __setitem__(self, key, value):
        if key not in self:
            self.first[key] = getattr(FRAME, "number", 0)
        super().__setitem__(key, value)

    def setdefault(self, key, default=None):
        if key not in self:
            self.first[key] = getattr(FRAME, "number", 0)
        return super().setdefault(key, default)

    def __reduce__(self):
        return (_rebuild, (dict(self), self.first))


def _rebuild(items, first):
    d = FirstSeen(items)
    d.first = first
    return d


def _track(value):
    if type(value) is dict:
        return FirstSeen({k: _track(v) for k, v in value.items()})
    if type(value) is list and any(type(v) is dict for v in value):
        return [_track(v) for v in value]
    return value


def prepare(tap, first_ns) -> None:
    """Before the first packet: FirstSeen tables, and the set's time origin."""
    for name, value in list(vars(tap).items()):
        if name not in ("match", "matchers"):
            setattr(tap, name, _track(value))
    if first_ns is not None and hasattr(tap, "first_ns"):
        tap.first_ns = first_ns
    if hasattr(tap, "shard"):       # what a tap keeps only for the merge (io,stat AVG: each frame's values)
        tap.shard()


def state_of(tap) -> dict:
    """What a shard sends back of its tap: everything but its compiled filters."""
    return {k: v for k, v in vars(tap).items() if k not in ("match", "matchers")}


def record_phs(tap, packet, paths: FirstSeen) -> None:
    """io,phs: each protocol path of the packet, at the frame it was first seen (the merged tree's order)."""
    if tap.match is not None and not tap.match(packet):
        return
    from .analysis.stats_phs import protocol_path
    path = ()
    for proto in protocol_path(packet):
        path += (proto,)
        if path not in paths:
            paths[path] = True


def merge_taps(args, results: list[ShardResult]) -> list[dict]:
    """The statistics of the whole run: each -z argument's shard states merged, as one local run prints them."""
    from .analysis import stats
    out = []
    for n, arg in enumerate(args):
        parts = [r.taps[n] for r in results]
        if len(parts) == 1:
            out.append(parts[0][2])
            continue
        tap = stats.make_tap(arg)
        merge = MERGES.get(merge_family(tap))
        if merge is None:
            raise stats.StatsError(f"-z {arg}: cannot be merged across shards (run it without --dask)")
        merge(tap, [state for _, state, _ in parts])
        out.append(tap.result())
    return out


def check_mergeable(args, shards: list) -> None:
    """StatsError before any work when a statistic of `args` cannot be merged and there are several shards, or
    cannot run in a shard at all (proto,colinfo writes the Info column of the packets a run prints: a shard
    prints none, and its worker process does not know the statistic)."""
    from .analysis import stats
    for arg in args:
        family = merge_family(stats.make_tap(arg))
        if family == "proto,colinfo":
            raise stats.StatsError(f"-z {arg}: it writes the Info column of printed packets, which shards do not "
                                   "print (run it without --dask)")
        if len(shards) > 1 and family not in MERGES:
            raise stats.StatsError(f"-z {arg}: cannot be merged across shards (run it without --dask)")


def merge_family(tap) -> str:
    """The name its merge is found under in MERGES (game statistics of every protocol merge alike)."""
    from .analysis.stats_game import MessageTypes, SequenceAnalysis
    from .analysis.stats_session import SessionTap
    if isinstance(tap, SessionTap):
        return "session"
    if isinstance(tap, MessageTypes):
        return "game_types"
    if isinstance(tap, SequenceAnalysis):
        return "game_seq"
    return tap.kind


def _by_first(tables: list) -> list:
    """(first frame, shard order, key, value) of every entry of several FirstSeen tables, first-seen first."""
    entries = [(t.first.get(k, 0), s, k, v) for s, t in enumerate(tables) for k, v in t.items()]
    entries.sort(key=lambda e: (e[0], e[1]))
    return entries


def _first_ns(tap, states) -> None:
    firsts = [s["first_ns"] for s in states if s.get("first_ns") is not None]
    tap.first_ns = min(firsts) if firsts else None


def _merge_conv(tap, states):
    from .analysis.stats_conv import fold_conversation
    _first_ns(tap, states)
    tap.convs = _first_seen_first(states, "convs", fold_conversation)


def _merge_endpoints(tap, states):
    _first_ns(tap, states)
    tap.ends = _first_seen_first(states, "ends", _add_counts)


def _add_counts(have: list, more: list) -> None:
    """An endpoint's packets and bytes, each way, added."""
    for n in range(1, 5):
        have[n] += more[n]


def _first_seen_first(states, table: str, fold) -> dict:
    """One table of every shard (state[table]: key -> its values, the first being its first frame) as one process
    keeps it: in the order the entries were first seen, an entry that several shards saw folded into the first
    (`fold(first, other)`)."""
    merged: dict = {}
    for key, values in sorted(((k, v) for s in states for k, v in s[table].items()), key=_begun):
        first = merged.get(key)
        if first is None:
            merged[key] = list(values)
        else:
            fold(first, values)
    return merged


def _begun(pair):
    """A conversation's or endpoint's entry by its first frame (the first of its values)."""
    return pair[1][0]


def _merge_phs(tap, states):
    first = {}
    for s in states:
        for path, frame in s["paths"].first.items():
            first[path] = min(first.get(path, frame), frame)

    def merge(levels, prefix):
        names = sorted({n for level in levels for n in level}, key=lambda n: first.get(prefix + (n,), 0))
        out = {}
        for name in names:
            nodes = [level[name] for level in levels if name in level]
            out[name] = [sum(n[0] for n in nodes), sum(n[1] for n in nodes), merge([n[2] for n in nodes],
                                                                                    prefix + (name,))]
        return out
    tap.root = merge([s["root"] for s in states], ())


def _merge_io(tap, states):
    _first_ns(tap, states)
    tap.last_us = max(s["last_us"] for s in states)
    for column, fn in enumerate(tap.functions):      # COUNT() SUM() MIN() MAX() AVG() LOAD() columns
        if fn is not None:
            fn.merge([s["functions"][column] for s in states])
    for column, bins in enumerate(tap.bins):
        for s in states:
            for idx, (f, b) in s["bins"][column].items():
                have = bins.setdefault(idx, [0, 0])
                have[0] += f
                have[1] += b


def _merge_expert(tap, states):
    for sev in tap.items:
        entries = {}
        for _, _, key, (n, first) in _by_first([s["items"][sev] for s in states]):
            have = entries.get(key)
            entries[key] = [n, first] if have is None else [have[0] + n, min(have[1], first)]
        tap.items[sev] = dict(sorted(entries.items(), key=lambda e: e[1][1]))


def _merge_game(tap, states, add):
    convs = {}
    for _, _, key, c in _by_first([s["convs"] for s in states]):
        base = convs.get(key)
        if base is None:
            base = convs[key] = {"client": c["client"], "server": c["server"], "c2s": {}, "s2c": {}}
        swap = c["client"] != base["client"]
        for direction in ("c2s", "s2c"):
            into = base[("s2c" if direction == "c2s" else "c2s") if swap else direction]
            add(into, c[direction])
    tap.convs = convs


def _add_types(into, counts):
    for key, (n, size) in counts.items():
        have = into.setdefault(key, [0, 0])
        have[0] += n
        have[1] += size


def _add_seq(into, s):
    if not s:
        return
    if not into:
        into.update(packets=0, lost=0, duplicate=0, out_of_order=0)
    for k in into:
        into[k] += s.get(k, 0)


def _merge_sessions(tap, states):
    """Game-session statistics (enet,peers, iceball,files, players ...): a conversation lives in one shard, so
    the tables are the shards' conversations in the order of their first frames."""
    entries = [(c["first_frame"], n, key, c) for n, st in enumerate(states) for key, c in st["convs"].items()]
    entries.sort(key=lambda e: (e[0], e[1]))
    tap.convs = {}
    for _, _, key, c in entries:
        tap.convs.setdefault(key, c)
    tap.omitted_convs = sum(st["omitted_convs"] for st in states)


def _merge_echoes(tap, states):
    """icmp,srt and icmpv6,srt: the requests counted, and every answered reply's time in frame order (its
    first minimum and maximum are the first in frame order, as one process keeps them)."""
    tap.requests = sum(s["requests"] for s in states)
    tap.times = sorted((t for s in states for t in s["times"]), key=lambda t: t[1])


def _merge_sctp(tap, states):
    """sctp,stat: the chunk counts of each direction, the directions in the order of their first frames."""
    tap.packets = sum(s["packets"] for s in states)
    directions: dict = {}
    for _, _, key, counts in _by_first([s["directions"] for s in states]):
        into = directions.setdefault(key, {})
        for kind, n in counts.items():
            into[kind] = into.get(kind, 0) + n
    tap.directions = directions


def _merge_hosts(tap, states):
    """-z hosts: the header names the capture read."""
    tap.capture_name = next((s["capture_name"] for s in states if s["capture_name"]), "")


MERGES = {"conv": _merge_conv, "endpoints": _merge_endpoints, "phs": _merge_phs, "io_stat": _merge_io,
          "expert": _merge_expert, "icmp,srt": _merge_echoes, "icmpv6,srt": _merge_echoes,
          "sctp,stat": _merge_sctp, "hosts": _merge_hosts,
          "game_types": lambda tap, states: _merge_game(tap, states, _add_types),
          "game_seq": lambda tap, states: _merge_game(tap, states, _add_seq), "session": _merge_sessions}
