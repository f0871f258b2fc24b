"""The rules that tell the modes apart."""

import pytest

from hwcheck.spec import Config, Model
from hwcheck.spec.modes import MODE_RULES, follower_truncation, kip101_answer, kip279_answer
from hwcheck.spec.state import UNDEFINED as U

from .conftest import run_labels

LEADER_CACHE = ((0, 0), (2, 3))   # epoch 0 from offset 0, epoch 2 from offset 3; LEO 5


@pytest.mark.parametrize("requested, expected", [
    (2, (U, 5)),      # the leader's latest epoch: its LEO
    (1, (U, 3)),      # an epoch the leader never had: start of the next higher one (KAFKA-6361's flaw)
    (0, (U, 3)),      # an older epoch: start of the next higher one
    (3, (U, U)),      # above every epoch the leader knows
])
def test_kip101_answer(requested, expected):
    assert kip101_answer(LEADER_CACHE, 5, requested) == expected


def test_kip101_answer_below_the_first_epoch_is_undefined():
    assert kip101_answer(((1, 0), (2, 3)), 5, 0) == (U, U)


@pytest.mark.parametrize("requested, expected", [
    (2, (2, 5)),      # equal: (epoch, LEO)
    (1, (0, 3)),      # missing epoch: the largest epoch below it, ending where epoch 2 starts
    (0, (0, 3)),
    (3, (U, U)),      # above
])
def test_kip279_answer(requested, expected):
    assert kip279_answer(LEADER_CACHE, 5, requested) == expected


def test_kip279_answer_below_the_first_epoch():
    assert kip279_answer(((1, 0), (2, 3)), 5, 0) == (0, 0)


def follower(cache, leo, hw):
    model = Model(Config(mode="kip279", records=max(leo, 1)))
    rep = model.init_states()[0].replicas[1]
    return rep._replace(log=tuple((i, 0) for i in range(leo)), epoch_cache=cache, hw=hw)


def test_follower_truncation_rules():
    f = follower(((0, 0), (1, 2)), 4, 1)
    assert follower_truncation(f, (U, U)) == (1, True)            # no answer: to the HW
    assert follower_truncation(f, (U, 3)) == (3, True)            # 0.11 answer: min(end, LEO)
    assert follower_truncation(f, (U, 9)) == (4, True)
    assert follower_truncation(f, (0, 3)) == (2, True)            # own end of epoch 0 is 2
    assert follower_truncation(f, (1, 3)) == (3, True)            # min(own end 4, leader end 3)
    g = follower(((0, 0), (2, 2)), 4, 1)
    assert follower_truncation(g, (1, 3)) == (2, False)           # lacks epoch 1: step back, ask again


def test_mode_rules_table():
    hw, k101, k279, epoch = (MODE_RULES[m] for m in ("hw", "kip101", "kip279", "epoch"))
    assert not hw.epochs and k101.epochs and k279.epochs and epoch.epochs
    assert [m.cache_on_become_leader for m in (k101, k279, epoch)] == [False, False, True]
    assert [m.fenced for m in (k101, k279, epoch)] == [False, False, True]
    assert Config(mode="kip320").mode == "epoch"


P0 = ("produce", 0)


@pytest.mark.parametrize("mode, cache", [("kip101", ()), ("kip279", ()), ("epoch", ((1, 0),))])
def test_when_a_new_leader_gains_its_cache_entry(mode, cache):
    model = Model(Config(mode=mode))
    s = run_labels(model, [("elect", 1), ("become_leader", 1)])[-1]
    assert s.replicas[1].epoch_cache == cache                     # KAFKA-7415: on taking office
    s = model.step(s, ("produce", 1))
    assert s.replicas[1].epoch_cache == ((1, 0),)                 # otherwise on the first write


@pytest.mark.parametrize("mode, fenced", [("kip279", False), ("epoch", True)])
def test_stale_leader_answers_epoch_request_only_without_fencing(mode, fenced):
    """r1 follows r0 at epoch 2 while r0 still thinks it leads at epoch 0 (its LeaderAndIsr
    for epoch 2 not applied yet): KIP-320 fences the request."""
    model = Model(Config(mode=mode))
    s = run_labels(model, [P0, ("elect", 1), ("become_leader", 1), ("produce", 1), ("elect", 0),
                           ("become_follower", 1), ("send_epoch_request", 1)])[-1]
    assert s.replicas[0].leader_epoch == 0 and s.inflight[1][2] == 2
    assert (model.step(s, ("leader_handle_epoch_request", 0, 1)) is None) == fenced
    assert (model.step(s, ("reject_request", 0, 1)) is not None) == fenced


@pytest.mark.parametrize("mode, waits", [("kip279", False), ("epoch", True)])
def test_isr_expansion_waits_for_the_epoch_start(mode, waits):
    """r0 leads at epoch 1, which starts at offset 1; r1 (outside the ISR) has reached r0's HW 0
    but not the start of epoch 1."""
    model = Model(Config(mode=mode))
    s = model.init_states()[0]
    r0 = s.replicas[0]._replace(log=((0, 0), (1, 1)), hw=0, epoch_cache=((0, 0), (1, 1)),
                                leader_epoch=1, isr=0b01, remote_leo=(U, 0))
    s = s._replace(replicas=(r0,) + s.replicas[1:], controller=s.controller._replace(epoch=1, isr=0b01))
    assert (model.step(s, ("expand_isr", 0, 1)) is None) == waits
    r0 = r0._replace(remote_leo=(U, 1))
    s = s._replace(replicas=(r0,) + s.replicas[1:])
    assert model.step(s, ("expand_isr", 0, 1)).controller.isr == 0b11


def test_truncation_at_the_leo_still_trims_a_leftover_epoch_entry():
    """A leader that took office at epoch 2 (entry (2, 1)) and wrote nothing becomes a follower;
    the new leader knows epoch 1 only. The follower steps back to offset 1 = its LEO: the log stays,
    the conflicting (2, 1) entry goes, so its next request asks about epoch 0 instead of 2 forever."""
    from hwcheck.spec.log import truncate
    f = follower(((0, 0), (2, 1)), 1, 1)
    offset, done = follower_truncation(f, (1, 1))
    assert (offset, done) == (1, False)
    g = truncate(f, offset)
    assert g.log == f.log and g.epoch_cache == ((0, 0),)
