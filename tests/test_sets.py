"""Capture sets: several files (or a directory) read as one capture, compared with mergecap's merge of the same
files decoded as one file. mergecap (wireshark-common) is the reference for order, numbering and errors."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import CAPTURES_DIR, PROTODUMP

MERGECAP = shutil.which("mergecap")
needs_mergecap = pytest.mark.skipif(MERGECAP is None, reason="mergecap (wireshark-common) is not installed")

# sets whose files overlap in time or not, UDP/TCP/SCTP, and one snapshot length that differs (interfaces move)
SETS = [
    ("blank-2015.pcap", "blank-sequence.pcap", "blank-server-session.pcap"),
    ("iceball-enet-session.pcap", "rutentoy-segmentation.pcap", "freeblox-session.pcap"),
    ("rutentoy-sctp.pcap", "rutentoy-lost-reordered.pcap", "blank-all-current.pcap"),
]


def run(*args, cwd=CAPTURES_DIR):
    return subprocess.run([*PROTODUMP, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=300)


def mergecap(out, files, *extra):
    subprocess.run([MERGECAP, *extra, "-w", str(out), *map(str, files)], check=True, capture_output=True,
                   timeout=60)
    return out


@needs_mergecap
@pytest.mark.parametrize("files", SETS, ids=lambda s: "+".join(f.split("-")[0] for f in s))
@pytest.mark.parametrize("mode", [(), ("-V",), ("-T", "json"), ("-x",)], ids=lambda m: " ".join(m) or "summary")
def test_merged_set_equals_mergecap(tmp_path, files, mode):
    merged = mergecap(tmp_path / "merged.pcapng", [CAPTURES_DIR / f for f in files])
    want = run(*mode, merged)
    got = run(*mode, *files)
    assert want.returncode == got.returncode == 0, got.stderr
    assert got.stdout == want.stdout
    assert got.stdout.count("\n") > 50


@needs_mergecap
def test_concatenated_set_equals_mergecap_a(tmp_path):
    files = ["blank-sequence.pcap", "blank-2015.pcap", "iceball-tcp-session.pcap"]   # later file starts earlier
    cat = mergecap(tmp_path / "cat.pcapng", [CAPTURES_DIR / f for f in files], "-a")
    for mode in ((), ("-V",)):
        assert run("--concatenate", *mode, *files).stdout == run(*mode, cat).stdout
    numbers = run("--concatenate", "-T", "fields", "-e", "frame.number", *files).stdout.split()
    assert numbers == [str(n) for n in range(1, len(numbers) + 1)]
    assert run("-T", "fields", "-e", "frame.number", *files).stdout != run(
        "--concatenate", "-T", "fields", "-e", "frame.number", "-e", "frame.time_epoch", *files).stdout


@needs_mergecap
@pytest.mark.parametrize("stat", ["io,phs", "conv,udp", "conv,tcp", "endpoints,ip", "io,stat,1", "expert",
                                  "blank,types", "blank,seq", "iceball,types"])
def test_statistics_over_a_set(tmp_path, stat):
    files = SETS[0] + ("iceball-enet-session.pcap", "iceball-tcp-session.pcap")
    merged = mergecap(tmp_path / "merged.pcapng", [CAPTURES_DIR / f for f in files])
    want = run("-q", "-z", stat, merged)
    got = run("-q", "-z", stat, *files)
    assert want.returncode == got.returncode == 0, got.stderr
    assert got.stdout == want.stdout


@needs_mergecap
def test_directory_is_a_set_and_write_keeps_the_merge(tmp_path):
    folder = tmp_path / "day"
    folder.mkdir()
    for f in SETS[1]:
        shutil.copy(CAPTURES_DIR / f, folder / f)
    merged = mergecap(tmp_path / "merged.pcapng", sorted(folder.iterdir()))
    assert run(folder).stdout == run(merged).stdout
    out = tmp_path / "written.pcapng"
    result = run("-w", out, folder)
    assert result.returncode == 0, result.stderr
    # the written file holds the merged frames in order (interfaces numbered in order of first use)
    assert run(out).stdout == run(merged).stdout
    fields = ("-T", "fields", "-e", "frame.number", "-e", "frame.time_epoch", "-e", "frame.len")
    assert run(*fields, out).stdout == run(*fields, merged).stdout


def test_unreadable_files_are_named_and_the_rest_is_read(tmp_path):
    data = (CAPTURES_DIR / "blank-server-session.pcap").read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[:len(data) // 2 + 7])
    junk = tmp_path / "notes.pcap"
    junk.write_text("not a capture\n")
    good = CAPTURES_DIR / "blank-2015.pcap"
    result = run("-T", "fields", "-e", "frame.number", cut, junk, good, tmp_path / "missing.pcap")
    lines = result.stderr.splitlines()
    assert result.returncode == 2
    assert len(lines) == 3, result.stderr
    assert any(str(cut) in line and "after 814 packets" in line for line in lines)
    assert any(str(junk) in line and "not a pcap or pcapng file" in line for line in lines)
    assert any("missing.pcap" in line for line in lines)
    alone = run("-T", "fields", "-e", "frame.number", good).stdout.split()
    assert len(result.stdout.split()) == 814 + len(alone)
    assert "Traceback" not in result.stderr


def test_capture_set_api(tmp_path):
    from protodump.capture.sets import CaptureSet
    files = [CAPTURES_DIR / f for f in SETS[0]]
    frames = list(CaptureSet(files))
    assert [f.number for f in frames] == list(range(1, len(frames) + 1))
    # mergecap's rule: the earliest head first, ties to the file named first; each file in its own order
    singles = [list(CaptureSet([f])) for f in files]
    assert sorted(f.ts_ns for f in frames) == sorted(f.ts_ns for s in singles for f in s)
    assert sum(map(len, singles)) == len(frames)


def test_directory_without_captures_is_a_usage_error(tmp_path):
    result = run(tmp_path)
    assert result.returncode == 2
    assert "no capture files in" in result.stderr and result.stdout == ""
