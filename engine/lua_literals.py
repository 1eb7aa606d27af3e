"""Python values as Lua literals, for every module that writes Lua (the backend, the building blocks, the
protocol kinds). A leaf module: the writers import it at the top, with no cycle through engine.lua_backend."""
from __future__ import annotations


def lua_str(s: str | bytes) -> str:
    """A Lua string literal; every byte outside printable ASCII as a decimal escape (valid in 5.2 and 5.4)."""
    raw = s.encode() if isinstance(s, str) else s
    out = []
    for b in raw:
        ch = chr(b)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= b < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{b:03d}")
    return '"' + "".join(out) + '"'


def lua_num(v) -> str:
    return repr(float(v)) if isinstance(v, float) else str(int(v))
