"""The finder of the compiled hot path (protodump/compiled.py builds it): a hot module loads compiled only when a
compiled form of its very source is found. Imported by the package before anything else; it costs nothing when no
compiled module exists.

Where compiled modules are looked for, in order: with PROTODUMP_COMPILED=DIR, that directory alone; else the build
a wheel ships (`protodump/_compiled/<tag>/`, made by setup.py at `pip install .`), then the user's cache
(`~/.cache/protodump/compiled/<tag>/`, made by `python -m protodump.compiled build`). PROTODUMP_PURE=1: none."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path      # the API's paths; the finder itself works on strings (pathlib costs start-up)

# The modules compiled: only those typed for Cython, where compiling pays. The ENet range decoder's Python half
# (typed by engine/rangecoder.pxd; it runs where libenet is missing) decodes 3x faster compiled. The untyped
# per-frame modules were compiled too until 2026-12: measured with their bytecode cached (as any installed package
# has it), Cython's code of them was 14-30 % slower than CPython 3.11's own on every TCP family and mode (its
# specialised attribute and call paths on slotted objects beat Cython's generic ones), so they stay Python
# (docs/benchmarks.md, "the compiled hot path").
HOT = ("protodump.engine.rangecoder",)


# where a wheel's compiled modules sit inside the package (setup.py writes them there)
BUNDLED = "_compiled"


def platform_tag() -> str:
    """One directory of compiled modules per Python version and machine."""
    return f"{sys.implementation.cache_tag}-{sys.platform}-{os.uname().machine}"


def _cache_root() -> str:
    root = os.environ.get("PROTODUMP_COMPILED")
    if root is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "protodump", "compiled")
    return os.path.join(root, platform_tag())


def _bundled_root() -> str:
    return os.path.join(os.path.dirname(os.path.realpath(__file__)), BUNDLED, platform_tag())


def _search_roots() -> list[str]:
    if os.environ.get("PROTODUMP_COMPILED") is not None:
        return [_cache_root()]
    return [_bundled_root(), _cache_root()]


def cache_dir() -> Path:
    """The directory `python -m protodump.compiled build` writes: PROTODUMP_COMPILED, else the user's cache."""
    from pathlib import Path
    return Path(_cache_root())


def bundled_dir() -> Path:
    """The compiled modules an installed wheel carries."""
    from pathlib import Path
    return Path(_bundled_root())


def search_dirs() -> list[Path]:
    """Where compiled modules are looked for, first match wins: PROTODUMP_COMPILED alone when it is set."""
    from pathlib import Path
    return [Path(d) for d in _search_roots()]


def source_hash(path: str) -> str:
    """The hash a compiled module is named by: its .py, and the .pxd beside it (Cython's typing of it) if any.
    (zlib's CRC-32 and Adler-32: it only tells one source from another, and hashlib would load OpenSSL at
    start-up.)"""
    with open(path, "rb") as f:
        data = f.read()
    try:
        with open(path[:-3] + ".pxd", "rb") as f:
            data += b"\0pxd\0" + f.read()
    except OSError:
        pass
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data) & 0xFFFF:04x}"


def _file_name(name: str, source: str) -> str:
    return f"{name}.{source_hash(source)}{importlib.machinery.EXTENSION_SUFFIXES[0]}"


def compiled_path(directory: Path, name: str, source: str) -> Path:
    """Where the compiled form of module `name` built from `source` (a .py path) lives."""
    return directory / _file_name(name, source)


def _find(directories: list[str], name: str, source: str) -> str | None:
    filename = _file_name(name, source)
    for directory in directories:
        path = os.path.join(directory, filename)
        if os.path.isfile(path):
            return path
    return None


def find_compiled(directories: list[Path], name: str, source: str) -> Path | None:
    """The first compiled form of `name` built from `source` in `directories`, or None."""
    from pathlib import Path
    found = _find([str(d) for d in directories], name, source)
    return None if found is None else Path(found)


class CompiledFinder:        # a meta path finder (no importlib.abc base: it would import importlib.resources)
    """Finds a hot module's source as the other finders do, then its compiled form for that exact source."""

    def __init__(self, directories: list[str]):
        self.directories = directories
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
            so = _find(self.directories, name, spec.origin)
        except OSError:
            return spec
        if so is None:
            return spec                 # not built, or built from another version of the source
        self.loaded.append(name)
        return importlib.util.spec_from_file_location(
            name, so, loader=CompiledOrSource(name, so, spec.loader),
            submodule_search_locations=spec.submodule_search_locations)


class CompiledOrSource(importlib.machinery.ExtensionFileLoader):
    """Loads the compiled module; one that cannot load (a corrupt or foreign .so) loads from its source instead."""

    def __init__(self, name: str, path: str, source_loader):
        super().__init__(name, path)
        self.source_loader = source_loader
        self.failed = False

    def create_module(self, spec):
        try:
            return super().create_module(spec)
        except (ImportError, OSError):
            self.failed = True
            return None                 # the default module object, filled from the source below

    def exec_module(self, module):
        if not self.failed:
            return super().exec_module(module)
        module.__file__ = self.source_loader.path
        return self.source_loader.exec_module(module)


def install() -> CompiledFinder | None:
    """Put the finder first on sys.meta_path when a directory of compiled modules exists (nothing is done, nothing
    is hashed, otherwise)."""
    if os.environ.get("PROTODUMP_PURE"):
        return None
    directories = [d for d in _search_roots() if os.path.isdir(d)]
    if not directories:
        return None
    for finder in sys.meta_path:
        if isinstance(finder, CompiledFinder):
            return finder
    finder = CompiledFinder(directories)
    sys.meta_path.insert(0, finder)
    return finder
