"""An optional compiled hot path: protodump's hottest pure-Python modules compiled by Cython, used only when their
compiled form was built from the very source beside it.

The per-frame work (decode, TCP analysis, the game dissection, the -V and summary writers) is pure Python; Cython
compiles those modules unchanged (no annotations read, no `cdef`), which takes about a fifth off a -V run and more
than a quarter off a summary run (tools/bench.py builds it when it can: --compiled). Nothing depends on it: without a build, or without Cython, protodump is the same
pure-Python package, and the outputs are byte for byte the same either way (tests/test_compiled.py).

The compiled modules never sit beside the sources (an editable install would import a stale `.so` instead of an
edited `.py`). They live in a cache, `~/.cache/protodump/compiled/<python tag>/` (PROTODUMP_COMPILED=DIR moves
it), each named by its module and a hash of the source it was built from. At import, a finder hashes a hot
module's source and loads the compiled one only if its hash matches; an edited source is imported as Python until
the next build. PROTODUMP_PURE=1 turns the compiled modules off.

    python -m protodump.compiled build      # compile HOT into the cache (pip install 'protodump[fast]', a C compiler)
    python -m protodump.compiled status     # which hot modules would load compiled
"""
from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

from .hot_path import HOT, CompiledFinder, cache_dir, compiled_path

# Cython 3, compiling the modules as Python: annotations are documentation here, never C types
DIRECTIVES = {"language_level": 3, "binding": True, "annotation_typing": False}


def build(names=HOT, directory: Path | None = None, quiet: bool = True, force: bool = False) -> list[str]:
    """Compile `names` (their current sources) into `directory` (default: cache_dir()); the compiled forms of
    older sources of those modules are removed; those already built from their current source are kept
    (`force`: rebuilt). Returns the names built. Raises ImportError without Cython 3.
    Run it where no hot module was loaded compiled (PROTODUMP_PURE=1, as `main` does)."""
    import shutil
    import tempfile

    import Cython
    if int(Cython.__version__.split(".")[0]) < 3:
        raise ImportError(f"Cython >= 3 is needed (found {Cython.__version__})")
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension

    directory = directory or cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    sources = {}
    for name in names:
        spec = _source_spec(name)
        if force or not compiled_path(directory, name, spec.origin).is_file():     # else up to date
            sources[name] = spec.origin, bool(spec.submodule_search_locations)
    if not sources:
        return []
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
            exts.append(Extension(name, [str(target)]))
        dist = Distribution({"ext_modules": cythonize(exts, compiler_directives=DIRECTIVES, quiet=quiet)})
        cmd = dist.get_command_obj("build_ext")
        cmd.build_lib, cmd.build_temp = str(Path(tmp) / "lib"), str(Path(tmp) / "temp")
        cmd.ensure_finalized()
        cmd.run()
        for name, (origin, _) in sources.items():
            built = Path(cmd.get_ext_fullpath(name))
            for old in directory.glob(f"{name}.*"):
                old.unlink()
            shutil.copyfile(built, compiled_path(directory, name, origin))
    return list(sources)


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


def status(directory: Path | None = None) -> dict[str, bool]:
    """Each hot module: does a compiled form of its current source exist?"""
    directory = directory or cache_dir()
    return {name: compiled_path(directory, name, _source_spec(name).origin).is_file() for name in HOT}


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
        except ImportError as exc:
            print(f"protodump.compiled: not built: {exc}", file=sys.stderr)
            return 1
        print(f"compiled hot path: {len(built)} modules compiled, {len(HOT) - len(built)} up to date, in {cache_dir()}")
        return 0
    if args[:1] == ["status"]:
        state = status()
        for name, ok in state.items():
            print(f"{'compiled' if ok else 'python  '}  {name}")
        return 0
    print(__doc__.rsplit("\n\n", 1)[-1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
