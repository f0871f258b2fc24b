"""checker/cubes.py: blocking clauses learned from counterexamples to induction."""

import z3

from hwcheck.checker.bmc import Unrolling, symbolic_encoding
from hwcheck.checker.cubes import Atoms
from hwcheck.checker.houdini import discover
from hwcheck.checker.result import HOLDS
from hwcheck.checker.symbolic import CONCRETE, Encoding, equal
from hwcheck.spec import Config, Model

from .conftest import exact_reachable, one_line_error, run_cli, run_cli_here

SMALL = dict(mode="kip380", records=1, crashes=1)


def test_no_reachable_state_has_a_cube_and_an_unreachable_one_does():
    model = Model(Config(**SMALL))
    cenc = Encoding(model, CONCRETE)
    states = exact_reachable(model)
    atoms = Atoms(cenc, states)
    assert atoms.valuations == len(states)         # the atoms tell every reachable state apart
    for s in states[::50]:
        assert list(atoms.cubes(cenc.of_state(s), 3)) == []
    # a follower whose HW is above its LEO: no reachable state has it
    s = next(s for s in states if s.replicas[1].leo == 1 and s.replicas[1].role == 2)
    v = cenc.of_state(s)
    bad = v._replace(reps=(v.reps[0], v.reps[1]._replace(hw=2)))
    cubes = list(atoms.cubes(bad, 3))
    assert cubes
    for cube in cubes:
        name, term = atoms.clause(cube)
        assert not term(cenc, bad), name                       # the clause excludes the state
        assert all(term(cenc, cenc.of_state(t)) for t in states), name   # and holds where reachable
        assert atoms.holds(cube)
        for image in atoms.mirrors(cube):                      # so do its images that are kept
            _, image_term = atoms.clause(image)
            assert all(image_term(cenc, cenc.of_state(t)) for t in states)


def test_a_learned_clause_means_the_same_to_z3():
    model = Model(Config(**SMALL))
    cenc, zenc = Encoding(model, CONCRETE), symbolic_encoding(model)
    states = exact_reachable(model)
    atoms = Atoms(cenc, states)
    v = cenc.of_state(states[-1])
    bad = v._replace(hist=v.hist._replace(xlen=v.reps[0].leo + 1))
    cube = next(atoms.cubes(bad))
    _, term = atoms.clause(cube)
    s0 = Unrolling(zenc, "t").new_state()
    for w in [cenc.of_state(t) for t in states[::97]] + [bad]:
        solver = z3.Solver()
        solver.add(equal(zenc.o, s0, w))
        assert solver.check() == z3.sat
        assert z3.is_true(solver.model().eval(term(zenc, s0), model_completion=True)) == bool(term(cenc, w))


def test_blocking_clauses_alone_prove_a_small_space():
    """No template at all: every counterexample to induction is blocked by a clause no reachable
    state breaks, until the goal and the clauses are inductive; they hold where bfs reaches. (The
    hw mode: about 170 clauses in 50 rounds, 4 s; kip380's epoch caches took 180 in 57, 8 s.)"""
    model = Model(Config(mode="hw", records=1, crashes=0))
    d = discover(model, ["NoLogDivergence"], families=[], learn=1000, depth=1000)
    assert d.verdict == HOLDS and d.learned
    assert {lem.family for lem in d.survivors} == {"blocking"}
    cenc = Encoding(model, CONCRETE)
    for s in exact_reachable(model):
        assert all(lem.term(cenc, cenc.of_state(s)) for lem in d.survivors)
    # without learning, nothing but the goal is assumed, and it is not inductive
    assert discover(model, ["NoLogDivergence"], families=[]).verdict != HOLDS


def test_cli_prove_learn():
    r = run_cli("prove", "--mode", "hw", "--records", "1", "--crashes", "0", "--invariant", "NoCommittedDataLoss",
                "--discover", "--learn", "200")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "clauses learned from counterexamples to induction" in r.stdout
    assert "--discover" in one_line_error(run_cli_here("prove", "--invariant", "NoLogDivergence", "--learn", "5"))
