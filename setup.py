"""The build of protodump's wheel: pyproject.toml holds the metadata; this adds the compiled hot path.

`pip install .` compiles the hot modules (api/hot_path.py's HOT) with Cython 3, which pyproject.toml's
[build-system] requires (pip installs it in the build's own environment, never the user's), into the wheel as
`protodump/_compiled/<tag>/<module>.<source hash><ext>`, the names the finder checks against the installed
sources, so a compiled module is only ever loaded for the source it was built from (api/compiled.py).
The wheel is pure Python, and works, when:
- PROTODUMP_BUILD_PURE=1 is set;
- there is no C compiler, no Cython 3 (`pip install --no-build-isolation`), or the build fails: one warning line
  (pip shows it with -v; `python -m protodump.compiled status` says what loads);
- the install is editable (`pip install -e .`): nothing is compiled and nothing is written beside the sources
  (`python -m protodump.compiled build` compiles into a cache outside the tree instead).
"""
from __future__ import annotations

import importlib
import os
import shutil
import sys
import time
import types
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _compiled_module():
    """api/compiled.py (with api/hot_path.py), loaded without the protodump package, whose dependencies the
    build environment does not have."""
    package = types.ModuleType("_protodump_build")
    package.__path__ = [str(HERE / "api")]
    sys.modules.setdefault("_protodump_build", package)
    return importlib.import_module("_protodump_build.compiled")


class CompiledDistribution(Distribution):
    """A distribution that says it has extension modules once the hot path is compiled: the wheel is then tagged
    for this Python and machine, and its files go to platlib, as for any package with extension modules."""

    compiled_hot_path = False

    def has_ext_modules(self):
        return self.compiled_hot_path or super().has_ext_modules()


class BuildPyCompiled(build_py):
    """build_py, then the hot modules compiled into the build tree (not in editable mode)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        compiled = _compiled_module()
        bundled = Path(self.build_lib, "protodump", compiled.BUNDLED)
        shutil.rmtree(bundled, ignore_errors=True)       # a build/ left by an earlier build ships nothing stale
        if os.environ.get("PROTODUMP_BUILD_PURE"):
            return
        sources = {name: self._source(name) for name in compiled.HOT}
        start = time.monotonic()
        try:
            compiled.build_sources(sources, bundled / compiled.platform_tag())
        except (Exception, SystemExit) as exc:          # Cython's and the C compiler's errors, whatever their type
            shutil.rmtree(bundled, ignore_errors=True)
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            print(f"protodump: WARNING: no compiled hot path, the wheel is pure Python: {first[:300]}",
                  file=sys.stderr)
            return
        print(f"protodump: {len(sources)} hot modules compiled in {time.monotonic() - start:.0f} s", file=sys.stderr)
        self.distribution.compiled_hot_path = True
        wheel = self.distribution.command_obj.get("bdist_wheel")
        if wheel is not None:
            wheel.root_is_pure = False                  # decided before the build ran: see CompiledDistribution

    def _source(self, name: str) -> tuple[str, bool]:
        """A hot module's .py in the source tree, and whether it is a package's __init__."""
        if name in self.packages:
            return os.path.join(self.get_package_dir(name), "__init__.py"), True
        package, _, module = name.rpartition(".")
        return os.path.join(self.get_package_dir(package), module + ".py"), False


setup(distclass=CompiledDistribution, cmdclass={"build_py": BuildPyCompiled})
