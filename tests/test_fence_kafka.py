"""The model's ``fence_stops_fetchers`` (KRaft from kip903; ZooKeeper without) checked on real
brokers on 127.0.0.1, once per release (cluster/fence.py; benchmarks/kraft_fence.py repeats it):
under KRaft the fence of a leader shuts its followers' fetcher threads towards it down, with an
answer that waited there; under ZooKeeper a leaderless partition keeps the thread, and the answer
stays owed. Resolving the jars is setup (a fixture), not part of a test."""

import pytest

from hwcheck.cluster.fence import probe
from hwcheck.spec.modes import MODES
from hwcheck.spec.releases import release

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


@pytest.mark.parametrize("version", ["3.9.0", "3.4.0"])
def test_a_fence_takes_the_waiting_answer_exactly_where_the_model_says(version, kafka_lib, tmp_path):
    rel = release(version)
    mode = MODES[rel.mode]
    assert mode.accept_old_epoch_response          # both releases have KAFKA-18991's bug
    got = probe(rel, kafka_lib(version), keep=tmp_path / "brokers")
    assert got.lost == got.thread_shut == mode.fence_stops_fetchers, got.line()
