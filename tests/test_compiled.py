"""The compiled hot path (protodump/compiled.py, setup.py): a wheel built by pip carries every hot module compiled
and gives byte for byte the pure-Python output; a build without a C compiler, with PROTODUMP_BUILD_PURE or
editable is pure and works; a compiled module is used only for the exact source (and .pxd) it was built from, and
never with PROTODUMP_PURE."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from protodump import compiled, hot_path

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "captures"


def _builder() -> str | None:
    """A Python that can build: this one with Cython 3, or the venv tools/test.sh makes for it
    (PROTODUMP_CYTHON_PYTHON; pyenet's metadata keeps Cython 3 out of the test interpreter itself)."""
    other = os.environ.get("PROTODUMP_CYTHON_PYTHON")
    if other and Path(other).exists():
        return other
    try:
        import Cython
    except ImportError:
        return None
    return sys.executable if int(Cython.__version__.split(".")[0]) >= 3 else None


BUILDER = _builder()
needs_cython = pytest.mark.skipif(BUILDER is None, reason="Cython >= 3 not installed (the pure-Python path is used)")


def _run(code: str, env: dict, cwd: Path, python: str = sys.executable) -> str:
    return subprocess.run([python, "-c", code], env=env, cwd=cwd, capture_output=True, text=True,
                          check=True).stdout


def test_no_cache_no_finder(tmp_path, monkeypatch):
    """Without a built cache nothing is installed (no hashing at start-up); PROTODUMP_PURE wins over a cache."""
    monkeypatch.setenv("PROTODUMP_COMPILED", str(tmp_path / "none"))
    monkeypatch.delenv("PROTODUMP_PURE", raising=False)
    assert hot_path.install() is None
    hot_path.cache_dir().mkdir(parents=True)
    monkeypatch.setenv("PROTODUMP_PURE", "1")
    assert hot_path.install() is None


def test_name_follows_the_source(tmp_path):
    """A compiled module's file is named by its source's hash: any edit gives another name."""
    src = tmp_path / "m.py"
    src.write_text("X = 1\n")
    first = hot_path.compiled_path(tmp_path, "m", str(src))
    src.write_text("X = 2\n")
    assert hot_path.compiled_path(tmp_path, "m", str(src)) != first
    src.write_text("X = 1\n")
    assert hot_path.compiled_path(tmp_path, "m", str(src)) == first


def test_broken_build_loads_the_source(tmp_path):
    """A compiled file that cannot load (corrupt, or built for another machine) falls back to the module's source."""
    pkg = tmp_path / "src"
    pkg.mkdir()
    (pkg / "probe_hot.py").write_text("def answer():\n    return 'source'\n")
    cache = tmp_path / "cache"
    env = {**os.environ, "PROTODUMP_COMPILED": str(cache), "PYTHONPATH": str(pkg)}
    env.pop("PROTODUMP_PURE", None)
    prelude = "from protodump import hot_path; hot_path.HOT = hot_path.HOT + ('probe_hot',); "
    where = _run(prelude + "print(hot_path.cache_dir())", env, tmp_path).strip()
    Path(where).mkdir(parents=True)
    hot_path.compiled_path(Path(where), "probe_hot", str(pkg / "probe_hot.py")).write_bytes(b"\x7fELF garbage")
    load = prelude + ("f = hot_path.install(); import probe_hot; "
                      "print(probe_hot.answer(), probe_hot.__file__.endswith('.py'), f.loaded)")
    assert _run(load, env, tmp_path).split() == ["source", "True", "['probe_hot']"]


@needs_cython
def test_stale_build_is_never_loaded(tmp_path):
    """A module built, then edited: the edited source is imported, not the build of the old one."""
    pkg = tmp_path / "src"
    pkg.mkdir()
    (pkg / "probe_hot.py").write_text("def answer():\n    return 'built'\n")
    env = {**os.environ, "PROTODUMP_COMPILED": str(tmp_path / "cache"), "PYTHONPATH": str(pkg),
           "PROTODUMP_PURE": "1"}
    prelude = ("import sys; from protodump import compiled, hot_path; "
               "hot_path.HOT = compiled.HOT = hot_path.HOT + ('probe_hot',); ")
    _run(prelude + "compiled.build(['probe_hot'])", env, tmp_path, BUILDER)
    env.pop("PROTODUMP_PURE")
    load = prelude + ("hot_path.install(); import probe_hot; "
                      "print(probe_hot.answer(), probe_hot.__file__.endswith('.py'))")
    assert _run(load, env, tmp_path).split() == ["built", "False"]        # the compiled module
    (pkg / "probe_hot.py").write_text("def answer():\n    return 'edited'\n")
    assert _run(load, env, tmp_path).split() == ["edited", "True"]        # the source, not the stale build


def test_pxd_is_part_of_the_name(tmp_path):
    """A module typed by a .pxd: editing (or adding, or removing) the .pxd names another compiled form."""
    src = tmp_path / "m.py"
    src.write_text("X = 1\n")
    bare = hot_path.compiled_path(tmp_path, "m", str(src))
    (tmp_path / "m.pxd").write_text("cdef int X\n")
    typed = hot_path.compiled_path(tmp_path, "m", str(src))
    (tmp_path / "m.pxd").write_text("cdef long X\n")
    assert len({bare, typed, hot_path.compiled_path(tmp_path, "m", str(src))}) == 3
    (tmp_path / "m.pxd").unlink()
    assert hot_path.compiled_path(tmp_path, "m", str(src)) == bare


def test_search_order(tmp_path, monkeypatch):
    """PROTODUMP_COMPILED alone when set; else the wheel's build first, then the user's cache."""
    monkeypatch.setenv("PROTODUMP_COMPILED", str(tmp_path))
    assert hot_path.search_dirs() == [tmp_path / hot_path.platform_tag()]
    monkeypatch.delenv("PROTODUMP_COMPILED")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hot_path.search_dirs() == [hot_path.bundled_dir(),
                                      tmp_path / "xdg" / "protodump" / "compiled" / hot_path.platform_tag()]
    assert hot_path.bundled_dir().parent == Path(hot_path.__file__).resolve().parent / "_compiled"


# --- the wheel pip builds ------------------------------------------------------------------------------------------

def _source_tree(dest: Path) -> Path:
    """What a build reads (pyproject.toml's packages, setup.py, README.md), copied: builds leave the checkout alone."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    dest.mkdir(parents=True)
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, dest / name)
    skip = shutil.ignore_patterns("__pycache__", "*.so", "_compiled", "build")
    for folder in sorted(set(config["tool"]["setuptools"]["package-dir"].values())):
        if not (dest / folder).exists():
            shutil.copytree(ROOT / folder, dest / folder, ignore=skip)
    return dest


def _pip_wheel(src: Path, out: Path, env: dict | None = None) -> Path:
    """`pip wheel` of `src` with pip's build isolation (setuptools and Cython 3 from the index); skip when the
    build requirements cannot be had (no network)."""
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)],
                          env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=900)
    if proc.returncode and "installing build dependencies" in (proc.stdout + proc.stderr).lower():
        pytest.skip(f"no build requirements (network?): {proc.stderr.strip()[-300:]}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = out.glob("protodump-*.whl")
    return wheel


def _install(wheel: Path, target: Path) -> dict:
    """The wheel unpacked into `target` as pip installs it; the environment that imports it from there."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target",
                    str(target), str(wheel)], check=True, capture_output=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROTODUMP_")}
    return {**env, "PYTHONPATH": str(target), "XDG_CACHE_HOME": str(target.parent / "no-cache")}


def _protodump(env: dict, *args: str, **extra) -> bytes:
    return subprocess.run([sys.executable, "-c", "from protodump.cli.main import main; main()", *args],
                          env={**env, **extra}, cwd=env["PYTHONPATH"], capture_output=True, check=True).stdout


def _status(env: dict, **extra) -> list[list[str]]:
    out = subprocess.run([sys.executable, "-m", "protodump.compiled", "status"], env={**env, **extra},
                         cwd=env["PYTHONPATH"], capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines()]


@pytest.fixture(scope="module")
def compiled_install(tmp_path_factory):
    """`pip wheel .` (the build `pip install .` makes), installed into a folder of its own."""
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler: the wheel would be pure Python")
    tmp = tmp_path_factory.mktemp("wheel")
    wheel = _pip_wheel(_source_tree(tmp / "src"), tmp / "dist")
    return wheel, _install(wheel, tmp / "site")


def test_wheel_carries_every_hot_module(compiled_install):
    """One compiled module per hot module, for this Python and machine, and the .pxd its name hashes."""
    wheel, env = compiled_install
    assert "-none-any" not in wheel.name and "-cp3" in wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    folder, suffix = f"protodump/{hot_path.BUNDLED}/{hot_path.platform_tag()}/", EXTENSION_SUFFIXES[0]
    built = {n[len(folder):-len(suffix)].rsplit(".", 1)[0] for n in names if n.startswith(folder)}
    assert built == set(hot_path.HOT)
    assert "protodump/engine/rangecoder.pxd" in names
    assert not [n for n in names if n.endswith((".c", ".so")) and f"/{hot_path.BUNDLED}/" not in n]


def test_installed_wheel_loads_compiled_and_decodes_the_same(compiled_install):
    """Installed, every hot module loads from the wheel's build (status); -V, the summary and -T json are byte for
    byte those of the same install with PROTODUMP_PURE=1, on TCP, WebSocket and ENet (the range decoder in
    Python, compiled: PROTODUMP_RANGECODER=python)."""
    _, env = compiled_install
    where = subprocess.run([sys.executable, "-c", "import protodump; print(protodump.__file__)"], env=env,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(env["PYTHONPATH"])
    status = _status(env)
    assert [line[:2] for line in status] == [["compiled", "bundled"]] * len(hot_path.HOT)
    assert [line[-1] for line in status] == list(hot_path.HOT)
    assert {line[0] for line in _status(env, PROTODUMP_PURE="1")} == {"python"}
    for capture in ("rutentoy-messages.pcap", "freeblox-fragments.pcap", "iceball-enet-session.pcap"):
        for args in (["-V"], [], ["-T", "json"]):
            fast, pure = (_protodump(env, *args, "-c", "400", str(CAPTURES / capture), PROTODUMP_RANGECODER="python",
                                     **flag) for flag in ({}, {"PROTODUMP_PURE": "1"}))
            assert fast == pure and fast, (capture, args)


RANGECODER_SAME = r"""
import importlib.util, random, sys
import protodump.engine.rangecoder as fast
assert fast.__file__.endswith(".so"), fast.__file__
spec = importlib.util.spec_from_file_location("pure_rangecoder", fast.__file__.split("/_compiled/")[0]
                                              + "/engine/rangecoder.py")
pure = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pure)

def answer(module, data, limit):
    try:
        return module.decompress_python(data, limit)
    except Exception as exc:
        return type(exc).__name__, str(exc)

rnd = random.Random(int(sys.argv[1]))
cases = 0
for _ in range(60):
    text = bytes(rnd.choice(b"\x00\x01\x02abc player moved ") for _ in range(rnd.randrange(1, 2500)))
    packed = pure.compress(text)
    flipped = bytearray(packed)
    for _ in range(rnd.randrange(1, 5)):
        flipped[rnd.randrange(len(flipped))] = rnd.randrange(256)
    noise = bytes(rnd.randrange(256) for _ in range(rnd.randrange(64)))
    for data in (packed, bytes(flipped), noise, packed[:rnd.randrange(len(packed) + 1)]):
        for limit in (4096, len(text), len(text) - 1, 0, -1, 2**70, 7.0, None):
            for form in (data, bytearray(data), memoryview(data)):
                cases += 1
                assert answer(fast, form, limit) == answer(pure, form, limit), (data.hex(), limit)
    assert pure.decompress_python(packed, 4096) == text
print(cases)
"""


def test_typed_range_decoder_is_the_python_one(compiled_install):
    """The range decoder compiled with its .pxd's C types: the same bytes, and the same error (type and message),
    as its Python source on valid, damaged, cut and random input, any limit, any buffer type."""
    _, env = compiled_install
    out = subprocess.run([sys.executable, "-c", RANGECODER_SAME, "7"], env=env, cwd=env["PYTHONPATH"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout) > 5_000


NO_CYCLES = r"""
import sys
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from no_cycles import cycles_left
print(cycles_left(sorted(Path(sys.argv[1]).glob("*.pcap"))))
"""


def test_compiled_decode_forms_no_reference_cycle(compiled_install):
    """test_bounded's no-cycle rule, compiled: Cython gives all of a function's inner functions one shared closure
    scope that holds them (a lambda in the read loop's generator, deflate_walk's helpers), a cycle that would keep
    a decode's state, and its reassembly budget, alive while the read loop runs with the collector off."""
    _, env = compiled_install
    out = subprocess.run([sys.executable, "-c", NO_CYCLES, str(CAPTURES), str(ROOT / "tests")], env=env,
                         cwd=env["PYTHONPATH"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "{}"


@pytest.mark.parametrize("why", [{"CC": "false"}, {"PROTODUMP_BUILD_PURE": "1"}], ids=["no-compiler", "asked"])
def test_pure_wheel_works(tmp_path, why):
    """No working C compiler (CC=false), or PROTODUMP_BUILD_PURE=1: a pure-Python wheel, which decodes."""
    wheel = _pip_wheel(_source_tree(tmp_path / "src"), tmp_path / "dist", why)
    assert wheel.name.endswith("-py3-none-any.whl")
    assert not [n for n in zipfile.ZipFile(wheel).namelist() if f"/{hot_path.BUNDLED}/" in n or n.endswith(".so")]
    env = _install(wheel, tmp_path / "site")
    assert {line[0] for line in _status(env)} == {"python"}
    assert _protodump(env, "-c", "5", str(CAPTURES / "rutentoy-messages.pcap")).count(b"\n") == 5


def test_editable_install_compiles_nothing(tmp_path):
    """`pip install -e .` builds no compiled module and writes none beside the sources."""
    src = _source_tree(tmp_path / "src")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                           "--no-deps", "-q", "-e", str(src)], capture_output=True, text=True, timeout=900)
    if proc.returncode and "installing build dependencies" in (proc.stdout + proc.stderr).lower():
        pytest.skip(f"no build requirements (network?): {proc.stderr.strip()[-300:]}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not [p for p in src.rglob("*") if p.suffix in (".so", ".c") or p.name == hot_path.BUNDLED]
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import protodump; print(protodump.__file__)"],
                          capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert site.startswith(str(src / "api"))
