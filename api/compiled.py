"""The compiled hot path: the pure-Python modules listed in hot_path.HOT compiled by Cython, used only when their
compiled form was built from the very source beside it.

Only modules typed for Cython are listed: the ENet range decoder (engine/rangecoder.py), typed without a change to
its Python by the `.pxd` beside it (Cython's pure-Python mode), which the build copies with it; compiled, it is
3x faster. The per-frame modules (decode, TCP analysis, the game dissection, the writers) were listed too, compiled
unchanged: with their bytecode cached they ran 14-30 % slower than under CPython 3.11 (docs/benchmarks.md), so they
are not. Nothing depends on the compiled modules: without them protodump is the same pure-Python package, and the
outputs are byte for byte the same either way (tests/test_compiled.py).

`pip install .` builds them (setup.py, with Cython 3 from the build requirements) into the wheel, under
`protodump/_compiled/<tag>/`; without a C compiler, or with PROTODUMP_BUILD_PURE=1, the wheel is pure Python. An
editable install (`pip install -e .`) compiles nothing: the command below builds them into a cache outside the
source tree (a `.so` beside an edited `.py` would hide the edit), `~/.cache/protodump/compiled/<tag>/`
(PROTODUMP_COMPILED=DIR moves it). Each compiled module is named by its module and a hash of the source (and
`.pxd`) it was built from; at import, a finder (hot_path.py) hashes a hot module's source and loads a compiled one
only if its hash matches, so an edited source is imported as Python until the next build. PROTODUMP_PURE=1 turns
the compiled modules off.

    python -m protodump.compiled build      # compile HOT into the cache (pip install 'protodump[fast]', a C compiler)
    python -m protodump.compiled status     # where each hot module loads from
"""
from __future__ import annotations

import importlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from .hot_path import (BUNDLED, HOT, CompiledFinder, bundled_dir, cache_dir, compiled_path, find_compiled,  # noqa: F401
                       platform_tag, search_dirs)

# Cython 3, compiling the modules as Python: annotations are documentation here, never C types
DIRECTIVES = {"language_level": 3, "binding": True, "annotation_typing": False}
# The C compiler's time is the build's (Cython itself takes seconds): -O1 compiles in under half the time of
# Python's own -O3 (a `pip install .` of about a minute on two cores instead of three) for the same speed of this
# code, which is calls into CPython (tools/bench.py); no debug information (-g0), which nobody steps through here.
CFLAGS = ["-O1", "-g0"]


def build(names=HOT, directory: Path | None = None, quiet: bool = True, force: bool = False,
          jobs: int | None = None) -> list[str]:
    """Compile `names` (their current sources) into `directory` (default: cache_dir()); the compiled forms of
    older sources of those modules are removed; those already built from their current source (in `directory`, or
    by default anywhere the finder looks, the wheel's build included) are kept (`force`: rebuilt). Returns the
    names built. Raises ImportError without Cython 3, RuntimeError without a working C compiler.
    Run it where no hot module was loaded compiled (PROTODUMP_PURE=1, as `main` does)."""
    look = [directory] if directory else search_dirs()
    directory = directory or cache_dir()
    sources = {}
    for name in names:
        spec = _source_spec(name)
        if force or find_compiled(look, name, spec.origin) is None:
            sources[name] = spec.origin, bool(spec.submodule_search_locations)
    if sources:
        build_sources(sources, directory, quiet=quiet, jobs=jobs)
    return list(sources)


def build_sources(sources: dict[str, tuple[str, bool]], directory: Path, quiet: bool = True,
                  jobs: int | None = None) -> None:
    """Compile each module `name: (its .py, whether it is a package's __init__)` into `directory`, named by the
    hash of its source (compiled_path), over `jobs` processes (default: every core). Also setup.py's build of a
    wheel, which loads this module on its own: only the standard library and hot_path may be imported here.
    Raises ImportError without Cython 3, RuntimeError without a working C compiler (found before Cython spends a
    minute), and Cython's or the compiler's error on a failed build; `directory` then holds no half build."""
    import Cython
    if int(Cython.__version__.split(".")[0]) < 3:
        raise ImportError(f"Cython >= 3 is needed (found {Cython.__version__})")
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension

    jobs = jobs or os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="protodump-compiled-") as tmp:
        tree = Path(tmp) / "src"
        exts = []
        for name, (origin, is_package) in sources.items():
            # the package layout Cython reads the full module name from (api/ is `protodump`, and so on)
            rel = Path(*name.split(".")) / "__init__.py" if is_package else Path(*name.split(".")).with_suffix(".py")
            target = tree / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            for parent in target.relative_to(tree).parents:
                init = tree / parent / "__init__.py"
                if parent != Path(".") and not init.exists():
                    init.touch()
            shutil.copyfile(origin, target)
            if os.path.exists(origin[:-3] + ".pxd"):            # the module's Cython typing (pure-Python mode)
                shutil.copyfile(origin[:-3] + ".pxd", target.with_suffix(".pxd"))
            exts.append(Extension(name, [str(target)], extra_compile_args=CFLAGS))
        _check_compiler(Path(tmp))
        dist = Distribution({"ext_modules": cythonize(exts, compiler_directives=DIRECTIVES, quiet=quiet,
                                                      nthreads=jobs if jobs > 1 else 0)})
        cmd = _build_ext(dist, Path(tmp))
        cmd.parallel = jobs
        cmd.run()
        directory.mkdir(parents=True, exist_ok=True)
        for name, (origin, _) in sources.items():
            built = Path(cmd.get_ext_fullpath(name))
            for old in directory.glob(f"{name}.*"):
                old.unlink()
            shutil.copyfile(built, compiled_path(directory, name, origin))


def _build_ext(dist, tmp: Path):
    cmd = dist.get_command_obj("build_ext")
    cmd.build_lib, cmd.build_temp = str(tmp / "lib"), str(tmp / "temp")
    cmd.ensure_finalized()
    return cmd


def _check_compiler(tmp: Path) -> None:
    """Build one empty extension module, as the real ones will be built: RuntimeError if the C compiler fails."""
    from setuptools import Distribution, Extension

    probe = tmp / "probe" / "_protodump_probe.c"
    probe.parent.mkdir()
    probe.write_text("#include <Python.h>\nPyMODINIT_FUNC PyInit__protodump_probe(void) { return NULL; }\n")
    cmd = _build_ext(Distribution({"ext_modules": [Extension("_protodump_probe", [str(probe)])]}), tmp / "probe")
    try:
        cmd.run()
    except Exception as exc:        # distutils' CompileError, LinkError, DistutilsExecError...
        raise RuntimeError(f"no working C compiler ({exc})") from exc


def _source_spec(name: str):
    """A module's source spec, found without the compiled finder."""
    finders = [f for f in sys.meta_path if not isinstance(f, CompiledFinder)]
    parent = name.rpartition(".")[0]
    path = importlib.import_module(parent).__path__ if parent else None
    for finder in finders:
        spec = finder.find_spec(name, path) if hasattr(finder, "find_spec") else None
        if spec is not None and spec.origin and spec.origin.endswith(".py"):
            return spec
    raise ImportError(f"no source for {name}")


def status() -> dict[str, Path | None]:
    """Each hot module: the compiled form of its current source it would load, or None (its Python source)."""
    if os.environ.get("PROTODUMP_PURE"):
        return dict.fromkeys(HOT)
    return _located()


def _located() -> dict[str, Path | None]:
    look = search_dirs()
    return {name: find_compiled(look, name, _source_spec(name).origin) for name in HOT}


def _where(path: Path | None) -> str:
    if path is None:
        return "python  "
    return "compiled  bundled" if path.parent == bundled_dir() else f"compiled  {path.parent}"


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["build"]:
        if not os.environ.get("PROTODUMP_PURE"):
            # built from a process that loaded none of them compiled
            import subprocess
            return subprocess.call([sys.executable, "-m", "protodump.compiled", *args],
                                   env={**os.environ, "PROTODUMP_PURE": "1"})
        try:
            built = build(quiet=True)
        except (ImportError, RuntimeError) as exc:
            print(f"protodump.compiled: not built: {exc}", file=sys.stderr)
            return 1
        bundled = sum(path is not None and path.parent == bundled_dir() for path in _located().values())
        print(f"compiled hot path: {len(built)} modules compiled into {cache_dir()}, {len(HOT) - len(built)} up to "
              f"date ({bundled} in the installed wheel's build)")
        return 0
    if args[:1] == ["status"]:
        state = status()
        for name, path in state.items():
            print(f"{_where(path)}  {name}")
        done = sum(path is not None for path in state.values())
        why = " (PROTODUMP_PURE)" if os.environ.get("PROTODUMP_PURE") else ""
        print(f"{done} of {len(state)} hot modules compiled{why}", file=sys.stderr)
        return 0
    print(__doc__.rsplit("\n\n", 1)[-1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
