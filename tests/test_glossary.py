"""-G fields|protocols|decodes|defaultprefs and `protodump prefs`: tshark's lines, for what protodump dissects.
tshark lists a Lua plugin's fields in hash order, so lines are compared as sets."""
from __future__ import annotations

import re
import subprocess

import pytest

from conftest import PLUGIN, PROTODUMP, TSHARK, tshark_cmd_run

GAMES = ("blank", "enet", "iceball", "rutentoy", "freeblox")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH")


def ours(*args) -> list[str]:
    r = subprocess.run([*PROTODUMP, *args], capture_output=True, text=True, check=True, timeout=60)
    return r.stdout.splitlines()


def tsharks(report: str) -> list[str]:
    r = tshark_cmd_run(["-G", report, "-X", f"lua_script:{PLUGIN}"], timeout=120)     # unprivileged: Lua runs
    return r.stdout.decode("utf-8", "replace").splitlines()


def of_games(lines, column: int) -> set[str]:
    return {line for line in lines if line.split("\t")[column].split(".")[0] in GAMES}


@needs_tshark
def test_fields_of_the_game_protocols():
    mine = of_games(ours("-G", "fields"), 2)
    assert len(mine) > 800
    assert mine == of_games(tsharks("fields"), 2)


@needs_tshark
def test_protocols_and_decodes():
    theirs = set(tsharks("protocols"))
    mine = ours("-G", "protocols")
    assert {line for line in mine if line.endswith(GAMES)} <= theirs
    assert set(mine) <= theirs
    # in tshark's order: the protocols registered last first (the plugin's, the last one first)
    games = [line for line in tsharks("protocols") if line.endswith(tuple("\t" + g for g in GAMES))]
    assert mine[:len(games)] == games and len(games) == 5
    assert set(ours("-G", "decodes")) <= set(tsharks("decodes"))
    assert len(ours("-G", "decodes")) == 6


@needs_tshark
def test_prefs_as_tsharks_defaultprefs():
    theirs = "\n".join(tsharks("defaultprefs"))
    blocks = "\n".join(ours("prefs")).split("\n\n")
    assert blocks == "\n".join(ours("-G", "defaultprefs")).split("\n\n")
    games = [b for b in blocks if re.search(r"^#(blank|enet|iceball|rutentoy|freeblox)\.", b, re.M)]
    assert len(games) == 9       # blank.block_map and rutentoy.block_map (fields.WhenPref) among them
    for block in games:
        assert block in theirs, block


def test_currentprefs_show_a_value():
    out = "\n".join(ours("-G", "currentprefs", "-o", "blank.revision:2015"))
    assert "\nblank.revision: 2015\n" in out and "#enet.checksum: off" in out


@needs_tshark
def test_standard_fields_have_tsharks_types():
    """The standard layers keep addresses and times as text and frame numbers as integers; -G fields names the
    type tshark registers (FT_IPv4, FT_RELATIVE_TIME, FT_FRAMENUM...), for every field tshark also has."""
    theirs = {p[2]: p[3] for p in (line.split("\t") for line in tsharks("fields")) if p[0] == "F"}
    mine = {p[2]: p[3] for p in (line.split("\t") for line in ours("-G", "fields")) if p[0] == "F"}
    shared = [abbrev for abbrev in mine if abbrev in theirs and abbrev.split(".")[0] not in GAMES]
    assert len(shared) > 500
    assert {a: mine[a] for a in shared} == {a: theirs[a] for a in shared}
    assert (mine["ip.src"], mine["frame.time_delta"], mine["tcp.segment"]) == ("FT_IPv4", "FT_RELATIVE_TIME",
                                                                               "FT_FRAMENUM")
