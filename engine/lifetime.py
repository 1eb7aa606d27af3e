"""Conversation lifetime: how long the state of one pair of endpoints (every protocol's conversation dict, the
stream connection, a heuristic's claim) is kept. Freed when the conversation ends (ENet DISCONNECT, TCP FIN
both ways or RST: a dissector calls Ctx.end_conversation) after a short linger, when it has been idle for a while
in CAPTURE time, or, beyond a cap on live conversations, oldest idle first; the next packet of a conversation
dropped by the cap gets an expert note (its analysis starts again there).

Preferences (`-o protodump.<name>:<value>`): conversation_timeout (seconds of capture time), max_conversations,
state_budget (bytes of heavy state such as inflate windows: beyond it the oldest idle conversations are freed),
reassembly_budget (reassembly/budget.py).
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator

from ..reassembly.budget import STATE

IDLE_TIMEOUT = 600.0     # seconds: well past a game's own timeout (ENet drops a silent peer after at most 30 s),
                         # so a real conversation that pauses is not cut (the plugin keeps its state for ever)
ENDED_LINGER = 5.0       # seconds kept after the end: late acknowledgements and retransmissions still find it
MAX_LIVE = 10_000        # conversations kept at once
FORGOTTEN_LIMIT = 65_536 # conversations dropped by the cap remembered, for the note on their next packet

PREFERENCES = {          # name: (description, default)
    "conversation_timeout": ("Free a conversation's state after this many seconds of capture time without a "
                             "packet", str(int(IDLE_TIMEOUT))),
    "max_conversations": ("Conversations whose state is kept at once (the oldest idle is freed beyond)",
                          str(MAX_LIVE)),
    "reassembly_budget": ("Bytes of pending reassembly kept across all conversations", str(32 << 20)),
    "state_budget": ("Bytes of heavy conversation state (inflate windows) kept across all conversations; the "
                     "oldest idle conversations are freed beyond", str(32 << 20)),
}


class Lifetimes:
    """Which pairs of endpoints hold state, in order of last activity; says which to free."""

    __slots__ = ("cap", "ended_last", "ending", "forgotten", "linger", "live", "timeout")

    def __init__(self, timeout: float = IDLE_TIMEOUT, cap: int = MAX_LIVE, linger: float = ENDED_LINGER):
        self.timeout, self.cap, self.linger = timeout, max(1, cap), linger
        self.live: OrderedDict = OrderedDict()       # pair -> capture time of its last packet (oldest first)
        self.ending: OrderedDict = OrderedDict()     # pair -> capture time of its end (oldest first)
        self.forgotten: OrderedDict = OrderedDict()  # pair -> why its state was dropped (by the cap)
        self.ended_last = False                      # the pair expired() gave last had ended (not idle, not cap)

    def touch(self, pair, now: float) -> str | None:
        """A packet of `pair` at capture time `now`; the note to show when its state was dropped by the cap."""
        if pair in self.ending:
            return None
        live = self.live
        if pair in live:
            live.move_to_end(pair)
            live[pair] = now
            return None
        live[pair] = now
        return self.forgotten.pop(pair, None) if self.forgotten else None

    def end(self, pair, now: float) -> None:
        if pair not in self.ending:
            self.live.pop(pair, None)
            self.ending[pair] = now

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
                why = f"more than {self.cap} live conversations: protodump.max_conversations"
            elif STATE.used > STATE.limit:
                why = f"conversation state over {STATE.configured()} bytes: protodump.state_budget"
            else:
                break
            pair = (ending or live).popitem(last=False)[0]
            self.forgotten[pair] = f"Conversation state was dropped ({why}): its analysis starts again here"
            if len(self.forgotten) > FORGOTTEN_LIMIT:
                self.forgotten.popitem(last=False)
            yield pair
