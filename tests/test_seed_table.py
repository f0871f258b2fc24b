"""Seed 001's table: one write and two fetch rounds with 2 replicas, value by value.

| step               | Leader LEO | Remote LEO | Leader HW | Follower LEO | Follower HW |
| Producer Write     | 1 | 0 | 0 | 0 | 0 |
| Follower Fetch     | 1 | 0 | 0 | 0 | 0 |
| Leader Update HW   | 1 | 0 | 0 | 0 | 0 |
| Leader Response    | 1 | 0 | 0 | 1 | 0 |
| Follower Update HW | 1 | 0 | 0 | 1 | 0 |
| Follower Fetch     | 1 | 1 | 0 | 1 | 0 |
| Leader Update HW   | 1 | 1 | 1 | 1 | 0 |
| Leader Response    | 1 | 1 | 1 | 1 | 0 |
| Follower Update HW | 1 | 1 | 1 | 1 | 1 |

Our leader_handle_fetch is the table's "Follower Fetch" (as seen by the leader: the remote LEO
moves) + "Leader Update HW" + "Leader Response"; our follower_handle_fetch is the table's
"Leader Response" (the follower appends) + "Follower Update HW".
"""

import pytest

from hwcheck.spec import Config, Model
from hwcheck.spec.state import FETCH_RESPONSE

from .conftest import run_labels

P, SF, LH, FH = ("produce", 0), ("send_fetch", 1), ("leader_handle_fetch", 0, 1), ("follower_handle_fetch", 1)


def columns(s):
    leader, follower = s.replicas
    return (leader.leo, leader.remote_leo[1], leader.hw, follower.leo, follower.hw)


@pytest.mark.parametrize("mode", ["hw", "kip380", "epoch"])
def test_one_write_two_fetch_rounds(mode):
    model = Model(Config(mode=mode, records=1))
    s = run_labels(model, [P, SF, LH, FH, SF, LH, FH])
    assert columns(s[1]) == (1, 0, 0, 0, 0)   # Producer Write
    assert columns(s[2]) == (1, 0, 0, 0, 0)   # Follower Fetch (sent, offset 0)
    assert s[2].inflight[1][3] == 0           # the fetch offset is the follower's LEO
    assert columns(s[3]) == (1, 0, 0, 0, 0)   # Leader Update HW: min(1, 0) = 0
    kind, _, records, response_hw, _ = s[3].inflight[1][:5]
    assert kind == FETCH_RESPONSE and records == ((0, 0),) and response_hw == 0   # Leader Response
    assert columns(s[4]) == (1, 0, 0, 1, 0)   # Leader Response appended + Follower Update HW
    assert s[5].inflight[1][3] == 1           # second Follower Fetch carries offset 1
    assert columns(s[5]) == (1, 0, 0, 1, 0)
    assert columns(s[6]) == (1, 1, 1, 1, 0)   # Follower Fetch (remote LEO 1) + Leader Update HW
    assert s[6].inflight[1][3] == 1           # Leader Response carries HW 1
    assert columns(s[7]) == (1, 1, 1, 1, 1)   # Follower Update HW


def test_response_hw_before_needs_a_third_round():
    """Seed 000 comments 5-17: if the response carries the HW from before the leader's update,
    the follower's HW lags one more round (comment 14's reading)."""
    model = Model(Config(mode="hw", records=1, response_hw="before"))
    s = run_labels(model, [P, SF, LH, FH, SF, LH, FH])
    assert columns(s[6]) == (1, 1, 1, 1, 0)
    assert s[6].inflight[1][3] == 0
    assert columns(s[7]) == (1, 1, 1, 1, 0)
    s = run_labels(model, [P, SF, LH, FH, SF, LH, FH, SF, LH, FH])
    assert columns(s[-1]) == (1, 1, 1, 1, 1)


@pytest.mark.parametrize("mode", ["hw", "epoch"])
def test_kafka_response_hw_is_read_with_the_records(mode):
    """``--response-hw kafka``: the records and the HW are read together before the Fetch updates
    the HW (Partition.readRecords @4.1.1, ReplicaManager.readFromLocalLog @0.10.2.1); a read with
    no records waits in purgatory and is read again, after the update. So seed 000's two rounds
    hold (the second Fetch, at the leader's LEO, gets no records and the new HW), while a Fetch
    behind the leader's LEO that moves the HW carries the old one."""
    model = Model(Config(mode=mode, records=2, response_hw="kafka"))
    s = run_labels(model, [P, SF, LH, FH, SF, LH, FH])
    assert columns(s[6]) == (1, 1, 1, 1, 0) and s[6].inflight[1][3] == 1     # no records: HW 1, after
    assert columns(s[7]) == (1, 1, 1, 1, 1)
    s = run_labels(model, [P, SF, LH, FH, P, SF, LH])            # fetch at 1 of 2: HW 0 -> 1, records [1]
    kind, _, records, response_hw, _ = s[-1].inflight[1][:5]
    assert s[-1].replicas[0].hw == 1 and records == ((1, 0),) and response_hw == 0   # read before the update
    after = Model(Config(mode=mode, records=2))                   # the default: from after
    assert run_labels(after, [P, SF, LH, FH, P, SF, LH])[-1].inflight[1][3] == 1
