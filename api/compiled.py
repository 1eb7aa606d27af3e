"""An optional compiled hot path: protodump's hottest pure-Python modules compiled by Cython, used only when their
compiled form was built from the very source beside it.

The per-frame work (decode, TCP analysis, the game dissection, the -V and summary writers) is pure Python; Cython
compiles those modules unchanged (no annotations read, no `cdef`), which takes about an eighth off a -V run and a
fifth off a summary run. Nothing depends on it: without a build, or without Cython, protodump is the same
pure-Python package, and the outputs are byte for byte the same either way (tests/test_compiled.py).

The compiled modules never sit beside the sources (an editable install would import a stale `.so` instead of an
edited `.py`). They live in a cache, `~/.cache/protodump/compiled/<python tag>/` (PROTODUMP_COMPILED=DIR moves
it), each named by its module and a hash of the source it was built from. At import, a finder hashes a hot
module's source and loads the compiled one only if its hash matches; an edited source is imported as Python until
the next build. PROTODUMP_PURE=1 turns the compiled modules off.

    python -m protodump.compiled build      # compile HOT into the cache (needs Cython >= 3 and a C compiler)
    python -m protodump.compiled status     # which hot modules would load compiled
"""
from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

# the modules a Rutentoy/Iceball/Freeblox -V or summary run spends its per-frame time in (cProfile)
HOT = (
    "protodump.session",
    "protodump.capture.clock", "protodump.capture.decode", "protodump.capture.link", "protodump.capture.network",
    "protodump.capture.pcapfile", "protodump.capture.tcp_analysis",
    "protodump.capture.layers.common", "protodump.capture.layers.eth", "protodump.capture.layers.frame",
    "protodump.capture.layers.ip", "protodump.capture.layers.tcp", "protodump.capture.layers.tcp_info",
    "protodump.engine.blocks_bits", "protodump.engine.blocks_cookies", "protodump.engine.context",
    "protodump.engine.dispatch", "protodump.engine.fields", "protodump.engine.lifetime",
    "protodump.engine.stream_protocol", "protodump.engine.streams", "protodump.engine.template",
    "protodump.engine.tree",
    "protodump.output.text",
    "protodump.reassembly.tcp",
)
# Cython 3, compiling the modules as Python: annotations are documentation here, never C types
DIRECTIVES = {"language_level": 3, "binding": True, "annotation_typing": False}


def cache_dir() -> Path:
    """This interpreter's directory of compiled modules (one per Python version and machine)."""
    root = os.environ.get("PROTODUMP_COMPILED")
    if root is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "protodump", "compiled")
    return Path(root) / f"{sys.implementation.cache_tag}-{sys.platform}-{os.uname().machine}"


def source_hash(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:20]


def compiled_path(directory: Path, name: str, source: str) -> Path:
    """Where the compiled form of module `name` built from `source` (a .py path) lives."""
    return directory / f"{name}.{source_hash(source)}{importlib.machinery.EXTENSION_SUFFIXES[0]}"


class CompiledFinder(importlib.abc.MetaPathFinder):
    """Finds a hot module's source as the other finders do, then its compiled form for that exact source."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.loaded: list[str] = []

    def find_spec(self, name, path=None, target=None):
        if name not in HOT:
            return None
        spec = None
        for finder in sys.meta_path:
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            return spec
        try:
            so = compiled_path(self.directory, name, spec.origin)
        except OSError:
            return spec
        if not so.is_file():
            return spec                 # not built, or built from another version of the source
        self.loaded.append(name)
        return importlib.util.spec_from_file_location(
            name, so, loader=importlib.machinery.ExtensionFileLoader(name, str(so)),
            submodule_search_locations=spec.submodule_search_locations)


def install() -> CompiledFinder | None:
    """Put the finder first on sys.meta_path when a cache exists (nothing is done, nothing is hashed, otherwise)."""
    if os.environ.get("PROTODUMP_PURE"):
        return None
    directory = cache_dir()
    if not directory.is_dir():
        return None
    for finder in sys.meta_path:
        if isinstance(finder, CompiledFinder):
            return finder
    finder = CompiledFinder(directory)
    sys.meta_path.insert(0, finder)
    return finder


def build(names=HOT, directory: Path | None = None, quiet: bool = True) -> list[str]:
    """Compile `names` (their current sources) into `directory` (default: cache_dir()); the compiled forms of
    older sources of those modules are removed. Returns the names built. Raises ImportError without Cython 3.
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
        sources[name] = spec.origin, bool(spec.submodule_search_locations)
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
        if spec is not None:
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
            # Cython fails now and then on a module this process loaded compiled: build from a pure process
            import subprocess
            return subprocess.call([sys.executable, "-m", "protodump.compiled", *args],
                                   env={**os.environ, "PROTODUMP_PURE": "1"})
        try:
            built = build(quiet=True)
        except ImportError as exc:
            print(f"protodump.compiled: not built: {exc}", file=sys.stderr)
            return 1
        print(f"{len(built)} modules compiled into {cache_dir()}")
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
