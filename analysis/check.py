"""Regression check of recorded captures against their golden outputs (`protodump check`).

Each capture is decoded once; every golden form (`-V` text, `-T json`) is rendered in-process and compared with
its golden file as the bytes stream out, chunk against chunk, so a 15 MB golden costs one pass and no memory.
Only the region around the first difference is kept, and only that goes through difflib.

Expert infos are read from the `-V` text on both sides (the same parser for the golden file and the new
output), so "new expert infos" means exactly the expert lines the golden does not have.
"""
from __future__ import annotations

import difflib
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..capture.files import CaptureError, open_capture
from ..session import packets

CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap", ".gz")
SEVERITY_RANK = {"Comment": 0, "Chat": 1, "Note": 2, "Warning": 3, "Error": 4}
FAIL_ON = {"note": 2, "warn": 3, "error": 4}          # --fail-on SEVERITY -> lowest rank that fails
WINDOW = 40            # lines of each side kept after the first difference
CONTEXT = 3            # unchanged lines shown before it
_FLUSH = 1 << 16       # characters buffered before a compare


def find_captures(paths) -> list[Path]:
    """Capture files named, or found (not recursively) in the directories named, sorted by name."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found.extend(sorted(c for c in p.iterdir() if c.is_file() and c.name.endswith(CAPTURE_SUFFIXES)))
        else:
            found.append(p)
    return found


# --- expert infos in -V text -------------------------------------------------------------------------------------

_EXPERT_LINE = re.compile(rb"^Frame (\d+):|^[ ]*\[Expert Info \((\w+)/(\w+)\): (.*)\]$", re.M)
_FRAME = re.compile(rb"Frame (\d+):")


class ExpertScanner:
    """Collects (frame, severity, group, message) from -V text fed in arbitrary chunks."""

    def __init__(self):
        self.found: Counter = Counter()
        self.frame = 0
        self._partial = b""

    def feed(self, chunk: bytes) -> None:
        buf = self._partial + chunk
        cut = buf.rfind(b"\n") + 1
        self._partial = buf[cut:]
        if b"[Expert Info (" not in buf[:cut]:          # the common case: only the frame number moves on
            at = buf.rfind(b"\nFrame ", 0, cut)
            m = _FRAME.match(buf, at + 1) if at >= 0 or buf.startswith(b"Frame ") else None
            if m:
                self.frame = int(m.group(1))
            return
        for m in _EXPERT_LINE.finditer(buf, 0, cut):
            if m.group(1):
                self.frame = int(m.group(1))
            else:
                sev, group, msg = (g.decode("utf-8", "replace") for g in m.group(2, 3, 4))
                self.found[(self.frame, sev, group, msg)] += 1

    @classmethod
    def of_file(cls, path) -> Counter:
        scanner = cls()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                scanner.feed(chunk)
        scanner.feed(b"\n")
        return scanner.found


# --- streaming comparison ----------------------------------------------------------------------------------------

def _last_lines(buf: bytes, n: int) -> bytes:
    """The tail of `buf` holding its last `n` newline-ended lines (and any unfinished line after them)."""
    pos = len(buf)
    for _ in range(n + 1):
        pos = buf.rfind(b"\n", 0, pos)
        if pos < 0:
            return buf
    return buf[pos + 1:]


class GoldenSink:
    """A text stream (what the renderers write to) compared on the fly with one golden file; with `update`, the
    output is also written to a temporary file that replaces the golden if it differs."""

    def __init__(self, golden: Path, update: bool, scanner: ExpertScanner | None = None):
        self.path = golden
        self.exists = golden.exists()
        self.golden = open(golden, "rb") if self.exists else None
        self.tmp = golden.with_name(f".{golden.name}.tmp") if update else None
        self.out = open(self.tmp, "wb") if self.tmp else None
        self.scanner = scanner
        self._pending: list[str] = []
        self._size = 0
        self.lines = 0                  # newlines output so far
        self.first = None               # 1-based line of the first difference
        self._tail = b""                # the last few matching lines (diff context)
        self.context = b""
        self.mine = bytearray()         # output from the first difference on (WINDOW lines at most)
        self.theirs = b""               # golden from the first difference on

    def isatty(self) -> bool:           # the renderers colour only a terminal
        return False

    def write(self, s: str) -> None:
        self._pending.append(s)
        self._size += len(s)
        if self._size >= _FLUSH:
            self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        data = "".join(self._pending).encode("utf-8", "surrogateescape")
        self._pending.clear()
        self._size = 0
        if self.out is not None:
            self.out.write(data)
        if self.scanner is not None:
            self.scanner.feed(data)
        if self.first is None and self.golden is not None:
            theirs = self.golden.read(len(data))
            if theirs == data:
                self._tail = _last_lines(self._tail + data, CONTEXT)
                self.lines += data.count(b"\n")
                return
            self._diverge(data, theirs)
        elif self.first is not None and len(self.mine) < WINDOW * 200 and self.mine.count(b"\n") < WINDOW:
            self.mine += data
        self.lines += data.count(b"\n")

    def _diverge(self, data: bytes, theirs: bytes) -> None:
        i = len(os.path.commonprefix([data, theirs]))
        start = data.rfind(b"\n", 0, i) + 1                 # the differing line starts here on both sides
        self.context = _last_lines(self._tail + data[:start], CONTEXT)
        self.first = self.lines + data.count(b"\n", 0, start) + 1
        self.mine = bytearray(data[start:])
        self.theirs = theirs[start:]

    def close(self) -> bool:
        """Finish the comparison; True when the output equals the golden."""
        self.flush()
        if self.golden is not None:
            if self.first is None:
                extra = self.golden.read(1)
                if extra:                                  # the golden goes on after the output ended
                    self.first = self.lines + 1
                    self.context = _last_lines(self._tail, CONTEXT)
                    self.theirs = extra
            if self.first is not None:
                while self.theirs.count(b"\n") < WINDOW and (line := self.golden.readline()):
                    self.theirs += line
                self.golden_lines = self.first - 1 + self.theirs.count(b"\n")
                while chunk := self.golden.read(1 << 20):
                    self.golden_lines += chunk.count(b"\n")
            self.golden.close()
        if self.out is not None:
            self.out.close()
        return self.exists and self.first is None

    def commit(self) -> None:
        """--update: the new output becomes the golden (left untouched when equal)."""
        if self.tmp is not None:
            if self.exists and self.first is None:
                self.tmp.unlink()
            else:
                os.replace(self.tmp, self.path)

    def discard(self) -> None:
        if self.out is not None:
            self.out.close()
        if self.golden is not None:
            self.golden.close()
        if self.tmp is not None:
            self.tmp.unlink(missing_ok=True)

    def diff(self, limit: int = 30) -> list[str]:
        """A unified diff of the first differing region (its first hunk), with the files' real line numbers."""
        ctx = self.context.decode("utf-8", "replace").splitlines()
        a = ctx + self.theirs.decode("utf-8", "replace").splitlines()[:WINDOW]
        b = ctx + bytes(self.mine).decode("utf-8", "replace").splitlines()[:WINDOW]
        base = self.first - len(ctx) - 1
        out = []
        for line in difflib.unified_diff(a, b, f"golden/{self.path.name}", "now", lineterm="", n=CONTEXT):
            m = re.match(r"@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@", line)
            if m and any(x.startswith("@@") for x in out):
                break                   # the first hunk only: later ones are artefacts of the window's end
            if m:
                line = (f"@@ -{int(m.group(1)) + base}{m.group(2) or ''} "
                        f"+{int(m.group(3)) + base}{m.group(4) or ''} @@")
            out.append(line if len(line) <= 200 else line[:199] + "…")    # hex data lines can be 40 kB long
        if len(out) > limit:
            out = out[:limit] + [f"... (diff cut at {limit} lines)"]
        return out


# --- one capture ---------------------------------------------------------------------------------------------------

@dataclass
class FormResult:
    golden: Path
    status: str                      # "same", "changed", "new"
    first: int | None = None         # first differing line
    golden_lines: int = 0
    output_lines: int = 0
    diff: list[str] = field(default_factory=list)


@dataclass
class CaptureResult:
    capture: Path
    status: str                      # OK, CHANGED, NEW, UPDATED, CREATED, ERROR
    packets: int = 0
    forms: list[FormResult] = field(default_factory=list)
    experts: Counter = field(default_factory=Counter)        # (frame, severity, group, message) in the decode
    new_experts: Counter = field(default_factory=Counter)    # ... that the golden does not have
    error: str = ""

    def at_or_above(self, rank: int) -> Counter:
        """Expert infos of the decode at or above a severity rank, counted by severity name."""
        out: Counter = Counter()
        for (_, sev, _, _), n in self.experts.items():
            if SEVERITY_RANK.get(sev, 0) >= rank:
                out[sev] += n
        return out


def check_capture(path: Path, golden_dir: Path, forms: dict, update: bool = False, wrap=None) -> CaptureResult:
    """Decode `path` once and compare every form with golden_dir/<capture name><suffix>.

    forms: suffix (".txt") -> writer factory taking a text stream, giving an object with write(packet), close().
    The first form must be the -V text (expert infos are read from it). wrap: optional callable wrapping the
    packet iterator (the progress bar)."""
    path = Path(path)
    try:
        open_capture(path).close()
    except (CaptureError, OSError) as exc:
        return CaptureResult(path, "ERROR", error=str(exc))
    scanner = ExpertScanner()
    sinks = [GoldenSink(golden_dir / f"{path.name}{suffix}", update, scanner if i == 0 else None)
             for i, suffix in enumerate(forms)]
    writers = [make(sink) for make, sink in zip(forms.values(), sinks)]
    n = 0
    try:
        stream = packets(path)
        for packet in (wrap(stream) if wrap else stream):
            n += 1
            for w in writers:
                w.write(packet)
        for w in writers:
            w.close()
        same = [sink.close() for sink in sinks]
    except CaptureError as exc:
        for sink in sinks:
            sink.discard()
        return CaptureResult(path, "ERROR", n, error=f"{exc} after {n} packets")
    except BaseException:
        for sink in sinks:
            sink.discard()
        raise
    scanner.feed(b"\n")
    result = CaptureResult(path, "OK", n, experts=scanner.found)
    for sink, ok in zip(sinks, same):
        status = "same" if ok else ("changed" if sink.exists else "new")
        form = FormResult(sink.path, status, sink.first, getattr(sink, "golden_lines", 0), sink.lines)
        if status == "changed":
            form.diff = sink.diff()
        result.forms.append(form)
    statuses = {f.status for f in result.forms}
    if "new" in statuses:
        result.status = "CREATED" if update else "NEW"
    elif "changed" in statuses:
        result.status = "UPDATED" if update else "CHANGED"
    verbose = sinks[0]
    if verbose.exists and verbose.first is not None:       # only a changed -V text can hold new experts
        result.new_experts = scanner.found - ExpertScanner.of_file(verbose.path)
    if update:
        for sink in sinks:
            sink.commit()
    return result
