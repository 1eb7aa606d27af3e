"""Reading and writing as tshark does: standard input and pipes (pcap, pcapng, gzip; never seeked), -w - to the
standard output, named pipes (`-r fifo`), -F and the -w extension, -l, -2 -R, -n/-N, and bad input: one line and
tshark's exit code."""
from __future__ import annotations

import gzip
import os
import subprocess
import threading
import time
from types import SimpleNamespace

import click

import pytest

from conftest import CAPTURES_DIR, PROTODUMP, TSHARK
from protodump.cli import read_cmd
from protodump.engine.dispatch import Settings

CAP = CAPTURES_DIR / "blank-server-session.pcap"
BIG = CAPTURES_DIR / "iceball-enet-session.pcap"


def run(*args, stdin: bytes | None = None, shell: str | None = None):
    if shell is not None:           # a real pipe between processes (not seekable)
        return subprocess.run(["bash", "-o", "pipefail", "-c", shell], capture_output=True, timeout=120)
    return subprocess.run([*PROTODUMP, *args], input=stdin, capture_output=True, timeout=120)


def pd() -> str:
    return " ".join(f"'{a}'" for a in PROTODUMP)


@pytest.mark.parametrize("compress", [False, True])
def test_standard_input_through_a_pipe(compress):
    expected = run("-r", str(CAP)).stdout
    source = f"gzip -c {CAP}" if compress else f"cat {CAP}"
    r = run(shell=f"{source} | {pd()} -r -")
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected and expected.count(b"\n") > 100


@pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH")
def test_pcapng_from_tshark_through_a_pipe():
    expected = run("-r", str(CAP), "-c", "20").stdout
    r = run(shell=f"{TSHARK} -r {CAP} -F pcapng -w - 2>/dev/null | {pd()} -r - -c 20")
    assert r.stdout == expected, r.stderr


@pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH")
@pytest.mark.parametrize("fmt", ["pcap", "nsecpcap"])
def test_write_pcap_to_standard_output_as_tshark(fmt):
    ours = run("-r", str(CAP), "-F", fmt, "-w", "-").stdout
    theirs = subprocess.run([TSHARK, "-r", str(CAP), "-F", fmt, "-w", "-"], capture_output=True).stdout
    assert ours == theirs and len(ours) > 10000


def test_write_format_follows_the_extension(tmp_path):
    for name, magic in [("a.pcap", b"\xd4\xc3\xb2\xa1"), ("a.pcapng", b"\x0a\x0d\x0d\x0a"), ("a", b"\x0a\x0d\x0d\x0a")]:
        r = run("-r", str(CAP), "-Y", "blank.type == 1", "-w", str(tmp_path / name))
        assert r.returncode == 0, r.stderr
        data = (tmp_path / name).read_bytes()
        assert data[:4] == magic, name
        again = run("-r", str(tmp_path / name))
        assert again.stdout.count(b"\n") == 1 and b"Login" in again.stdout
    r = run("-r", str(CAP), "-c", "3", "-F", "pcapng", "-w", "-")
    assert r.stdout[:4] == b"\x0a\x0d\x0d\x0a"
    assert run(stdin=r.stdout, *("-r", "-")).stdout.count(b"\n") == 3


def test_write_to_a_pipe_and_read_it_back():
    r = run(shell=f"{pd()} -r {CAP} -w - | {pd()} -r - -Y 'blank.type == 1'")
    assert r.returncode == 0 and r.stdout.count(b"\n") == 1 and b"pybot" in r.stdout


def test_line_buffered_two_pass_and_resolution_flags():
    plain = run("-r", str(CAP), "-Y", "blank.type == 1").stdout
    assert run("-l", "-n", "-N", "mnt", "-r", str(CAP), "-Y", "blank.type == 1").stdout == plain
    assert run("-2", "-R", "blank.type == 1", "-r", str(CAP)).stdout == plain
    r = run("-R", "blank", "-r", str(CAP))
    assert r.returncode == 1 and r.stderr.strip().endswith(b"For single-pass filtering use -Y.")
    r = run("-N", "q", "-r", str(CAP))
    assert r.returncode == 1 and r.stderr.count(b"\n") == 1 and b"'q'" in r.stderr


# the plain decode, and the runs the fused machine takes on a regular file (two passes over it)
FIFO_FORMS = [(), ("-T", "json"), ("-q", "-z", "io,phs"), ("-q", "-z", "blank,types"),
              ("-T", "fields", "-e", "frame.number", "-e", "blank.seq")]


def _feed(fifo, data: bytes, seconds: float = 60) -> None:
    """Write `data` into a FIFO once a reader has opened it (a thread: no writer is left behind)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:          # ENXIO: no reader yet
            time.sleep(0.01)
            continue
        os.set_blocking(fd, True)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        except BrokenPipeError:  # the reader closed it early
            pass
        return


@pytest.mark.parametrize("args", FIFO_FORMS, ids=lambda a: " ".join(a) or "summary")
def test_a_named_pipe_is_read_once(tmp_path, args):
    """`-r FIFO`, as tshark reads it: once, in one pass, whatever the output (a second open would wait for ever
    for a writer that is gone: the run's timeout fails the test)."""
    fifo = tmp_path / "capture.fifo"
    os.mkfifo(fifo)
    expected = run(*args, "-r", str(CAP))
    writer = threading.Thread(target=_feed, args=(fifo, CAP.read_bytes()), daemon=True)
    writer.start()
    r = run(*args, "-r", str(fifo))
    writer.join()
    assert (r.returncode, r.stderr) == (0, b"")
    assert r.stdout == expected.stdout and expected.stdout.count(b"\n") > 7


def test_two_passes_of_a_pipe_are_refused_as_tshark(tmp_path):
    """-2 reads the file twice: on the standard input or a FIFO, tshark's line and exit code 2, nothing printed
    (the FIFO has no writer: opening it would wait for ever)."""
    fifo = tmp_path / "capture.fifo"
    os.mkfifo(fifo)
    for source, name in ((f"cat {CAP} | {pd()} -2 -r -", "The standard input"),
                         (f"{pd()} -2 -r {fifo}", f'The file "{fifo}"')):
        r = run(shell=source)
        assert (r.returncode, r.stdout) == (2, b"")
        assert r.stderr.decode() == (f"protodump: {name} is a pipe or FIFO; protodump can't read pipe or FIFO files "
                                     "in two-pass mode.\n")
    if TSHARK is not None:
        r = run(shell=f"cat {CAP} | {TSHARK} -2 -r -")
        last = r.stderr.decode().splitlines()[-1]      # (as root, a warning comes first)
        assert r.returncode == 2 and last.replace("TShark", "protodump").replace("tshark:", "protodump:") \
            == ("protodump: The standard input is a pipe or FIFO; protodump can't read pipe or FIFO files in "
                "two-pass mode.")


def test_line_buffered_fields_take_the_plain_pass():
    """-l: each packet's line as soon as it is decoded. The fused machine (output/fields_fused.py) prints after a
    first pass over the whole file, so -l keeps the plain pass; without -l the same run takes the machine."""
    fields = ["frame.number", "blank.seq"]
    asked = read_cmd.run_demand([], None, None, False, False, "fields", fields)
    source = SimpleNamespace(interface=None, write_path=None)
    with click.Context(click.Command("read")):
        chosen = [read_cmd._fused_items(str(CAP), source, False, [], None, None, None, False, Settings({}), "fields",
                                        fields, asked, line_buffered) for line_buffered in (False, True)]
    assert chosen[0] is not None and chosen[1] is None


@pytest.mark.parametrize("data", [b"hello, not a capture\n", b""])
def test_non_capture_on_standard_input(data):
    r = run("-r", "-", stdin=data)
    assert r.returncode == 2 and r.stdout == b""
    assert r.stderr.count(b"\n") == 1 and r.stderr.startswith(b"protodump: The standard input isn't a capture file")


def test_missing_file():
    r = run("-r", "/nonexistent.pcap")
    assert r.returncode == 2 and r.stderr == b'protodump: The file "/nonexistent.pcap" doesn\'t exist.\n'


@pytest.mark.parametrize("args", [(), ("-V",), ("-T", "json"), ("-x",), ("-T", "fields", "-e", "frame.number")])
def test_closed_output_pipe_is_quiet(args):
    """`| head`: tshark exits 2 and says nothing; so do we (no traceback, no "Broken pipe"). The pipe's reader
    has gone before the first line (`| head -1` is a race where the whole output fits in the pipe's buffer: the
    fused machine writes its few fields at once)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        r = subprocess.run([*PROTODUMP, *args, "-r", str(BIG)], stdout=write_end, stderr=subprocess.PIPE,
                           timeout=120)
    finally:
        os.close(write_end)
    assert (r.returncode, r.stderr) == (2, b"")


def test_output_pipe_closed_after_the_first_line_is_quiet():
    """`| head -1` in the middle of an output far larger than the pipe's buffer (-V: megabytes)."""
    r = run(shell=f"{pd()} -V -r {BIG} | head -1 >/dev/null; exit ${{PIPESTATUS[0]}}")
    assert (r.returncode, r.stderr) == (2, b"")


def test_gzip_module_round_trip(tmp_path):
    path = tmp_path / "x.pcap.gz"
    path.write_bytes(gzip.compress(CAP.read_bytes()))
    assert run("-r", str(path), "-c", "2").stdout == run("-r", str(CAP), "-c", "2").stdout
