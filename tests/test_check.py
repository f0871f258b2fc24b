"""One home for a check (checker/check.py): a request validated once and run on its engine; the Mode
travels in the Config, nothing is registered; every command declares its options in its own module."""

import importlib
import json
import pickle
import subprocess
import sys
from dataclasses import replace

import pytest

from hwcheck.checker import variants
from hwcheck.checker.bfs import bfs
from hwcheck.checker.check import CheckError, CheckObserver, CheckRequest, check
from hwcheck.spec import Config, ConfigError, Model, kafka_tla
from hwcheck.spec.modes import MODES

from .test_variants import KEEP_LOG, write

WHAT_IF = MODES["kip380"].variant("what-if", expand_waits_for_epoch_start=False)
SMALL = dict(records=1, crashes=1, max_epoch=1)


# ---------------------------------------------------------------- the Mode in the Config

def test_a_config_carries_its_mode_and_records_its_name():
    cfg = Config(mode=WHAT_IF, records=1)
    assert cfg.mode == "what-if" and cfg.mode_definition is WHAT_IF
    assert cfg.as_dict()["mode"] == "what-if" and type(cfg.as_dict()["mode"]) is str
    assert f"{cfg.mode}" == "what-if" and json.dumps(cfg.as_dict())      # names, files, ITF, --json
    assert Model(cfg).rules.mode is WHAT_IF
    assert replace(cfg, records=2).mode_definition is WHAT_IF            # Model.narrowed keeps the variant
    assert replace(cfg, mode="hw").mode_definition is MODES["hw"]
    assert "what-if" not in MODES
    with pytest.raises(ConfigError, match="unknown mode 'what-if'") as e:
        Config(mode="what-if")
    assert e.value.setting == "mode"


def test_config_equality_and_hash_follow_the_mode():
    assert Config(mode="epoch") == Config(mode=MODES["pr20716"]) == Config(mode="pr20716")
    assert hash(Config(mode="epoch")) == hash(Config(mode=MODES["pr20716"]))
    same = MODES["kip380"].variant("what-if", expand_waits_for_epoch_start=False)
    other = MODES["kip380"].variant("what-if", fenced=False)
    assert Config(mode=same) == Config(mode=WHAT_IF) and hash(Config(mode=same)) == hash(Config(mode=WHAT_IF))
    assert Config(mode=other) != Config(mode=WHAT_IF)                  # same name, other rules
    assert len({Config(mode="hw"), Config(mode=MODES["hw"]), Config(mode=WHAT_IF), Config(mode=same)}) == 2


def test_a_variant_may_not_take_a_built_in_name():
    for name in ("kip320", "epoch"):
        with pytest.raises(ConfigError, match="taken by a built-in mode"):
            Config(mode=MODES["hw"].variant(name))
    assert Config(mode=MODES["hw"]).mode == "hw"


def test_configs_pickle_with_their_mode():
    for cfg in (Config(mode="hw"), Config(mode=WHAT_IF, **SMALL)):
        back = pickle.loads(pickle.dumps(cfg))
        assert back == cfg and hash(back) == hash(cfg)
    assert pickle.loads(pickle.dumps(Config(mode="hw"))).mode_definition is MODES["hw"]    # by name


def test_a_mode_file_registers_nothing_and_its_mode_pickles(tmp_path):
    before = dict(MODES)
    mode = variants.load(write(tmp_path, "keep_log.py", KEEP_LOG))
    assert MODES == before and isinstance(mode, variants.FileMode)
    cfg = Config(mode=mode, **SMALL)
    back = pickle.loads(pickle.dumps(cfg))          # the replaced action, guarded, by reference
    assert back == cfg and variants.file_of(back) == str((tmp_path / "keep_log.py").resolve())
    assert bfs(Model(back)).distinct_states == bfs(Model(cfg)).distinct_states != bfs(Model(Config(mode="hw", **SMALL))).distinct_states


def test_spark_ships_a_variant_to_a_process_that_cannot_import_its_file(tmp_path):
    """What Spark's executors see: the model pickled by cloudpickle, the mode file's module by value."""
    from pyspark import cloudpickle

    from hwcheck.checker.spark import ship_config
    cfg = Config(mode=variants.load(write(tmp_path, "keep_log.py", KEEP_LOG)), **SMALL)
    ship_config(cfg)
    blob = tmp_path / "model.pickle"
    blob.write_bytes(cloudpickle.dumps(Model(cfg)))
    code = ("import pickle, sys; from hwcheck.checker.bfs import bfs; "
            "m = pickle.loads(open(sys.argv[1], 'rb').read()); print(m.cfg.mode, bfs(m).distinct_states)")
    out = subprocess.run([sys.executable, "-c", code, str(blob)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["hw-keep-log", str(bfs(Model(cfg)).distinct_states)]


# ---------------------------------------------------------------- check(request)

class Heard(CheckObserver):
    def __init__(self):
        self.heard = []

    def started(self, checked):
        self.heard.append(("started", tuple(checked.invariants), checked.fair))

    def depth_solved(self, k, seconds, answer):
        self.heard.append(("depth", k, answer))

    def graph_built(self, graph):
        self.heard.append(("graph", graph.number_of_nodes()))


HW = Config(mode="hw", records=1)


@pytest.mark.parametrize("request_, message", [
    (CheckRequest(HW, engine="spark", symmetry=True), "--symmetry and --workers apply to --engine bfs only"),
    (CheckRequest(HW, partitions=4), "--master and --partitions apply to --engine spark only"),
    (CheckRequest(HW, fair=("produce",)), "--fair applies only with --liveness"),
    (CheckRequest(HW, invariants=("Nope",)), "unknown invariant 'Nope'; choose from NoCommittedDataLoss"),
    (CheckRequest(HW, depth=3), "--depth goes with --engine z3"),
    (CheckRequest(HW, engine="z3"), "--engine z3 needs --depth K"),
    (CheckRequest(HW, engine="z3", depth=2, checkpoint="ck"), "--checkpoint, --resume and --max-memory apply to"),
    (CheckRequest(kafka_tla.Config(), engine="z3", depth=2), "--engine z3 encodes the design model only"),
    (CheckRequest(kafka_tla.Config(), engine="liveness"), "--liveness applies to --model design only"),
    (CheckRequest(Config(mode=WHAT_IF), checkpoint="ck"), "--checkpoint and --resume do not combine with --mode-file"),
    (CheckRequest(HW, engine="tlc"), "unknown engine 'tlc'"),
])
def test_a_bad_request_is_refused_before_any_work(request_, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    heard = Heard()
    with pytest.raises(CheckError) as e:
        check(request_, heard)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)
    assert heard.heard == [] and not (tmp_path / "ck").exists()


@pytest.mark.parametrize("field, value, option", [
    ("invariants", ("NoCommittedDataLoss",), "--invariant"), ("max_depth", 3, "--max-depth"),
    ("all_invariants", True, "--all-invariants"), ("depth", 0, "--depth"), ("symmetry", True, "--symmetry"),
    ("workers", 2, "--workers"), ("checkpoint", "ck", "--checkpoint"), ("resume", "ck", "--resume"),
    ("max_memory_gb", 1.0, "--max-memory"), ("master", "local[1]", "--master"), ("partitions", 2, "--partitions"),
])
def test_a_liveness_request_refuses_every_safety_only_option(field, value, option, tmp_path, monkeypatch):
    """check() itself, not only verify's command line, refuses them: one line naming the option."""
    monkeypatch.chdir(tmp_path)
    heard = Heard()
    with pytest.raises(CheckError) as e:
        check(CheckRequest(HW, engine="liveness", **{field: value}), heard)
    assert str(e.value) == (f"{option} does not apply to --liveness (it explores the whole state graph of the "
                            "design model)")
    assert heard.heard == [] and not (tmp_path / "ck").exists()
    with pytest.raises(CheckError, match="^--max-depth, --symmetry do not apply to --liveness"):
        check(CheckRequest(HW, engine="liveness", max_depth=3, symmetry=True))


def test_resume_refuses_a_checkpoint_of_the_previous_format(tmp_path):
    """Format 2 held messages as plain tuples (and other fingerprints): refused in one line, not a traceback."""
    from hwcheck.checker.bfs import CHECKPOINT_FILE, CHECKPOINT_FORMAT, load_checkpoint

    from .conftest import one_line_error, run_cli, run_cli_here
    assert CHECKPOINT_FORMAT == 3
    bfs(Model(Config(mode="kip320", records=1)), max_depth=3, checkpoint=str(tmp_path))
    snap = load_checkpoint(str(tmp_path))
    snap["format"] = 2
    (tmp_path / CHECKPOINT_FILE).write_bytes(pickle.dumps(snap))
    line = one_line_error(run_cli_here("verify", "--mode=kip320", "--records=1", "--quiet", "--resume", tmp_path))
    assert "written by another version of hwcheck (format 2, this one reads 3)" in line


def test_check_dispatches_to_each_engine():
    heard = Heard()
    done = check(CheckRequest(HW, invariants=("NoCommittedDataLoss",)), heard)
    assert heard.heard == [("started", ("NoCommittedDataLoss",), ())]
    assert (done.result.engine, done.result.verdict, done.result.violations[0].steps) == ("bfs", "violated", 12)
    assert done.model.cfg == HW

    heard = Heard()
    done = check(CheckRequest(HW, engine="z3", depth=2), heard)
    assert done.result.verdict == "holds" and [h[1] for h in heard.heard if h[0] == "depth"] == [0, 1, 2]

    heard = Heard()
    done = check(CheckRequest(Config(mode="hw", **SMALL), engine="liveness", fair=("restart",)), heard)
    assert done.fair[-1] == "restart" and heard.heard[0][0] == "started" and heard.heard[1][0] == "graph"
    assert [name for name, _ in done.properties] == [name for name, _ in done.model.liveness]

    done = check(CheckRequest(kafka_tla.Config(mode="kip101"), max_depth=4))
    assert done.result.engine == "bfs" and done.invariants == ["StrongIsr"]


# ---------------------------------------------------------------- the commands

COMMAND_MODULES = {"verify": "verify", "replay": "replay", "gate": "gate", "modes": "modes", "simulate": "simulate",
                   "graph": "graph", "prove": "symbolic", "reproduce": "reproduce", "conform": "conform",
                   "explore": "explore"}


def test_every_command_declares_all_its_options_in_its_own_module():
    """The options a command has when its module is imported alone are those of the group: no other
    module appends options to it or wraps it."""
    from hwcheck.cli.main import COMMANDS, cli
    assert sorted(c.name for c in COMMANDS) == sorted(cli.commands) == sorted(COMMAND_MODULES)
    for command in COMMANDS:
        module = COMMAND_MODULES[command.name]
        code = (f"import importlib; c = importlib.import_module('hwcheck.cli.{module}').{command.callback.__name__}; "
                "print(' '.join(p.name for p in c.params), c.callback.__module__)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        *alone, home = out.stdout.split()
        assert alone == [p.name for p in command.params] and home == f"hwcheck.cli.{module}", command.name
        assert importlib.import_module(f"hwcheck.cli.{module}") is sys.modules[command.callback.__module__]


def test_verify_has_the_options_it_always_had():
    from hwcheck.cli.verify import verify
    assert [p.opts[0] for p in verify.params] == [
        "--mode", "--mode-file", "--replicas", "--records", "--crashes", "--power-failures", "--disk-losses",
        "--max-epoch", "--min-isr", "--acks", "--unclean-election", "--response-hw", "--follower-reads", "--kafka", "--elr",
        "--zookeeper",
        "--model",
        "--log-size", "--max-records", "--max-leader-epoch", "--engine", "--depth", "--master", "--partitions",
        "--max-depth", "--all-invariants", "--invariant", "--out", "--force", "--quiet", "--wide", "--verbose",
        "--symmetry",
        "--workers", "--checkpoint", "--resume", "--max-memory", "--liveness", "--fair", "--max-nodes", "--json"]
