"""Conversation lifetime: how long the state of one pair of endpoints (every protocol's conversation dict, the
stream connection, a heuristic's claim) is kept. Freed when the conversation ends (ENet DISCONNECT, TCP FIN
both ways or RST: a dissector calls Ctx.end_conversation) after a short linger (unless a new connection starts
there first: a SYN reusing the ports frees the old state at once and lives on, `restart`), when it has been idle for a while
in CAPTURE time, or, beyond a cap on live conversations, oldest idle first; the next packet of a conversation
dropped by the cap gets an expert note (its analysis starts again there).

Preferences (`-o protodump.<name>:<value>`): conversation_timeout (seconds of capture time), max_conversations,
state_budget (bytes of heavy state such as inflate windows: beyond it the oldest idle conversations are freed),
reassembly_budget (reassembly/budget.py); and stats_tree_nodes, the -z *,tree statistics' limit
(analysis/stats_tree.py), read here with the others.
"""
from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Iterator

from ..reassembly.budget import STATE

IDLE_TIMEOUT = 600.0     # seconds: well past a game's own timeout (ENet drops a silent peer after at most 30 s),
                         # so a real conversation that pauses is not cut (the plugin keeps its state for ever)
ENDED_LINGER = 5.0       # seconds kept after the end: late acknowledgements and retransmissions still find it
MAX_LIVE = 10_000        # conversations kept at once
FORGOTTEN_LIMIT = 65_536 # conversations dropped by the cap remembered, for the note on their next packet
INF = float("inf")
SLACK = 1e-3             # Lifetimes.check_at comes this much early: the exact test decides (float rounding)

PREFERENCES = {          # name: (description, default)
    "conversation_timeout": ("Free a conversation's state after this many seconds of capture time without a "
                             "packet", str(int(IDLE_TIMEOUT))),
    "max_conversations": ("Conversations whose state is kept at once (the oldest idle is freed beyond)",
                          str(MAX_LIVE)),
    "reassembly_budget": ("Bytes of pending reassembly kept across all conversations", str(32 << 20)),
    "state_budget": ("Bytes of heavy conversation state (inflate windows) kept across all conversations; the "
                     "oldest idle conversations are freed beyond", str(32 << 20)),
    "stats_tree_nodes": ("Nodes one -z *,tree statistic keeps (a new item's packets are left out beyond)",
                         str(50_000)),
}


class Lifetimes:
    """Which pairs of endpoints hold state, in order of last activity; says which to free."""

    __slots__ = ("cap", "charged", "check_at", "ended_last", "ending", "forgotten", "latest", "linger", "live",
                 "timeout", "used", "why_cap")

    def __init__(self, timeout: float = IDLE_TIMEOUT, cap: int = MAX_LIVE, linger: float = ENDED_LINGER):
        self.timeout, self.cap, self.linger = timeout, max(1, cap), linger
        self.why_cap = f"more than {self.cap} live conversations: protodump.max_conversations"
        self.live: OrderedDict = OrderedDict()       # pair -> capture time of its last packet (oldest first)
        self.ending: OrderedDict = OrderedDict()     # pair -> capture time of its end (oldest first)
        # hash(pair) -> why its state was dropped (by the cap or the state budget). A flood keeps FORGOTTEN_LIMIT of
        # them: a hash and a shared reason take a tenth of a pair's strings (64-bit hashes: a false note is as
        # likely as a 1e-10 chance)
        self.forgotten: OrderedDict = OrderedDict()
        self.ended_last = False                      # the pair expired() gave last had ended (not idle, not cap)
        self.charged: dict = {}                      # pair -> bytes of heavy state it holds (charge())
        self.used = 0                                # their sum, against STATE.limit (protodump.state_budget)
        # No pair can be ended and lingered, or idle too long, before capture time check_at: while time only goes
        # forward, the first pair of each list is its oldest. Once it runs back, -inf (every frame looks).
        self.check_at = INF
        self.latest = -INF

    def touch(self, pair, now: float) -> str | None:
        """A packet of `pair` at capture time `now`; the note to show when its state was dropped by the cap."""
        if now < self.latest:
            self.check_at = -INF
        else:
            self.latest = now
        if pair in self.ending:
            return None
        live = self.live
        if pair in live:
            live.move_to_end(pair)
            live[pair] = now
            return None
        live[pair] = now
        if now + self.timeout - SLACK < self.check_at:
            self.check_at = now + self.timeout - SLACK
        if self.forgotten:
            why = self.forgotten.pop(hash(pair), None)
            if why is not None:
                return f"Conversation state was dropped ({why}): its analysis starts again here"
        return None

    def restart(self, pair) -> None:
        """A new connection between the same endpoints (a TCP SYN reusing the ports): the earlier one's end no
        longer frees them (the next touch makes the pair live again)."""
        self.ending.pop(pair, None)
        self.live.pop(pair, None)

    def end(self, pair, now: float) -> None:
        if pair not in self.ending:
            self.live.pop(pair, None)
            self.ending[pair] = now
            if now + self.linger - SLACK < self.check_at:
                self.check_at = now + self.linger - SLACK

    def charge(self, pair, n: int) -> bool:
        """`pair` now holds n more bytes of heavy state (an inflate window); True when that puts the total over
        the state budget (the caller frees conversations at once, over_budget(), as the plugin's rt.state_charge
        does)."""
        self.charged[pair] = self.charged.get(pair, 0) + n
        self.used += n
        return self.used > STATE.limit

    def release(self, pair) -> None:
        """The pair's state is freed: its heavy state's bytes are given back."""
        self.used -= self.charged.pop(pair, 0)

    def over_budget(self) -> Iterator:
        """The pairs to free, oldest first (ended ones, then the least recently seen), while the heavy state is
        over the budget; each is noted for its next packet. The caller frees (and release()s) each one."""
        why = state_reason(STATE.configured())
        while self.used > STATE.limit and (self.live or self.ending):
            yield self._drop(why)

    def _drop(self, why: str):
        pair = (self.ending or self.live).popitem(last=False)[0]
        self.forgotten[hash(pair)] = why
        if len(self.forgotten) > FORGOTTEN_LIMIT:
            self.forgotten.popitem(last=False)
        return pair

    def tracks(self, pair) -> bool:
        return pair in self.live or pair in self.ending

    def due(self, now: float) -> bool:
        """Whether expired(now) has anything to give (a cheap test made on every frame: before check_at, the
        oldest pairs need no look)."""
        ending, live = self.ending, self.live
        if len(live) + len(ending) > self.cap or self.used > STATE.limit:
            return True
        if now < self.check_at:
            return False
        if self.check_at == -INF:
            return bool(ending and next(iter(ending.values())) < now - self.linger
                        or live and next(iter(live.values())) < now - self.timeout)
        oldest_end = next(iter(ending.values())) if ending else None
        oldest_use = next(iter(live.values())) if live else None
        self.check_at = min(INF if oldest_end is None else oldest_end + self.linger - SLACK,
                            INF if oldest_use is None else oldest_use + self.timeout - SLACK)
        return (oldest_end is not None and oldest_end < now - self.linger) or \
            (oldest_use is not None and oldest_use < now - self.timeout)

    def expired(self, now: float) -> Iterator:
        """The pairs to free now (ended and lingered, idle too long, beyond the cap or the state budget): the
        caller frees each before the next is chosen (freeing gives its state bytes back)."""
        ending, live = self.ending, self.live
        while ending and next(iter(ending.values())) < now - self.linger:
            self.ended_last = True
            yield ending.popitem(last=False)[0]
        self.ended_last = False
        while live and next(iter(live.values())) < now - self.timeout:
            yield live.popitem(last=False)[0]
        while live or ending:
            if len(live) + len(ending) > self.cap:
                why = self.why_cap
            elif self.used > STATE.limit:
                why = state_reason(STATE.configured())
            else:
                break
            yield self._drop(why)


@functools.lru_cache(maxsize=8)
def state_reason(configured: int) -> str:
    """The state budget's reason, one shared string per configured budget (a flood dropped by the budget keeps
    FORGOTTEN_LIMIT entries of it)."""
    return f"conversation state over {configured} bytes: protodump.state_budget"
