"""The plugin's runtime: the Lua files the generated plugin carries (lua/runtime.lua, the core, then every
lua/rt_*.lua) and the LIMITS table they read, taken from the Python constants (one source of truth)."""
from __future__ import annotations

from importlib import resources

from ..reassembly.budget import INFLATE_COST, STATE_BUDGET
from . import blocks_chunks, blocks_transfer, lifetime, sniff, streams


def runtime_pieces() -> list[str]:
    """lua/runtime.lua, then every lua/rt_*.lua sorted by name: rt_X.lua is the twin of engine/blocks_X.py (or of
    the module its first lines name), tests/test_block_twins.py."""
    folder = resources.files("protodump.lua")
    names = sorted(e.name for e in folder.iterdir() if e.name.startswith("rt_") and e.name.endswith(".lua"))
    return [folder.joinpath(n).read_text() for n in ["runtime.lua", *names]]


def lua_limits(protocols) -> dict[str, int]:
    """The plugin's LIMITS table: the engine's building blocks' limits and each protocol's own (`lua_limits`)."""
    limits = {"CONV_LINGER": int(lifetime.ENDED_LINGER), "CONV_TIMEOUT": int(lifetime.IDLE_TIMEOUT),
              "CONV_MAX": lifetime.MAX_LIVE, "FORGOTTEN_LIMIT": lifetime.FORGOTTEN_LIMIT,
              "STATE_BUDGET": STATE_BUDGET, "INFLATE_COST": INFLATE_COST, "RESYNC_LIMIT": streams.RESYNC_LIMIT,
              "MAX_PDU": streams.MAX_PDU, "SNIFF_LIMIT": sniff.SNIFF_LIMIT,
              **blocks_chunks.LIMITS, **blocks_transfer.LIMITS}
    for p in protocols:
        limits.update(getattr(p, "lua_limits", {}))
    return limits


def limits_line(protocols) -> str:
    """`LIMITS = { ... }`: the plugin's table (local there; a global for the runtime's pieces run standalone)."""
    return "LIMITS = { " + ", ".join(f"{k} = {v}" for k, v in sorted(lua_limits(protocols).items())) + " }"
