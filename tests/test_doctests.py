"""Every docstring example in the package runs (each module found by walking the packages, so a new
module's examples are tested without a list to keep up to date)."""

import doctest
import importlib
import pkgutil

import pytest

PACKAGES = ["hwcheck.spec", "hwcheck.checker", "hwcheck.cluster", "hwcheck.cli", "hwcheck.explore"]


def _modules():
    out = []
    for name in PACKAGES:
        package = importlib.import_module(name)
        out.append(name)
        out += [m.name for m in pkgutil.walk_packages(package.__path__, name + ".")
                if not m.name.endswith("__main__")]        # running it is the command line itself
    return out


MODULES = _modules()

# modules whose examples are their documentation: each must keep at least one
DOCUMENTED = ["hwcheck.spec.config", "hwcheck.spec.state", "hwcheck.spec.log", "hwcheck.spec.model",
              "hwcheck.spec.modes", "hwcheck.spec.releases", "hwcheck.checker.bfs", "hwcheck.checker.gate",
              "hwcheck.checker.families", "hwcheck.cli.progress", "hwcheck.cli.jsonout", "hwcheck.cli.html",
              "hwcheck.checker.fpset", "hwcheck.checker.symmetry", "hwcheck.checker.simulate",
              "hwcheck.checker.shrink", "hwcheck.checker.cubes", "hwcheck.checker.houdini",
              "hwcheck.checker.lemma_file", "hwcheck.spec.lemmas", "hwcheck.cluster.jars", "hwcheck.cluster.plan",
              "hwcheck.cluster.observe", "hwcheck.cluster.report", "hwcheck.cluster.conform", "hwcheck.checker.reach",
              "hwcheck.checker.focus",
              "hwcheck.explore.session", "hwcheck.explore.search", "hwcheck.explore.server"]


def test_the_walk_finds_every_documented_module():
    assert set(DOCUMENTED) <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
    if name in DOCUMENTED:
        assert result.attempted > 0
