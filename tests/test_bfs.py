"""The BFS engine: verdicts on the defaults, shortest traces, replayable traces."""

import json

from hwcheck.checker.bfs import bfs
from hwcheck.checker.trace import load_itf, replay, to_itf
from hwcheck.spec import Config, Model

from .conftest import exact_reachable


def test_hw_defaults_lose_committed_data_with_a_shortest_trace():
    model = Model(Config(mode="hw"))
    r = bfs(model)
    assert r.verdict == "violated"
    [trace] = r.violations
    assert trace.invariant == "NoCommittedDataLoss"
    assert "NoCommittedDataLoss" in model.violated(trace.states[-1])
    assert all(not model.violated(s) for s in trace.states[:-1])
    # shortest: nothing breaks within one step less
    shorter = bfs(model, max_depth=trace.steps - 1)
    assert shorter.verdict == "holds" and not shorter.complete


def test_epoch_defaults_hold_over_the_whole_space():
    # two workers, as verify uses on two cores (the results of one: tests/test_perf.py): 10 s here, not 15 s
    r = bfs(Model(Config(mode="epoch")), workers=2)
    assert r.verdict == "holds" and r.complete and r.violations == []
    assert r.distinct_states > 10_000 and r.depth > 20
    # the state graph of the main job's defaults fits the default node limit of --liveness and graph
    from hwcheck.checker.graph import DEFAULT_MAX_NODES
    assert r.distinct_states < DEFAULT_MAX_NODES


def test_search_is_deterministic():
    a, b = bfs(Model(Config(mode="hw", records=1))), bfs(Model(Config(mode="hw", records=1)))
    assert (a.distinct_states, a.generated_states, a.violations[0].labels) == \
           (b.distinct_states, b.generated_states, b.violations[0].labels)


def test_all_invariants_keeps_the_first_trace_of_each():
    # max_epoch=1 breaks the same three invariants at the same depths (11, 12, 12) as the hw
    # defaults, over the whole space of 35,122 states instead of 174,189
    model = Model(Config(mode="hw", max_epoch=1))
    r = bfs(model, all_invariants=True)
    names = [t.invariant for t in r.violations]
    assert names[0] == "NoCommittedDataLoss" and len(names) == len(set(names)) >= 2
    for t in r.violations:
        assert t.invariant in model.violated(t.states[-1])


def test_distinct_count_matches_an_exact_visited_set():
    """Fingerprints lose nothing here: the count equals a search keyed by whole states."""
    model = Model(Config(mode="epoch", records=1, crashes=1))
    assert bfs(model).distinct_states == len(exact_reachable(model))


def test_found_trace_round_trips_through_itf():
    model = Model(Config(mode="hw"))
    trace = bfs(model).violations[0]
    doc = load_itf(json.dumps(to_itf(model, trace)))
    done = replay(doc)
    assert done.trace.labels == trace.labels and done.violated[0] == "NoCommittedDataLoss"
