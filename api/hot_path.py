"""The finder of the compiled hot path (protodump/compiled.py builds it): a hot module loads compiled only when a
compiled form of its very source is found. Imported by the package before anything else; it costs nothing when no
compiled module exists.

Where compiled modules are looked for, in order: with PROTODUMP_COMPILED=DIR, that directory alone; else the build
a wheel ships (`protodump/_compiled/<tag>/`, made by setup.py at `pip install .`), then the user's cache
(`~/.cache/protodump/compiled/<tag>/`, made by `python -m protodump.compiled build`). PROTODUMP_PURE=1: none."""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

# the modules a Rutentoy/Iceball/Freeblox -V or summary run spends its per-frame time in (cProfile), and the ENet
# range decoder's Python half (typed for Cython by engine/rangecoder.pxd; it runs where libenet is missing)
HOT = (
    "protodump.session",
    "protodump.capture.clock", "protodump.capture.decode", "protodump.capture.link", "protodump.capture.network",
    "protodump.capture.pcapfile", "protodump.capture.tcp_analysis",
    "protodump.capture.layers", "protodump.capture.layers.common", "protodump.capture.layers.eth",
    "protodump.capture.layers.frame", "protodump.capture.layers.ip", "protodump.capture.layers.tcp",
    "protodump.capture.layers.tcp_info", "protodump.capture.layers.tcp_option_spans",
    "protodump.engine.blocks_bits", "protodump.engine.blocks_cookies", "protodump.engine.blocks_dispatch",
    "protodump.engine.blocks_framing", "protodump.engine.blocks_text", "protodump.engine.channel_protocol",
    "protodump.engine.context", "protodump.engine.dispatch", "protodump.engine.fields", "protodump.engine.jsonscan",
    "protodump.engine.lifetime", "protodump.engine.protocol", "protodump.engine.rangecoder",
    "protodump.engine.stream_protocol", "protodump.engine.streams", "protodump.engine.strings", "protodump.engine.template", "protodump.engine.tree",
    "protodump.dissectors.websocket", "protodump.dissectors.ws_handshake",
    "protodump.output.frozen", "protodump.output.text",
    "protodump.reassembly.offsets", "protodump.reassembly.tcp",
    # -q -z io,phs's fused machine (analysis/stats_fused.py) and what its WebSocket and ENet models run
    "protodump.analysis.stats_fused", "protodump.analysis.fused_keys", "protodump.analysis.fused_ws",
    "protodump.engine.inflate", "protodump.dissectors.enet", "protodump.dissectors.enet_analysis",
)


# where a wheel's compiled modules sit inside the package (setup.py writes them there)
BUNDLED = "_compiled"


def platform_tag() -> str:
    """One directory of compiled modules per Python version and machine."""
    return f"{sys.implementation.cache_tag}-{sys.platform}-{os.uname().machine}"


def cache_dir() -> Path:
    """The directory `python -m protodump.compiled build` writes: PROTODUMP_COMPILED, else the user's cache."""
    root = os.environ.get("PROTODUMP_COMPILED")
    if root is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "protodump", "compiled")
    return Path(root) / platform_tag()


def bundled_dir() -> Path:
    """The compiled modules an installed wheel carries."""
    return Path(__file__).resolve().parent / BUNDLED / platform_tag()


def search_dirs() -> list[Path]:
    """Where compiled modules are looked for, first match wins: PROTODUMP_COMPILED alone when it is set."""
    if os.environ.get("PROTODUMP_COMPILED") is not None:
        return [cache_dir()]
    return [bundled_dir(), cache_dir()]


def source_hash(path: str) -> str:
    """The hash a compiled module is named by: its .py, and the .pxd beside it (Cython's typing of it) if any."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        digest.update(f.read())
    try:
        with open(path[:-3] + ".pxd", "rb") as f:
            digest.update(b"\0pxd\0" + f.read())
    except OSError:
        pass
    return digest.hexdigest()[:20]


def compiled_path(directory: Path, name: str, source: str) -> Path:
    """Where the compiled form of module `name` built from `source` (a .py path) lives."""
    return directory / f"{name}.{source_hash(source)}{importlib.machinery.EXTENSION_SUFFIXES[0]}"


def find_compiled(directories: list[Path], name: str, source: str) -> Path | None:
    """The first compiled form of `name` built from `source` in `directories`, or None."""
    filename = compiled_path(Path(), name, source).name
    for directory in directories:
        if (directory / filename).is_file():
            return directory / filename
    return None


class CompiledFinder(importlib.abc.MetaPathFinder):
    """Finds a hot module's source as the other finders do, then its compiled form for that exact source."""

    def __init__(self, directories: list[Path]):
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
            so = find_compiled(self.directories, name, spec.origin)
        except OSError:
            return spec
        if so is None:
            return spec                 # not built, or built from another version of the source
        self.loaded.append(name)
        return importlib.util.spec_from_file_location(
            name, so, loader=CompiledOrSource(name, str(so), spec.loader),
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
    directories = [d for d in search_dirs() if d.is_dir()]
    if not directories:
        return None
    for finder in sys.meta_path:
        if isinstance(finder, CompiledFinder):
            return finder
    finder = CompiledFinder(directories)
    sys.meta_path.insert(0, finder)
    return finder
