"""The progress bar (output/progress.py), --help examples and click shell completion."""
from __future__ import annotations

import gzip
import io
import os
import shutil
import subprocess

import pytest
from rich.console import Console

from conftest import CAPTURES, CAPTURES_DIR, PROTODUMP
from protodump.capture.files import open_capture
from protodump.output.progress import capture_size, record_size, track
from protodump.session import packets

SESSION = CAPTURES_DIR / "blank-server-session.pcap"


@pytest.mark.parametrize("name", CAPTURES)
def test_record_sizes_add_up_to_the_pcap_file(name):
    """The bar's byte offset, computed from the frames, ends exactly at the file size for pcap."""
    size, fmt = capture_size(CAPTURES_DIR / name)
    assert fmt == "pcap" and size == os.path.getsize(CAPTURES_DIR / name)
    frames = list(open_capture(CAPTURES_DIR / name))
    assert 24 + sum(map(record_size(fmt), frames)) == size


@pytest.mark.skipif(shutil.which("editcap") is None, reason="editcap (wireshark) is not on PATH")
def test_pcapng_and_gzip_sizes(tmp_path):
    ng = tmp_path / "s.pcapng"
    subprocess.run(["editcap", "-F", "pcapng", str(SESSION), str(ng)], check=True)
    size, fmt = capture_size(ng)
    frames = list(open_capture(ng))
    assert fmt == "pcapng" and size == os.path.getsize(ng)
    estimate = sum(map(record_size(fmt), frames))
    assert 0.95 * size <= estimate <= size              # the section and interface blocks are not frames
    gz = tmp_path / "s.pcap.gz"
    gz.write_bytes(gzip.compress(SESSION.read_bytes()))
    assert capture_size(gz) == (os.path.getsize(SESSION), "pcap")       # the uncompressed size


def test_bar_draws_on_a_terminal_and_passes_packets_through():
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=100)
    with track(packets(SESSION), SESSION, "decoding", console=console, delay=0) as stream:
        numbers = [p.number for p in stream]
    assert numbers == list(range(1, 1343))
    out = buf.getvalue()
    assert "decoding" in out and "━" in out and "307.8" in out          # description, bar, kB of the file


def test_no_bar_unless_stderr_is_a_terminal(capsys):
    with track(packets(SESSION), SESSION, delay=0) as stream:
        assert sum(1 for _ in stream) == 1342
    assert capsys.readouterr().err == ""


def test_no_bar_for_a_quick_job():
    buf = io.StringIO()
    with track(packets(SESSION), SESSION, console=Console(file=buf, force_terminal=True), delay=60) as stream:
        for _ in stream:
            pass
    assert buf.getvalue() == ""


def test_bar_stops_when_the_loop_breaks():
    buf = io.StringIO()
    with track(packets(SESSION), SESSION, console=Console(file=buf, force_terminal=True), delay=0) as stream:
        for p in stream:
            if p.number == 600:
                break
        assert "\x1b[?25h" not in buf.getvalue()         # the bar is live: cursor hidden
    assert "\x1b[?25h" in buf.getvalue()                 # stopped by the with: cursor shown, bar erased


# --- help and completion ----------------------------------------------------------------------------------------

def protodump(*args, env=None):
    return subprocess.run([*PROTODUMP, *args], capture_output=True, text=True, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("command", [(), ("read",), ("check",), ("lua",), ("fields",)])
def test_help_has_examples(command):
    r = protodump(*command, "--help")
    assert r.returncode == 0 and "Examples:" in r.stdout, r.stdout


def test_bash_completion_script():
    r = protodump(env={"_PROTODUMP_COMPLETE": "bash_source"})
    assert r.returncode == 0
    assert "_protodump_completion()" in r.stdout and "complete -o nosort -F _protodump_completion protodump" \
        in r.stdout
    for shell in ("zsh", "fish"):
        r = protodump(env={"_PROTODUMP_COMPLETE": f"{shell}_source"})
        assert r.returncode == 0 and "_PROTODUMP_COMPLETE" in r.stdout


def complete(words: str) -> list[str]:
    """What bash completion offers for the last word of `words` (click's bash_complete protocol)."""
    parts = words.split(" ")
    r = protodump(env={"_PROTODUMP_COMPLETE": "bash_complete", "COMP_WORDS": words,
                       "COMP_CWORD": str(len(parts) - 1)})
    assert r.returncode == 0, r.stderr
    return [line.split(",", 1)[1] for line in r.stdout.splitlines()]


def test_completion_of_commands_and_choices():
    assert complete("protodump lua ge") == ["generate"]
    assert complete("protodump ch") == ["check"]
    assert complete("protodump check --fail-on w") == ["warn"]
    assert "json" in complete("protodump -T ")          # the default command's options complete too
