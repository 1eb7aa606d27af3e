"""The Python API: protodump.read(). The README's example runs here and must print what the README shows after it,
and the values it gives are tshark's (with the generated plugin) for the same capture."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

import protodump
from conftest import CAPTURES_DIR, PLUGIN, ROOT, TSHARK

HAS_READ = hasattr(protodump, "read")
needs_read = pytest.mark.skipif(not HAS_READ, reason="protodump.read is not there yet")


def readme_example() -> tuple[str, str]:
    """The README's Python API section: its ```python block and the ``` block of output after it."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    m = re.search(r"```python\n(.*?)```\s*```\n(.*?)```", section, re.S)
    assert m, "the README's Python API section needs a ```python block followed by its output"
    return m.group(1), m.group(2)


@needs_read
def test_readme_example_prints_what_the_readme_says():
    code, expected = readme_example()
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected


@needs_read
@pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH")
@pytest.mark.parametrize("name", ["blank-all-current.pcap", "blank-sequence.pcap"])
def test_field_values_are_tsharks(name):
    """pkt["blank.seq"], pkt["blank.type"], pkt["udp.srcport"] per packet equal tshark -T fields with the plugin."""
    fields = ["blank.seq", "blank.type", "udp.srcport", "ip.src"]
    out = subprocess.run([TSHARK, "-X", f"lua_script:{PLUGIN}", "-r", str(CAPTURES_DIR / name), "-T", "fields",
                          *[a for f in fields for a in ("-e", f)]], capture_output=True, text=True, check=True)
    theirs = [line.split("\t") for line in out.stdout.splitlines()]
    mine = [[str(pkt[f]) if f in pkt else "" for f in fields] for pkt in protodump.read(CAPTURES_DIR / name)]
    assert mine == theirs


@needs_read
def test_packets_and_missing_fields():
    pkts = list(protodump.read(CAPTURES_DIR / "blank-all-current.pcap"))
    assert [p.number for p in pkts] == list(range(1, 27))
    login = pkts[0]
    assert "blank" in login and login["blank.login.name"] == "alice" and "blank.join" not in login
    with pytest.raises(KeyError):
        login["blank.join.entity_id"]
    assert len(login.values("blank.ack_history.received")) == 32


@needs_read
def test_filter_argument():
    import inspect
    if "filter" not in inspect.signature(protodump.read).parameters:
        pytest.skip("protodump.read has no filter= yet")
    logins = list(protodump.read(CAPTURES_DIR / "blank-server-session.pcap", filter="blank.type == 1"))
    assert [p.number for p in logins] == [1]
    everything = list(protodump.read(CAPTURES_DIR / "blank-sequence.pcap"))
    noted = list(protodump.read(CAPTURES_DIR / "blank-sequence.pcap", filter="blank.sequence"))
    assert [p.number for p in noted] == [p.number for p in everything if "blank.sequence" in p] == [13, 15, 17, 19]


# --- docs/api.md: every example prints what the page shows ---------------------------------------------------------

def api_page_examples() -> list[tuple[str, str]]:
    page = (ROOT / "docs" / "api.md").read_text()
    return re.findall(r"```python\n(.*?)```\s*```\n(.*?)```", page, re.S)


@pytest.mark.parametrize("number", range(len(api_page_examples())))
def test_api_page_example(number):
    code, expected = api_page_examples()[number]
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected


def test_api_page_has_examples():
    assert len(api_page_examples()) >= 6


def test_packet_surface():
    pkt = next(protodump.read(CAPTURES_DIR / "blank-all-current.pcap"))
    assert repr(pkt).startswith("<Packet 1 blank 90 bytes: Login")
    assert pkt.get("no.such.field") is None and pkt.get("no.such.field", 5) == 5
    assert pkt.to_json().startswith('  {\n    "_index"') and '"blank.login.name": "alice"' in pkt.to_json()
    assert pkt.text().startswith("Frame 1: 90 bytes on wire")
    with pytest.raises(KeyError):
        pkt["blank.join.entity_id"]


def test_py_typed_is_shipped():
    assert (ROOT / "api" / "py.typed").exists()
    assert '"protodump" = ["py.typed"]' in (ROOT / "pyproject.toml").read_text()
