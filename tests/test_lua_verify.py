"""`protodump lua verify`: the user's tshark with a plugin against protodump, field by field."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from conftest import CAPTURES_DIR, PLUGIN, PROTODUMP, TSHARK

def _refuses_lua_here() -> bool:
    """Wireshark >= 4.2 runs no Lua as root, and `lua verify` runs the user's own tshark as the user."""
    if TSHARK is None or os.geteuid() != 0:
        return False
    m = re.search(r"(\d+)\.(\d+)\.", subprocess.run([TSHARK, "--version"], capture_output=True, text=True).stdout)
    return bool(m) and (int(m.group(1)), int(m.group(2))) >= (4, 2)


pytestmark = [pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH"),
              pytest.mark.skipif(_refuses_lua_here(), reason="Wireshark >= 4.2 runs no Lua as root")]
CAP = str(CAPTURES_DIR / "blank-all-current.pcap")


def verify(*args):
    return subprocess.run([*PROTODUMP, "lua", "verify", *args], capture_output=True, text=True, timeout=120)


def test_the_generated_plugin_agrees():
    r = verify("--plugin", str(PLUGIN), CAP)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == "26 frames, 26 with a game layer: the same in both\n"


def test_a_plugin_that_differs_is_reported_by_field(tmp_path):
    changed = tmp_path / "changed.lua"
    changed.write_text(PLUGIN.read_text().replace('"blank.login.name"', '"blank.login.nick"'))
    r = verify("--plugin", str(changed), CAP)
    assert r.returncode == 1
    assert "frame 1: blank/blank.login.name: protodump 'alice', wireshark '(absent)'" in r.stdout
    assert "frame 1: blank/blank.login.nick: protodump '(absent)', wireshark 'alice'" in r.stdout


def test_no_tshark_is_one_line():
    r = verify("--tshark", "no-such-tshark", "--plugin", str(PLUGIN), CAP)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
