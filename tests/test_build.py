"""The optional compiled build (setup.py): what pip installs where a C compiler exists."""

import ast
import importlib
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def accelerated():
    """setup.py's ACCELERATED: (module, source) pairs, read without running setup.py."""
    tree = ast.parse(open(os.path.join(ROOT, "setup.py")).read())
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "ACCELERATED")
    return ast.literal_eval(node.value)


def test_every_accelerated_module_is_a_module_of_the_package_from_its_source():
    for name, source in accelerated():
        module = importlib.import_module(name)
        assert os.path.exists(os.path.join(ROOT, source))
        assert os.path.basename(module.__file__).split(".")[0] == os.path.basename(source)[:-3]


@pytest.mark.skipif(os.environ.get("CI") != "true", reason="CI installs the package compiled; a local "
                    "editable install runs the .py files (setup.py)")
def test_ci_runs_the_compiled_build():
    """.ci/run installs the project with pip from a clean clone, where gcc and Cython compile: a
    build that fell back to plain Python would only be slower, so this says so."""
    plain = [name for name, _ in accelerated() if importlib.import_module(name).__file__.endswith(".py")]
    assert not plain, f"not compiled: {plain}"
