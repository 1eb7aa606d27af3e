"""The plugin keeps its state right when Wireshark dissects a frame again (pinfo.visited: every click in the GUI;
`tshark -2`): sequence notes, chunk reassembly and the revision decided from earlier packets are computed once and
replayed, so a two-pass run prints exactly what one pass prints."""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "lua" / "protodump.lua"
CAPTURES = sorted((ROOT / "captures").glob("*.pcap"))
pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not on PATH")


def tshark_json(capture: Path, *extra: str) -> bytes:
    return subprocess.run(["tshark", *extra, "-X", f"lua_script:{PLUGIN}", "-r", str(capture), "-T", "json"],
                          capture_output=True, check=True, timeout=300).stdout


@pytest.mark.parametrize("capture", [c for c in CAPTURES if c.stat().st_size < 100_000], ids=lambda c: c.name)
def test_two_passes_print_what_one_pass_prints(capture):
    one = tshark_json(capture)
    assert b"blank" in one
    assert tshark_json(capture, "-2") == one
