"""`protodump check`: the CI regression command on real captures and their goldens, with a dissector changed on
purpose (a sitecustomize shim patches the blank table in the subprocess, the code under test is untouched)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
from collections import Counter

import pytest

from conftest import CAPTURES, CAPTURES_DIR, GOLDEN_DIR, PLUGIN, PROTODUMP, TSHARK, golden_commands

SMALL = "blank-all-current.pcap"            # has every packet type; decodes in a blink


def run(*args, shim: str | None = None, tmp=None, cwd=None):
    env = dict(os.environ)
    if shim is not None:
        d = tmp / "shim"
        d.mkdir(exist_ok=True)
        (d / "sitecustomize.py").write_text(textwrap.dedent(shim))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(d), env.get("PYTHONPATH")]))
    return subprocess.run([*PROTODUMP, "check", *map(str, args)], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


def copy_captures(tmp, names=(SMALL,)):
    d = tmp / "caps"
    (d / "golden").mkdir(parents=True)
    for name in names:
        shutil.copy(CAPTURES_DIR / name, d / name)
        for golden in golden_commands(name):
            shutil.copy(GOLDEN_DIR / golden, d / "golden" / golden)
    return d


# A value-string of the blank table changed: "Chunk Data" becomes "Chunk Piece" (-V shows it, JSON shows numbers).
RENAME_TYPE = """
    from protodump.dissectors.blank import PROTOCOL
    PROTOCOL.fields["blank.type"].values[10] = "Chunk Piece"
"""

# A dissector that breaks on its 5th packet: the dispatcher turns that into an Error/Malformed expert info.
BREAK_FIFTH = """
    from protodump.dissectors.blank import PROTOCOL
    _dissect, _calls = PROTOCOL.dissect, [0]
    def dissect(ctx, prefs):
        _calls[0] += 1
        info = _dissect(ctx, prefs)
        if _calls[0] == 5:
            raise ValueError("deliberate regression")
        return info
    PROTOCOL.dissect = dissect
"""


def test_bundled_captures_match_their_goldens():
    """What CI runs: every bundled capture, OK, exit 0 (blank-bad's expert errors are in its golden)."""
    r = run(CAPTURES_DIR)
    assert r.returncode == 0, r.stdout + r.stderr
    for name in CAPTURES:
        assert re.search(rf"^OK +\S*{re.escape(name)} \(\d+ packets\)$", r.stdout, re.M), r.stdout
    assert r.stdout.splitlines()[-1] == f"{len(CAPTURES)} captures: {len(CAPTURES)} ok"
    assert r.stderr == ""


def test_changed_dissector_is_caught_then_updated(tmp_path):
    caps = copy_captures(tmp_path)
    r = run(caps, shim=RENAME_TYPE, tmp=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"CHANGED  {caps / SMALL}" in r.stdout
    # the diff names the field, with the golden line and the new one
    assert re.search(r"^    -\s+Type: Chunk Data \(10\)$", r.stdout, re.M), r.stdout
    assert re.search(r"^    \+\s+Type: Chunk Piece \(10\)$", r.stdout, re.M), r.stdout
    m = re.search(r"golden/blank-all-current.pcap.txt: first difference at line (\d+)", r.stdout)
    golden = (GOLDEN_DIR / f"{SMALL}.txt").read_text().splitlines()
    assert golden[int(m.group(1)) - 1].strip() == "Type: Chunk Data (10)"
    assert ".json" not in r.stdout                  # the JSON shows the number: unchanged
    assert r.stdout.count("\n    @@ ") == 1          # one hunk: the first differing region
    # --update accepts the change; then the patched decode matches and the unpatched one does not
    r = run("--update", caps, shim=RENAME_TYPE, tmp=tmp_path)
    assert r.returncode == 0 and f"UPDATED  {caps / SMALL}" in r.stdout, r.stdout + r.stderr
    assert "Chunk Piece" in (caps / "golden" / f"{SMALL}.txt").read_text()
    assert (caps / "golden" / f"{SMALL}.json").read_bytes() == (GOLDEN_DIR / f"{SMALL}.json").read_bytes()
    assert sorted(p.name for p in (caps / "golden").iterdir()) == sorted(golden_commands(SMALL))   # no temp files
    assert run(caps, shim=RENAME_TYPE, tmp=tmp_path).returncode == 0
    assert run(caps).returncode == 1


def test_new_expert_infos_are_listed_and_fail(tmp_path):
    caps = copy_captures(tmp_path)
    r = run(caps, shim=BREAK_FIFTH, tmp=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "CHANGED" in r.stdout and "1 expert infos not in the golden:" in r.stdout
    assert re.search(r"frame 5: Error/Malformed: Dissector error: ValueError\('deliberate regression'\)",
                     r.stdout), r.stdout
    # --update writes the goldens, but the default --fail-on new still fails on the new error ...
    r = run("--update", caps, shim=BREAK_FIFTH, tmp=tmp_path)
    assert r.returncode == 1 and "UPDATED" in r.stdout, r.stdout
    # ... once accepted, it is in the golden and no longer new
    r = run(caps, shim=BREAK_FIFTH, tmp=tmp_path)
    assert r.returncode == 0 and "not in the golden" not in r.stdout, r.stdout


def test_update_can_accept_new_expert_infos(tmp_path):
    caps = copy_captures(tmp_path)
    r = run("--update", "--fail-on", "none", caps, shim=BREAK_FIFTH, tmp=tmp_path)
    assert r.returncode == 0 and "not in the golden" in r.stdout, r.stdout


def test_missing_golden_is_new_and_update_writes_the_same_bytes(tmp_path):
    caps = copy_captures(tmp_path, (SMALL, "blank-2015.pcap"))
    for golden in golden_commands(SMALL):
        (caps / "golden" / golden).unlink()
    r = run(caps)
    assert r.returncode == 1
    assert f"NEW      {caps / SMALL}" in r.stdout and "missing (protodump check --update writes it)" in r.stdout
    assert f"OK       {caps / 'blank-2015.pcap'}" in r.stdout
    assert r.stdout.splitlines()[-1] == "2 captures: 1 ok, 1 new"
    r = run("--update", caps)
    assert r.returncode == 0 and f"CREATED  {caps / SMALL}" in r.stdout, r.stdout
    for golden in golden_commands(SMALL):         # in-process rendering == the goldens made by `protodump -V/-T json`
        assert (caps / "golden" / golden).read_bytes() == (GOLDEN_DIR / golden).read_bytes()


def test_edited_golden_shows_the_line(tmp_path):
    caps = copy_captures(tmp_path)
    path = caps / "golden" / f"{SMALL}.json"
    lines = path.read_text().splitlines(keepends=True)
    del lines[99]
    path.write_text("".join(lines))
    r = run(caps)
    assert r.returncode == 1
    assert f"golden/{SMALL}.json: first difference at line 100 ({len(lines)} golden lines, {len(lines) + 1} now)" \
        in r.stdout, r.stdout
    # a golden that goes on after the output ends is a difference too
    path.write_bytes((GOLDEN_DIR / f"{SMALL}.json").read_bytes() + b"extra\n")
    r = run(caps)
    assert r.returncode == 1 and re.search(r"^    -extra$", r.stdout, re.M), r.stdout


def test_unreadable_captures_exit_3(tmp_path):
    caps = copy_captures(tmp_path)
    data = (CAPTURES_DIR / "blank-bad.pcap").read_bytes()
    (caps / "cut.pcap").write_bytes(data[:3000])
    (caps / "junk.pcap").write_bytes(b"not a capture at all\n")
    r = run(caps)
    assert r.returncode == 3, r.stdout
    assert re.search(r"^ERROR    \S*cut.pcap: truncated pcap record .*\(offset \d+\) after \d+ packets$",
                     r.stdout, re.M), r.stdout
    assert re.search(r"^ERROR    \S*junk.pcap: not a pcap or pcapng file", r.stdout, re.M), r.stdout
    assert f"OK       {caps / SMALL}" in r.stdout          # the others are still checked
    assert not list((caps / "golden").glob("cut*")) and "Traceback" not in r.stderr
    assert not list((caps / "golden").glob(".*"))          # --update never leaves a temp file for a bad capture
    r = run("--update", caps)
    assert r.returncode == 3 and not list((caps / "golden").glob("*cut*")) and not list((caps / "golden").glob(".*"))


def test_gzip_and_pcapng_captures(tmp_path):
    """A gzip-compressed capture is checked like any other; its goldens are named after the file."""
    import gzip
    caps = copy_captures(tmp_path)
    gz = caps / f"{SMALL}.gz"
    gz.write_bytes(gzip.compress((caps / SMALL).read_bytes()))
    for golden in golden_commands(SMALL):
        shutil.copy(GOLDEN_DIR / golden, caps / "golden" / golden.replace(SMALL, gz.name))
    r = run(caps)
    assert r.returncode == 0 and f"OK       {gz}" in r.stdout, r.stdout


@pytest.mark.parametrize("args", [(), ("--fail-on", "bogus", "."), ("no/such/dir",), ("--bogus", ".")])
def test_usage_errors_exit_2(args):
    r = run(*args, cwd=CAPTURES_DIR)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("Error:")


def test_directory_without_captures_exit_2(tmp_path):
    r = run(tmp_path)
    assert r.returncode == 2 and "no capture files" in r.stderr


def tshark_errors(name: str) -> int:
    """Expert infos of severity Error in a capture, as tshark with the plugin counts them."""
    out = subprocess.run([TSHARK, "-X", f"lua_script:{PLUGIN}", "-r", str(CAPTURES_DIR / name), "-T", "fields",
                          "-e", "_ws.expert.severity", "-E", "occurrence=a", "-E", "aggregator=,"],
                         capture_output=True, text=True, check=True).stdout
    return Counter(v for line in out.splitlines() for v in line.split(",") if v)["8388608"]


@pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH")
def test_fail_on_severity_counts_like_tshark():
    """--fail-on error fails on blank-bad's expert errors (which the default accepts: they are in its golden);
    the count it prints is tshark's."""
    r = run(CAPTURES_DIR / "blank-bad.pcap")
    assert r.returncode == 0
    r = run("--fail-on", "error", CAPTURES_DIR / "blank-bad.pcap", CAPTURES_DIR / "blank-2015.pcap")
    assert r.returncode == 1
    m = re.search(r"expert infos at or above error: (\d+) Error$", r.stdout, re.M)
    assert m and int(m.group(1)) == tshark_errors("blank-bad.pcap") > 0, r.stdout
    assert r.stdout.count("expert infos at or above") == 1        # blank-2015 has none
    r = run("--fail-on", "note", CAPTURES_DIR / "blank-sequence.pcap")
    assert r.returncode == 1 and re.search(r"at or above note: \d+ Note$", r.stdout, re.M), r.stdout


def test_expert_scanner_reads_the_goldens_as_the_items_are():
    """The -V parser that finds expert infos in a golden gives exactly the decode's expert items."""
    from protodump.analysis.check import ExpertScanner
    from protodump.engine.tree import GROUP_NAMES, SEVERITY_NAMES
    from protodump.session import packets
    for name in ("blank-bad.pcap", "blank-sequence.pcap"):
        found = Counter()
        for p in packets(CAPTURES_DIR / name):
            for item in p.index().get("_ws.expert", ()):
                e = item.expert_info
                found[(p.number, SEVERITY_NAMES[e.severity], GROUP_NAMES[e.group], e.message)] += 1
        assert found and ExpertScanner.of_file(GOLDEN_DIR / f"{name}.txt") == found


def test_help_has_exit_codes_and_examples():
    r = subprocess.run([*PROTODUMP, "check", "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    for text in ("Exit status:", "3  a capture could not be read", "Examples:", "protodump check captures/",
                 "--update", "--fail-on [new|note|warn|error|none]"):
        assert text in r.stdout, text
