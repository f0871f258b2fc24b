"""Auxiliary invariants: facts about reachable states that the core invariants' k-induction needs.

They are not among ``INVARIANTS`` (the verdict tables stay as they are); the z3 engine conjoins
them with the property it proves, and tests/test_symbolic.py checks each with bfs.

>>> from hwcheck.spec import Config, Model
>>> [s] = Model(Config(mode="epoch")).init_states()
>>> all(pred(s) for _, pred in AUXILIARY)
True
"""

from __future__ import annotations

from .state import EPOCH_RESPONSE, FETCH, FETCH_RESPONSE, FOLLOWER, LEADER, UNDEFINED, State


def leo_within_produced(s: State) -> bool:
    """No log, and no FetchResponse, reaches beyond the records produced so far (every record
    sits at the one offset it was produced at)."""
    p = s.history.produced
    return (all(len(rep.log) <= p for rep in s.replicas)
            and all(m.leader_leo <= p for m in s.inflight if m and m.kind == FETCH_RESPONSE))


def fetch_matches_log(s: State) -> bool:
    """A follower's log does not change while its fetch is out: a Fetch asks from its LEO, and a
    FetchResponse starts at its LEO (or is an out-of-range answer without records, below it, or,
    with truncation on fetch, a diverging-epoch answer without records, at the leader's LEO)."""
    for f, m in enumerate(s.inflight):
        leo = len(s.replicas[f].log)
        if m and m.kind == FETCH and m.fetch_offset != leo:
            return False
        if m and m.kind == FETCH_RESPONSE:
            start = m.leader_leo - len(m.records)
            diverging = m.diverging_epoch != UNDEFINED
            if not (start == leo or (not m.records and (m.leader_leo < leo or diverging))):
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


# ---------------------------------------------------------------- candidates for `prove --discover`
# Hand-written lemmas the templates of spec/lemmas/ do not express. They are not conjoined by
# plain `prove`: `prove --discover` offers them as candidates, checks each on the states bfs reaches
# (a lemma false in one is rejected before z3 sees it) and keeps it only if z3 finds it inductive.

def epoch_answer_cuts_sender_log(s: State) -> bool:
    """An OffsetsForLeaderEpoch answer (epoch, end) in flight, or with truncation on fetch a
    FetchResponse's diverging epoch, while its sender still leads at the follower's epoch, cuts the
    sender's log where that epoch ends: the end is within its log, no entry below it is of a later
    epoch, and the entry at it is of a later epoch or of the sender's own."""
    for f, m in enumerate(s.inflight):
        if m and m.kind == EPOCH_RESPONSE:
            epoch, end = m.epoch, m.end_offset
        elif m and m.kind == FETCH_RESPONSE:        # a diverging epoch (truncation on fetch)
            epoch, end = m.diverging_epoch, m.diverging_end_offset
        else:
            continue
        if epoch == UNDEFINED or end == UNDEFINED:
            continue
        l = m.leader
        sender, rep = s.replicas[l], s.replicas[f]
        if not (sender.alive and sender.role == LEADER and sender.leader_epoch == rep.leader_epoch):
            continue
        if end > len(sender.log) or any(ep > epoch for _, ep in sender.log[:end]):
            return False
        if end < len(sender.log) and not (sender.log[end][1] > epoch or sender.log[end][1] == sender.leader_epoch):
            return False
    return True


def follower_behind_leader_epoch(s: State) -> bool:
    """A live follower that names a live leader at its own epoch holds no entry of a later epoch than
    that leader's, and caches none."""
    for rep in s.replicas:
        if rep.alive and rep.role == FOLLOWER:
            leader = s.replicas[rep.leader]
            if leader.alive and leader.role == LEADER and leader.leader_epoch == rep.leader_epoch:
                if any(ep > leader.leader_epoch for _, ep in rep.log) or \
                        any(ep > leader.leader_epoch for ep, _ in rep.epoch_cache):
                    return False
    return True


def broker_epochs_within_bounces(s: State) -> bool:
    """KRaft (KIP-903): a broker's epoch grows once per registration, and a broker registers again
    only after a bounce the run counted (crash, controlled shutdown, power failure), so the broker
    epochs plus the brokers still down or waiting to register never exceed the bounces used."""
    c, h = s.controller, s.history
    waiting = sum(1 for r, rep in enumerate(s.replicas) if not (rep.alive and c.live >> r & 1))
    return not c.broker_epochs or sum(c.broker_epochs) + waiting <= h.crashes + h.power_failures


CANDIDATES = (
    ("EpochAnswerCutsSenderLog", epoch_answer_cuts_sender_log),
    ("FollowerBehindLeaderEpoch", follower_behind_leader_epoch),
    ("BrokerEpochsWithinBounces", broker_epochs_within_bounces),
)
