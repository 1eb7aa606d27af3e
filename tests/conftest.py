"""Shared fixtures: the captures, and protodump / tshark runs cached for the whole session (each command runs once,
however many tests read its output)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run (a seed from each test's own code), so CI's verdict on a commit
# is the verdict it had here; HYPOTHESIS_PROFILE=explore draws fresh ones, to hunt for new failing inputs.
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

ROOT = Path(__file__).resolve().parent.parent
CAPTURES_DIR = ROOT / "captures"
GOLDEN_DIR = CAPTURES_DIR / "golden"
PLUGIN = ROOT / "lua" / "protodump.lua"
CAPTURES = sorted(p.name for p in CAPTURES_DIR.glob("*.pcap"))
BLANK_CAPTURES = [name for name in CAPTURES if name.startswith("blank")]

# protodump as a command, whatever the PATH (the console script runs main() too).
PROTODUMP = [sys.executable, "-c", "from protodump.cli.main import main; main()"]
TSHARK = shutil.which("tshark")
# Any sign that the plugin did not load or raised: a Lua error in the tree or on stderr (4.0 writes "Lua Error",
# 4.4 "Lua: Error"), a script that could not load, or a second copy of the plugin clashing with this one.
LUA_ERROR = re.compile(r"_ws\.lua\.error|Lua:? Error|Lua: syntax error|lua_script|could not load|there cannot be two protocols")
# The game protocols the plugin must register (checked with -G protocols once per tshark).
PLUGIN_PROTOCOLS = ("blank", "enet", "iceball", "rutentoy", "freeblox")
# The other Wireshark people run, in a Debian root of its own (tools/test.sh makes it with debootstrap where it
# can): Debian 13's tshark 4.4 / Lua 5.4 on a Debian 12 machine, Debian 12's tshark 4.0 / Lua 5.2 on Debian 13.
OTHER_ROOT = Path(os.environ.get("PROTODUMP_WIRESHARK_ROOT") or next(
    (p for p in (Path("/var/cache/protodump/trixie"), Path("/var/cache/protodump/bookworm"))
     if (p / "usr" / "bin" / "tshark").exists()), Path("/var/cache/protodump/trixie")))
# The Wireshark the tests take as the system's: the tshark on PATH, or the one in the Debian root that
# PROTODUMP_SYSTEM_ROOT names (to run the suite here as a machine with that Debian's tshark would run it).
SYSTEM_ROOT = Path(os.environ["PROTODUMP_SYSTEM_ROOT"]) if os.environ.get("PROTODUMP_SYSTEM_ROOT") else None
NOBODY = 65534
# protodump's standard layers are compared with tshark 4.0, whose manuf and wka files name Ethernet addresses. A
# newer system Wireshark has no manuf file (its table is built in, and of another date: capture/manuf.py reads it
# with tshark -G manuf): there protodump (but no tshark: theirs run with a clean environment) reads the 4.0 root's.
_WS_DATA = Path("usr/share/wireshark")
if not ((SYSTEM_ROOT or Path("/")) / _WS_DATA / "manuf").is_file() and (OTHER_ROOT / _WS_DATA / "manuf").is_file():
    os.environ.setdefault("WIRESHARK_DATA_DIR", str(OTHER_ROOT / _WS_DATA))

# Extra options given to both protodump and tshark for some captures (same syntax on both sides).
VARIANTS = [(name, ()) for name in CAPTURES] + [
    ("blank-port-23456.pcap", ("-d", "udp.port==23456,blank")),
    ("blank-2015.pcap", ("-o", "blank.revision:2015")),
    ("iceball-tcp-spec.pcap", ("-o", "iceball.numbering:spec")),
    ("iceball-tcp-all.pcap", ("-o", "iceball.numbering:spec")),
    ("freeblox-nocontext.pcap", ("-o", "freeblox.ws_port:8765")),
]


def variant_id(variant) -> str:
    name, extra = variant
    return name if not extra else f"{name}[{' '.join(extra)}]"


def golden_commands(name: str) -> dict[str, tuple[str, ...]]:
    """Golden file -> protodump arguments, run in captures/ (the same as tools/make_captures.py --golden)."""
    return {f"{name}.txt": ("-V", name), f"{name}.json": ("-T", "json", name)}


class Run:
    __slots__ = ("stdout", "stderr", "returncode")

    def __init__(self, proc: subprocess.CompletedProcess):
        self.stdout = proc.stdout.decode("utf-8", "replace")
        self.stderr = proc.stderr.decode("utf-8", "replace")
        self.returncode = proc.returncode


class Runner:
    """Runs a command once per distinct argument list (cwd: captures/) and keeps the result."""

    def __init__(self, prefix: list[str]):
        self.prefix = prefix
        self.cache: dict[tuple, Run] = {}

    def __call__(self, *args: str, cwd: Path = CAPTURES_DIR) -> Run:
        key = (str(cwd), *args)
        if key not in self.cache:
            self.cache[key] = Run(subprocess.run([*self.prefix, *args], cwd=cwd, capture_output=True,
                                                 timeout=600))
        return self.cache[key]


@pytest.fixture(scope="session")
def protodump_run() -> Runner:
    return Runner(PROTODUMP)


class Tshark:
    """tshark as the tests run it, the same way on every machine: as an unprivileged user when we are root
    (Wireshark >= 4.2 runs no Lua as root), with an empty personal configuration (a private HOME, XDG dirs and
    WIRESHARK_CONFIG_DIR: an installed copy of the plugin cannot mask the file under test), optionally inside
    another root (`chroot`: the Debian 13 tshark 4.4). Every file argument (`-r F`, `lua_script:F`, a bare path)
    is copied into a private directory that user can read; `-w F` is written there and copied back."""

    def __init__(self, root: Path | None = None):
        self.root = root
        base = Path(root) / "tmp" if root else Path(tempfile.gettempdir())
        self.dir = Path(tempfile.mkdtemp(prefix="protodump-tshark-", dir=base))
        (self.dir / "home").mkdir()
        (self.dir / "files").mkdir()
        self.staged: dict[tuple, str] = {}
        self.unprivileged = os.geteuid() == 0
        if self.unprivileged:
            for d in (self.dir, self.dir / "home", self.dir / "files"):
                os.chown(d, NOBODY, NOBODY)
        self.dir.chmod(0o755)

    def inside(self, path: Path) -> str:
        """The path as tshark sees it (inside the chroot)."""
        return "/" + str(path.relative_to(self.root)) if self.root else str(path)

    def stage(self, path: Path) -> str:
        st = path.stat()
        key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
        if key not in self.staged:
            target = self.dir / "files" / f"{len(self.staged)}-{path.name}"
            shutil.copyfile(path, target)
            target.chmod(0o644)
            self.staged[key] = self.inside(target)
        return self.staged[key]

    def command(self, args, cwd: Path = CAPTURES_DIR) -> tuple[list[str], list[tuple[str, Path]]]:
        """The argument list to run and the (staged, real) output files to copy back."""
        out, copy_back, prev = [], [], None
        for a in args:
            a = str(a)
            if a.startswith("lua_script:") and (cwd / a[11:]).is_file():
                a = "lua_script:" + self.stage(cwd / a[11:])
            elif prev == "-w":
                staged = self.dir / "files" / f"out-{len(copy_back)}-{Path(a).name}"
                copy_back.append((staged, cwd / a))
                a = self.inside(staged)
            elif not a.startswith("-") and (cwd / a).is_file():
                a = self.stage(cwd / a)
            out.append(a)
            prev = a
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "HOME": self.inside(self.dir / "home"),
               "XDG_CONFIG_HOME": self.inside(self.dir / "home" / ".config"),
               "XDG_DATA_HOME": self.inside(self.dir / "home" / ".local" / "share"),
               "WIRESHARK_CONFIG_DIR": self.inside(self.dir / "home" / "wireshark")}
        cmd = ["env", "-i", *(f"{k}={v}" for k, v in env.items()), "tshark", *out]
        if self.unprivileged:
            cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *cmd]
        if self.root:
            cmd = ["chroot", str(self.root), *cmd]
        return cmd, copy_back

    def run(self, args, cwd: Path = CAPTURES_DIR, timeout: float = 600, **kw) -> subprocess.CompletedProcess:
        cmd, copy_back = self.command(args, cwd)
        proc = subprocess.run(cmd, cwd=self.dir, capture_output=True, timeout=timeout, **kw)
        for staged, real in copy_back:
            if staged.exists():
                shutil.copyfile(staged, real)
        return proc

    def check_plugin(self) -> None:
        """The plugin loads in this tshark: no load error and every game protocol registered."""
        proc = self.run(["-G", "protocols", "-X", f"lua_script:{PLUGIN}"], cwd=ROOT)
        text = proc.stdout.decode("utf-8", "replace")
        names = {line.split("\t")[2] for line in text.splitlines() if line.count("\t") >= 2}
        missing = [p for p in PLUGIN_PROTOCOLS if p not in names]
        err = LUA_ERROR.search(proc.stderr.decode("utf-8", "replace"))
        if missing or err or proc.returncode:
            raise RuntimeError(f"the plugin does not load in {self}: missing {missing}; "
                               f"stderr: {proc.stderr.decode('utf-8', 'replace')[-2000:]}")

    def version(self) -> str:
        return self.run(["--version"]).stdout.decode().split("\n")[0]

    def __repr__(self):
        return f"tshark{' in ' + str(self.root) if self.root else ''}"


def tshark_available(root: Path | None = None) -> bool:
    if root is None:
        return TSHARK is not None
    return (root / "usr" / "bin" / "tshark").exists() and os.geteuid() == 0


class TsharkRunner(Runner):
    """Runner for tshark with the plugin (cached like protodump's): a run whose output shows that the plugin
    failed to load or raised fails the test that asked for it."""

    def __init__(self, tshark: Tshark):
        super().__init__([])
        self.tshark = tshark

    def __call__(self, *args: str, cwd: Path = CAPTURES_DIR) -> Run:
        key = (str(cwd), *args)
        if key not in self.cache:
            run = Run(self.tshark.run(["-X", f"lua_script:{PLUGIN}", *args], cwd=cwd))
            for where, text in (("stderr", run.stderr), ("output", run.stdout)):
                m = LUA_ERROR.search(text)
                if m:
                    pytest.fail(f"{self.tshark} {' '.join(args)}: Lua error or load failure in its {where}: "
                                f"{text[max(0, m.start() - 400):m.end() + 400]}", pytrace=False)
            self.cache[key] = run
        return self.cache[key]


def _tshark_session(root: Path | None) -> Tshark:
    if not tshark_available(root):
        pytest.skip(f"no tshark{' in ' + str(root) if root else ' on PATH'}")
    t = Tshark(root)
    t.check_plugin()
    return t


@pytest.fixture(scope="session")
def system_tshark() -> Tshark:
    return _tshark_session(SYSTEM_ROOT)


@pytest.fixture(scope="session")
def other_tshark(system_tshark) -> Tshark:
    """The tshark of the cached other Debian root (skipped where there is none, or when it is the system's
    version)."""
    other = _tshark_session(OTHER_ROOT)
    def number(t):
        m = re.search(r"\d+\.\d+\.\d+", t.version())
        return m.group(0) if m else t.version()
    if number(other) == number(system_tshark):
        pytest.skip(f"{OTHER_ROOT} has the system's {system_tshark.version()}")
    return other


@pytest.fixture(scope="session")
def tshark_run(system_tshark) -> Runner:
    return TsharkRunner(system_tshark)


@pytest.fixture(scope="session")
def other_run(other_tshark) -> Runner:
    return TsharkRunner(other_tshark)


@pytest.fixture(scope="session")
def standard_run(request, system_tshark) -> Runner:
    """tshark 4.0, whose standard layers (frame, eth, ip, tcp, ...) protodump follows byte for byte
    (docs/tshark-formats.md): the system's, or on a machine with a newer Wireshark the other root's (Debian 12's,
    which tools/test.sh builds there). Skipped where neither is 4.0: later versions print those layers otherwise."""
    if " 4.0." in system_tshark.version():
        return request.getfixturevalue("tshark_run")
    other = request.getfixturevalue("other_tshark")
    if " 4.0." in other.version():
        return request.getfixturevalue("other_run")
    pytest.skip(f"no tshark 4.0 here ({system_tshark.version()}; {other.version()}): protodump's standard layers "
                "are tshark 4.0's")


def tshark_cmd_run(args, **kw) -> subprocess.CompletedProcess:
    """One tshark run the tests' way (unprivileged, clean configuration), for tests outside the fixtures."""
    global _SHARED
    if _SHARED is None:
        _SHARED = Tshark(None)
    return _SHARED.run(args, cwd=kw.pop("cwd", Path.cwd()), **kw)


_SHARED: Tshark | None = None


# --- JSON helpers ---------------------------------------------------------------------------------------------------

def pairs(text: str):
    """Parse tshark-style JSON keeping duplicate keys and their order: objects become lists of (key, value)."""
    return json.loads(text, object_pairs_hook=lambda kv: [(k, v) for k, v in kv])


def get(obj, key):
    for k, v in obj:
        if k == key:
            return v
    return None


def packet_layers(text: str) -> list:
    """Per packet: the (key, value) list of _source.layers."""
    return [get(get(p, "_source"), "layers") for p in pairs(text)]


def layer_of(layers, proto: str):
    found = layers_of(layers, proto)
    assert len(found) <= 1, f"{len(found)} {proto} layers in one packet"
    return found[0] if found else None


def layers_of(layers, proto: str) -> list:
    """Every layer named `proto` of one packet, in order (a frame may carry several: PDUs of one segment)."""
    return [v for k, v in layers if k == proto]


_PACKET_START = re.compile(r"^  \{$", re.M)


def raw_layers(text: str, proto: str) -> list[str | None]:
    """Per packet: the raw JSON text of the layers `proto` (from the first key line to the last one's closing
    brace, joined by newlines), or None. tshark and protodump both indent layers by 8 spaces."""
    out = []
    starts = [m.start() for m in _PACKET_START.finditer(text)]
    for i, start in enumerate(starts):
        chunk = text[start:starts[i + 1] if i + 1 < len(starts) else len(text)]
        found = []
        for m in re.finditer(rf'^        "{re.escape(proto)}": ', chunk, re.M):
            rest = chunk[m.start():]
            first = rest.split("\n", 1)[0]
            if not first.rstrip().endswith("{"):           # a layer without children: one line
                found.append(first.rstrip().rstrip(","))
                continue
            end = re.search(r"^        \}", rest, re.M)
            found.append(rest[:end.end()] if end else rest)
        out.append("\n".join(found) if found else None)
    return out


def exchanges_pcap(path, exchanges, client: str = "10.0.0.1", server: str = "10.0.0.9", dport: int = 8765) -> None:
    """A pcap of TCP connections 10 ms a packet apart, each a handshake, one request and its answer:
    `exchanges` [(client port, request bytes, response bytes)] (made HTTP upgrades and refusals)."""
    from scapy.all import IP, TCP, Ether, wrpcap
    packets, clock = [], [1_700_000_000.0]
    for sport, request, response in exchanges:
        seq = {client: 1000, server: 5000}

        def send(src, dst, sp, dp, flags, data=b""):
            clock[0] += 0.01
            p = Ether() / IP(src=src, dst=dst) / TCP(sport=sp, dport=dp, flags=flags, seq=seq[src],
                                                     ack=seq[dst]) / data
            p.time = clock[0]
            packets.append(p)
            seq[src] += len(data) + (1 if "S" in flags else 0)
        send(client, server, sport, dport, "S")
        send(server, client, dport, sport, "SA")
        send(client, server, sport, dport, "A")
        send(client, server, sport, dport, "PA", request)
        send(server, client, dport, sport, "PA", response)
    wrpcap(str(path), packets)
