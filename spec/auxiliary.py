"""Auxiliary invariants: facts about reachable states that the core invariants' k-induction needs.

They are not among ``INVARIANTS`` (the verdict tables stay as they are); the z3 engine conjoins
them with the property it proves, and tests/test_symbolic.py checks each with bfs.

>>> from hwcheck.spec import Config, Model
>>> [s] = Model(Config(mode="epoch")).init_states()
>>> all(pred(s) for _, pred in AUXILIARY)
True
"""

from __future__ import annotations

from .state import FETCH, FETCH_RESPONSE, LEADER, State


def leo_within_produced(s: State) -> bool:
    """No log, and no FetchResponse, reaches beyond the records produced so far (every record
    sits at the one offset it was produced at)."""
    p = s.history.produced
    return (all(len(rep.log) <= p for rep in s.replicas)
            and all(m[4] <= p for m in s.inflight if m and m[0] == FETCH_RESPONSE))


def fetch_matches_log(s: State) -> bool:
    """A follower's log does not change while its fetch is out: a Fetch asks from its LEO, and a
    FetchResponse starts at its LEO (or is an out-of-range answer without records, below it)."""
    for f, m in enumerate(s.inflight):
        leo = len(s.replicas[f].log)
        if m and m[0] == FETCH and m[3] != leo:
            return False
        if m and m[0] == FETCH_RESPONSE:
            start = m[4] - len(m[2])
            if not (start == leo or (not m[2] and m[4] < leo)):
                return False
    return True


def leader_epoch_bounded(s: State) -> bool:
    """No replica, and no log entry, is ahead of the controller's latest epoch."""
    e = s.controller.epoch
    return all(rep.leader_epoch <= e and all(ep <= e for _, ep in rep.log) for rep in s.replicas)


def remote_leo_bounded(s: State) -> bool:
    """What a leader learned of a follower's LEO never exceeds its own LEO."""
    return all(x <= len(rep.log) for rep in s.replicas if rep.role == LEADER for x in rep.remote_leo)


def down_means_no_role(s: State) -> bool:
    """A broker that is down remembers no LeaderAndIsr and has nothing in flight (a crash wipes
    memory and loses its messages), and a leader has no request of its own in flight (becoming
    leader stops its fetcher)."""
    return all((rep.alive or (rep.role == 0 and not s.inflight[r])) and (rep.role != LEADER or not s.inflight[r])
               for r, rep in enumerate(s.replicas))


AUXILIARY = (
    ("LeoWithinProduced", leo_within_produced),
    ("FetchMatchesLog", fetch_matches_log),
    ("LeaderEpochBounded", leader_epoch_bounded),
    ("RemoteLeoBounded", remote_leo_bounded),
    ("DownMeansNoRole", down_means_no_role),
)
