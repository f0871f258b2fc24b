"""Optional compiled build of the spec's hot modules (Cython, pure-Python mode).

The same .py files are compiled to C extensions when Cython and a C compiler are available; when
either is missing, or compiling fails, the build goes on without them and the package runs as plain
Python. ``HWCHECK_PURE=1`` skips the compiled build on purpose.

An editable install (``pip install -e``) stays plain Python unless ``HWCHECK_COMPILE=1``: its
extensions would sit beside the .py files and shadow them, so an edit to the spec would not be what
runs until the next build.
"""

import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

# the modules the bfs engine spends its time in (package name, source under the repository)
ACCELERATED = [
    ("hwcheck.spec.state", "spec/state.py"),
    ("hwcheck.spec.actions", "spec/actions.py"),
    ("hwcheck.spec.log", "spec/log.py"),
    ("hwcheck.spec.model", "spec/model.py"),
    ("hwcheck.spec.invariants", "spec/invariants.py"),
    ("hwcheck.spec.renaming", "spec/renaming.py"),
    ("hwcheck.checker.symmetry", "checker/symmetry.py"),
]


def _on(name: str) -> bool:
    """An environment switch: set and not 0/false/no (``HWCHECK_COMPILE=0`` means off)."""
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


class optional_build_ext(build_ext):
    """build_ext that warns and goes on, pure Python, when an extension does not compile."""

    def run(self):
        if getattr(self, "editable_mode", False) and not _on("HWCHECK_COMPILE"):
            self._skip("editable install: plain Python (HWCHECK_COMPILE=1 compiles, to spec/*.so)")
            return
        try:
            super().run()
        except Exception as e:          # no compiler at all (DistutilsPlatformError, CompileError, ...)
            self._skip(f"compiled build skipped: {e}")

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:          # this one failed to compile or link
            self._skip(f"{ext.name} not compiled ({e}); it runs as plain Python")

    @staticmethod
    def _skip(message):
        sys.stderr.write(f"warning: hwcheck: {message}\n")


def extensions():
    if _on("HWCHECK_PURE"):
        return []
    try:
        from Cython.Build import cythonize
        from setuptools import Extension
    except ImportError:
        sys.stderr.write("warning: hwcheck: Cython not available, compiled build skipped\n")
        return []
    exts = [Extension(name, [src]) for name, src in ACCELERATED]
    try:
        return cythonize(exts, language_level=3, quiet=True,
                         compiler_directives={"binding": True, "embedsignature": True,
                                              "autotestdict": False})
    except Exception as e:             # Cython could not translate a module
        sys.stderr.write(f"warning: hwcheck: cythonize failed ({e}), compiled build skipped\n")
        return []


setup(ext_modules=extensions(), cmdclass={"build_ext": optional_build_ext})
