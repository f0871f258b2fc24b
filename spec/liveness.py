"""Liveness properties of the design model and the fairness they assume (checked by
checker/liveness.py through ``Model.liveness`` and ``Model.fair_actions``).

A property is a state predicate ``settled``: it is violated when some fair behaviour stays
unsettled forever (F G not settled). Weak fairness holds per action instance.

>>> from hwcheck.spec import Config, Model
>>> m = Model(Config(mode="hw"))
>>> [name for name, settled in LIVENESS], all(settled(m.init_states()[0]) for _, settled in LIVENESS)
(['AckedReachesLiveIsr', 'FollowerHwCatchesUp', 'PartitionHasLeader'], True)
"""

from __future__ import annotations

from typing import Callable, Tuple

from .state import UNDEFINED, State, leader_in_office

# the fetch, handle, epoch-exchange and become-leader/follower steps (of live replicas: the
# actions of a dead replica are disabled anyway); the faults and their aftermath (crash,
# power_fail, restart, controlled_shutdown, controlled_shutdown_leader, session_expire,
# session_expire_leader, register), the controller's steps (controller_handle_failure,
# controller_handle_failure_leader, elect_offline, elect_preferred), produce,
# flush, shrink_isr and leader_handle_stale_fetch are not fair (ISR expansion is part of
# leader_handle_fetch, as in Kafka's fetch handler). lag_expires is: time passes, so a lag window
# that stays open (its follower caught up outside the ISR, and fetching no more) closes
FAIR_ACTIONS = ("send_fetch", "leader_handle_fetch", "follower_handle_fetch", "follower_handle_old_response",
                "send_epoch_request",
                "leader_handle_epoch_request", "follower_handle_epoch_response", "reject_request",
                "become_leader", "become_follower", "lag_expires")


def acked_reach_live_isr(s: State) -> bool:
    """Every acknowledged record sits at its offset on every live member of the controller's ISR."""
    for record, offset in enumerate(s.history.acked):
        if offset == UNDEFINED:
            continue
        for r, rep in enumerate(s.replicas):
            if rep.alive and s.controller.isr >> r & 1:
                if offset >= len(rep.log) or rep.log[offset][0] != record:
                    return False
    return True


def follower_hw_caught_up(s: State) -> bool:
    """With a leader in office, every other live replica's HW has reached the leader's HW."""
    l = leader_in_office(s)
    if l == UNDEFINED:
        return True
    hw = s.replicas[l].hw
    return all(rep.hw >= hw for r, rep in enumerate(s.replicas) if r != l and rep.alive)


def partition_has_leader(s: State) -> bool:
    """No live ISR member, or a leader in office."""
    live_isr = any(rep.alive and s.controller.isr >> r & 1 for r, rep in enumerate(s.replicas))
    return not live_isr or leader_in_office(s) != UNDEFINED


LIVENESS: Tuple[Tuple[str, Callable[[State], bool]], ...] = (
    ("AckedReachesLiveIsr", acked_reach_live_isr),
    ("FollowerHwCatchesUp", follower_hw_caught_up),
    ("PartitionHasLeader", partition_has_leader),
)
