"""Property: whatever a trace file is mutated into, replay ends in one line and exit 2 (or, for a
harmless mutation, replays), never a traceback. In-process via click's CliRunner, so a Python
exception escaping the command shows up as ``result.exception``. FUZZ_EXAMPLES=2000 searches
harder (the default, 120, takes a few seconds)."""

import json
import os
import random

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings, strategies as st

from hwcheck.cli.main import cli

from .conftest import ROOT

TRACES = sorted((ROOT / "counterexamples").glob("*.itf.json"))
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2, max_value=10 ** 12) | st.floats(allow_nan=False)
    | st.text(max_size=12) | st.sampled_from(["r0", "r1", "r9", "init", "crash(r0)", "leader", "#set", "hw"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6)


def _paths(value, prefix=()):
    """Every path (a tuple of keys/indices) into a JSON value, the value's own included."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


def _mutate(doc, data):
    """One structural mutation at a random place: replace a value, drop a key or an element,
    duplicate an element, or swap two states."""
    paths = [p for p in _paths(doc) if p]
    path = data.draw(st.sampled_from(paths), label="path")
    *head, last = path
    parent = doc
    for key in head:
        parent = parent[key]
    kind = data.draw(st.sampled_from(["replace", "drop", "duplicate", "swap-states"]), label="kind")
    if kind == "replace":
        parent[last] = data.draw(JSON_VALUES, label="value")
    elif kind == "drop":
        del parent[last]
    elif kind == "duplicate" and isinstance(parent, list):
        parent.insert(last, parent[last])
    elif kind == "swap-states":
        states = doc.get("states") or []
        if len(states) > 2:
            i = data.draw(st.integers(1, len(states) - 2), label="swap")
            states[i], states[i + 1] = states[i + 1], states[i]
    return doc


def _text_mutation(text, data):
    """Cut the file, or overwrite a few characters."""
    at = data.draw(st.integers(0, len(text) - 1), label="at")
    if data.draw(st.booleans(), label="cut"):
        return text[:at]
    junk = data.draw(st.text(min_size=1, max_size=4), label="junk")
    return text[:at] + junk + text[at + len(junk):]


def _check(result):
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{type(result.exception).__name__}: {result.exception}")
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 1, 2), result.exit_code
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("hwcheck: error: "), result.stderr
        assert result.stdout == ""
    else:
        assert "replayed" in result.stdout


@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", 120)), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_traces_end_in_one_line(tmp_path_factory, data):
    trace = data.draw(st.sampled_from(TRACES), label="trace")
    text = trace.read_text()
    if data.draw(st.booleans(), label="structural"):
        mutated = json.dumps(_mutate(json.loads(text), data))
    else:
        mutated = _text_mutation(text, data)
    path = tmp_path_factory.mktemp("fuzz") / "mutated.itf.json"
    path.write_text(mutated)
    _check(CliRunner().invoke(cli, ["replay", str(path)]))


def test_a_harmless_mutation_still_replays(tmp_path):
    """Reformatting and reordering keys changes nothing: the property's other branch is reachable."""
    doc = json.loads(TRACES[0].read_text())
    keys = list(doc)
    random.Random(1).shuffle(keys)
    path = tmp_path / "t.itf.json"
    path.write_text(json.dumps({k: doc[k] for k in keys}, indent=None))
    result = CliRunner().invoke(cli, ["replay", str(path)])
    _check(result)
    assert result.exit_code == 0
