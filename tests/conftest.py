import os
import subprocess
import sys
from pathlib import Path

import pytest

from hwcheck.spec import Config, Model

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args, cwd=None, timeout=600):
    """Run the real command line in a child process (so a traceback would be visible)."""
    return subprocess.run([sys.executable, "-m", "hwcheck.cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def run_cli_here(*args, cwd=None):
    """The command line run in this process by click's CliRunner (as test_cli's replays are), for
    bad input that is refused before any engine runs: the same ``cli`` group and its one-line
    errors, about a hundredth of a child's start-up (which imports z3, numpy and click every time).
    A traceback becomes this test's error."""
    from click.testing import CliRunner
    from hwcheck.cli.main import cli
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        result = CliRunner().invoke(cli, [str(a) for a in args], prog_name="hwcheck", catch_exceptions=False)
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


@pytest.fixture(scope="session")
def kafka_lib():
    """Resolve (once) the jars of a release: setup of the real-cluster tests, not part of one (the
    cache outside the repository makes it a no-op after the first time); the time it took is
    printed with -s."""
    import time

    from hwcheck.cluster import jars
    from hwcheck.cluster.run import artifacts
    from hwcheck.spec.releases import release
    cache = {}

    def lib(version):
        if version not in cache:
            rel = release(version)
            t0 = time.monotonic()
            try:
                cache[version] = jars.resolve(f"kafka-{rel.version}", artifacts(rel))
            except jars.ResolveError as e:
                pytest.fail(f"Kafka {version}: {e}")
            print(f"jars of Kafka {version}: {time.monotonic() - t0:.1f} s")
        return cache[version]
    return lib


def run_labels(model, labels):
    """Execute action labels from the initial state; every step must be enabled."""
    states = model.init_states()[:1]
    for label in labels:
        nxt = model.step(states[-1], label)
        assert nxt is not None, f"{model.format_label(label)} not enabled"
        states.append(nxt)
    return states


def exact_reachable(model, limit=None, start=None):
    """Reachable states in breadth-first order, keyed by the whole state (no fingerprints): an
    independent count. With ``limit``, the first ``limit`` or so states (whole levels); with
    ``start``, from those states instead of the initial ones."""
    seen = set(start if start is not None else model.init_states())
    frontier, out = list(seen), list(seen)
    while frontier and (limit is None or len(out) < limit):
        nxt = []
        for s in frontier:
            for _, t in model.successors(s):
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
                    out.append(t)
        frontier = nxt
    return out


def one_line_error(proc) -> str:
    """The process ended on bad input: exit 2, one 'hwcheck: error:' line, no traceback."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(lines) == 1 and lines[0].startswith("hwcheck: error:"), proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    return lines[0]


@pytest.fixture
def hw_model():
    return Model(Config(mode="hw", records=2))


@pytest.fixture
def epoch_model():
    return Model(Config(mode="epoch", records=2))


# ---------------------------------------------------------------- a real browser (Debian's Chromium)

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _browser_missing() -> str:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is not installed (apt-get install chromium; .ci/run does it)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install '.[test]')"
    return ""


@pytest.fixture
def browser_page(tmp_path):
    """A page of Debian's Chromium driven by Playwright; CI (CI=true) fails without them, elsewhere
    the test is skipped saying why. ``page.errors`` and ``page.requests`` collect what it saw."""
    missing = _browser_missing()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the browser test must run in CI: {missing}")
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=str(CHROMIUM), args=FLAGS, headless=True,
            viewport={"width": 1300, "height": 900})
        page = context.new_page()
        page.errors, page.requests = [], []
        page.on("pageerror", lambda e: page.errors.append(str(e)))
        page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
        page.on("request", lambda r: page.requests.append(r.url))
        try:
            yield page
        finally:
            context.close()


# the files whose tests start Kafka brokers (marked kafka): one group on the workers, run first
KAFKA_FILES = ("tests/test_reproduce_kafka.py", "tests/test_fence_kafka.py")


def pytest_collection_modifyitems(config, items):
    """The real-cluster tests first: with the suite on both cores they are the longest group and
    mostly wait on brokers, and the files fill the other core around them."""
    strays = {item.nodeid for item in items if item.get_closest_marker("kafka")} - {
        item.nodeid for item in items if item.nodeid.split("::")[0] in KAFKA_FILES}
    assert not strays, f"tests marked kafka outside KAFKA_FILES (tests/conftest.py): {sorted(strays)}"
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in KAFKA_FILES)


class _ByFile:
    """The suite runs on both cores (``-n 2`` in pyproject.toml's addopts): each test file is one
    unit of work kept on one worker with its module fixtures (a Spark session, the kept proofs'
    checks), and the files that start Kafka brokers are one unit, so two clusters never share the
    two cores or race for ports. (xdist's own ``--dist loadgroup`` marks groups by rewriting node ids,
    which pytest 9.2 no longer allows; the unit is derived from the node id here instead.)"""

    @pytest.hookimpl
    def pytest_xdist_make_scheduler(self, config, log):
        from xdist.scheduler import LoadScopeScheduling

        class ByFile(LoadScopeScheduling):
            def _split_scope(self, nodeid):
                path = nodeid.split("::")[0]
                return "kafka" if path in KAFKA_FILES else path
        config.option.loadscopereorder = False       # keep the order of the items (below)
        return ByFile(config, log)


def pytest_configure(config):
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_ByFile(), "hwcheck-by-file")
