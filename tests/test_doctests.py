import doctest
import importlib

import pytest

MODULES = ["hwcheck.spec.config", "hwcheck.spec.state", "hwcheck.spec.log", "hwcheck.spec.model",
           "hwcheck.checker.bfs", "hwcheck.checker.gate", "hwcheck.checker.families", "hwcheck.cli.progress",
           "hwcheck.cli.jsonout", "hwcheck.cli.html", "hwcheck.checker.fpset", "hwcheck.checker.symmetry",
           "hwcheck.checker.simulate", "hwcheck.checker.shrink", "hwcheck.checker.cubes",
           "hwcheck.checker.houdini", "hwcheck.checker.lemma_file", "hwcheck.spec.releases",
           "hwcheck.cluster.jars", "hwcheck.cluster.plan", "hwcheck.cluster.observe", "hwcheck.cluster.report"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
