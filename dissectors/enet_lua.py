"""ENet's part of the generated plugin: the field tables compile to Lua functions through the generator (as every
table does); the datagram walk and the analysis are lua/rt_enet.lua (rt.enet_dissect); this module wires them:
the preferences ENet adds, the command table, the dissector tables payloads go up through, the
heuristic."""
from __future__ import annotations

from ..engine.context import Ctx
from ..engine.fields import Struct
from ..engine.lua_literals import lua_str


def _wrap(abbrev: str, *bound) -> Struct:
    """A transparent struct around bound fields, so the generator emits one Lua function decoding them."""
    s = Struct(abbrev.replace(".", "_"), None, *bound)
    s.abbrev = abbrev
    return s


def _enum_pref(w, var: str, name: str, desc: str, default: str, choices: list[str]) -> None:
    enum = ", ".join(f"{{ {i + 1}, {lua_str(c)}, {i} }}" for i, c in enumerate(choices))
    w(f"{var}.prefs.{name} = Pref.enum({lua_str(desc)}, {choices.index(default)}, {lua_str(desc)}, {{ {enum} }}, "
      "false)")


def emit_enet(p, gen, var: str) -> None:
    w = gen.w
    prefs = p.preferences()
    for name, (desc, default, choices) in prefs.items():
        if choices:
            _enum_pref(w, var, name, desc, default, choices)
        else:
            w(f"{var}.prefs.{name} = Pref.string({lua_str(desc)}, {lua_str(default)}, {lua_str(desc)})")
    fns = {
        "header": gen.struct_body(_wrap("enet.hdr", p.header)),
        "sent_time": gen.struct_body(_wrap("enet.st", p.sent_time)),
        "checksum": gen.struct_body(_wrap("enet.crc", p.checksum)),
        "command": gen.struct_body(p.command_header),
    }
    cmds = {code: gen.struct_body(pkt) for code, pkt in p.commands.items()}
    gen.flush()
    entries = ", ".join(f"[{code}] = {{ fn = {fn}, label = {lua_str(p.commands[code].label)} }}"
                        for code, fn in cmds.items())
    w("local D = { proto = " + var + ", F = F, E = E, " + ", ".join(f"{k} = {v}" for k, v in fns.items()) + " }")
    w(f"D.cmds = {{ {entries} }}")
    w(f"D.rtt = {'true' if 'time' in Ctx.__slots__ else 'false'}")
    for name, (_, default, choices) in prefs.items():
        if not choices:
            w(f"D.{name}_choice = function() return {var}.prefs.{name} or {lua_str(default)} end")
            continue
        table = "{ " + ", ".join(lua_str(c) for c in choices) + " }"
        w(f"D.{name}_choice = function() return ({table})[({var}.prefs.{name} or 0) + 1] or {lua_str(default)} end")
    w("D.checksum_on = function() return D.checksum_choice() == \"on\" end")
    w("D.handoff_mode = D.handoff_choice")
    # The tables payloads go up through (Iceball registers into them): by connect data, by UDP port.
    w(f"D.t_connect = DissectorTable.new(\"enet.connect_data\", \"ENet connect data\", ftypes.UINT32, base.HEX, "
      f"{var})")
    w(f"D.t_port = DissectorTable.new(\"enet.port\", \"ENet UDP port\", ftypes.UINT16, base.DEC, {var})")
    w(f"function {var}.dissector(tvb, pinfo, tree) return rt.enet_dissect(D, tvb, pinfo, tree) end")
    with w.block(f"local function heur_{p.name}(tvb, pinfo, tree)"):
        w("if tvb:len() < 2 or not rt.enet_looks(tvb:raw()) then return false end")
        w(f"pinfo.conversation = {var}       -- later datagrams of this conversation are ENet's, whatever they hold")
        w("rt.enet_dissect(D, tvb, pinfo, tree)")
        w("return true")
    w(f"{var}:register_heuristic(\"udp\", heur_{p.name})")
    w(f"DissectorTable.get(\"udp.port\"):add_for_decode_as({var})      -- -d udp.port==N,enet")
    gen.register_tables(p, var)
    w()
