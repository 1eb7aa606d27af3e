"""The README's shell examples run as a new user would type them, from the repository root, and print what the
README shows. A line "..." in the README's output stands for any number of lines; a command followed by two or
more spaces and "(...)" or "#..." carries a remark, not an argument. Commands that need an edit of the code first
(the `protodump check` example) are not run. The plain commands of the ```sh blocks (no output shown) run too
and must succeed, but for those that install, need a cluster elsewhere or a plugin installed for another user.

They run in a scratch copy of the repository root (its entries linked), so what they write (out/, report.html)
stays out of the checkout."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

BIN = Path(sys.executable).parent


def examples() -> list[tuple[str, list[str]]]:
    blocks, current = [], None
    for line in (ROOT / "README.md").read_text().splitlines():
        if line.startswith("```"):
            if current is None:
                current = []
            else:
                blocks.append(current)
                current = None
        elif current is not None:
            current.append(line)
    out = []
    for lines in blocks:
        i = 0
        while i < len(lines):
            if lines[i].startswith("$ "):
                command = lines[i][2:]
                j = i + 1
                while j < len(lines) and not lines[j].startswith("$ "):
                    j += 1
                expected = lines[i + 1:j]
                while expected and not expected[-1].strip():
                    expected.pop()
                out.append((command, expected))
                i = j
            else:
                i += 1
    return out


def plain_commands() -> list[str]:
    """The commands of the ```sh blocks, but those shown with `$ ` (examples())."""
    out, block = [], None
    for line in (ROOT / "README.md").read_text().splitlines():
        if line.startswith("```"):
            block = None if block is not None else line[3:].strip()
        elif block == "sh" and line.strip() and not line.startswith(("$ ", "#")):
            out.append(re.split(r"\s{2,}#", line)[0].strip())
    return out


# Not run: installing (pip, the test script, the plugin into HOME), the plugin checked against an installed copy,
# a scheduler on another machine, tshark itself (tests/test_parity.py runs it as a non-root user), shell setup,
# and the long fuzz runs (tests/test_fuzz.py runs a sample).
SKIP = ("pip install", "bash tools/test.sh", "lua install", "lua verify", "lua generate", "10.0.0.5", "tshark ",
        "_PROTODUMP_COMPLETE", "tools/fuzz.py")
PLAIN = [c for c in plain_commands() if not any(word in c for word in SKIP)]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A scratch repository root: every entry of the real one linked, but what the examples write."""
    d = tmp_path_factory.mktemp("readme")
    for entry in ROOT.iterdir():
        if entry.name not in ("out", "report.html", ".git"):
            (d / entry.name).symlink_to(entry)
    return d


def test_the_readme_has_plain_commands():
    assert len(PLAIN) >= 15


@pytest.mark.parametrize("command", PLAIN, ids=[c[:60] for c in PLAIN])
def test_readme_plain_command_runs(command, workdir):
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}", COLUMNS="80")
    r = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=workdir, capture_output=True, env=env,
                       timeout=300)
    assert r.returncode == 0 and b"Traceback" not in r.stderr, (command, r.stderr[-2000:])
    assert r.stdout or "-q" in command, command      # every one of them prints something


def runnable(command: str) -> str | None:
    if "after renaming" in command:
        return None
    return re.split(r"\s{2,}(?:\(|#)", command)[0].strip()


def matches(expected: list[str], got: list[str]) -> bool:
    """Line by line, "..." matching any run of lines (the README elides long outputs)."""
    if not expected:
        return not got
    if expected[0].strip() == "...":
        return any(matches(expected[1:], got[k:]) for k in range(len(got) + 1))
    return bool(got) and got[0].rstrip() == expected[0].rstrip() and matches(expected[1:], got[1:])


CASES = [(c, e) for c, e in examples() if runnable(c)]


def test_the_readme_has_examples():
    assert len(CASES) >= 10


@pytest.mark.parametrize("command, expected", CASES, ids=[c[:60] for c, _ in CASES])
def test_readme_example(command, expected, workdir):
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}", COLUMNS="80")
    r = subprocess.run(["bash", "-c", runnable(command)], cwd=workdir, capture_output=True, text=True, env=env,
                       timeout=300)
    got = r.stdout.rstrip("\n").splitlines()
    assert matches(expected, got), "\n".join(["expected:", *expected, "got:", *got[:60], r.stderr[-2000:]])
