"""The optional compiled hot path (protodump/compiled.py): used only for the exact source it was built from, off
with PROTODUMP_PURE, and the same output as the pure-Python modules."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from protodump import compiled, hot_path

ROOT = Path(__file__).resolve().parent.parent


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


@needs_cython
def test_compiled_output_is_identical(tmp_path):
    """Two hot modules compiled: the -V, summary and JSON of a TCP capture are byte for byte the pure ones."""
    cache = tmp_path / "cache"
    names = ["protodump.capture.layers.common", "protodump.capture.clock"]
    pure = {**os.environ, "PROTODUMP_PURE": "1", "PROTODUMP_COMPILED": str(cache)}
    _run(f"from protodump import compiled; compiled.build({names!r})", pure, ROOT, BUILDER)
    fast = {k: v for k, v in pure.items() if k != "PROTODUMP_PURE"}
    state = _run("from protodump import compiled; print(sorted(n for n, ok in compiled.status().items() if ok))",
                 fast, ROOT)
    assert state.strip() == repr(sorted(names))
    loaded = _run(textwrap.dedent("""
        import protodump.capture.layers.common as c
        print(c.__file__.endswith('.py'))"""), fast, ROOT)
    assert loaded.strip() == "False"
    cap = str(ROOT / "captures" / "rutentoy-messages.pcap")
    for args in (["-V"], [], ["-T", "json"]):
        argv = [sys.executable, "-c", "from protodump.cli.main import main; main()", *args, cap]
        outs = [subprocess.run(argv, env=env, capture_output=True, check=True).stdout for env in (pure, fast)]
        assert outs[0] == outs[1] and outs[0]
