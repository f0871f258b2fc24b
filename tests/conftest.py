import os
import signal
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


def sigint_at_default():
    """``preexec_fn`` of a child a test will Ctrl-C: a shell's background job (``.ci/run &``)
    ignores SIGINT and its children inherit that, so Python installs no KeyboardInterrupt there
    and the child runs to its end (seen: three Ctrl-C tests failed so, and passed in the foreground)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


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


# the files whose tests start Kafka brokers (marked kafka): one unit of work on the workers, run first
KAFKA_FILES = ("tests/test_reproduce_kafka.py", "tests/test_fence_kafka.py")
# the files with module-scoped fixtures (a Spark session, a cluster, a proof shared by their tests):
# each one unit, so that its fixture is built once; every other test is a unit of its own
WHOLE_FILES = ("tests/test_lemma_file.py", "tests/test_spark.py", "tests/test_spark_cluster.py", "tests/test_variants.py")


def _file(nodeid: str) -> str:
    return nodeid.split("::")[0]


def pytest_collection_modifyitems(config, items):
    """The real-cluster tests first: with the suite on both cores they are the longest unit and
    mostly wait on brokers, and the other tests fill the other core around them; then the whole
    files (the next longest units), so that no long unit starts last. Refuses a test
    marked kafka outside KAFKA_FILES and a module fixture outside WHOLE_FILES (the units would split
    what must stay together)."""
    strays = sorted(item.nodeid for item in items
                    if item.get_closest_marker("kafka") and _file(item.nodeid) not in KAFKA_FILES)
    assert not strays, f"tests marked kafka outside KAFKA_FILES (tests/conftest.py): {strays}"
    shared = sorted({_file(item.nodeid) for item in items
                     for defs in getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}).values()
                     for d in defs if d.scope in ("module", "package", "class") and _file(item.nodeid) not in
                     WHOLE_FILES + KAFKA_FILES})
    assert not shared, f"module-scoped fixtures in files outside WHOLE_FILES (tests/conftest.py): {shared}"
    items.sort(key=lambda item: (_file(item.nodeid) not in KAFKA_FILES, _file(item.nodeid) not in WHOLE_FILES))


class _Units:
    """The suite runs on both cores (``-n 2`` in pyproject.toml's addopts). Units of work go to
    whichever worker is free, in the items' order: the real-cluster files as one unit (two clusters
    never share the two cores or race for ports), each of WHOLE_FILES as one, every other test as
    one. (xdist's own ``--dist loadgroup`` marks groups by rewriting node ids, which pytest 9.2 no
    longer allows; the unit is derived from the node id here instead.)"""

    @pytest.hookimpl
    def pytest_xdist_make_scheduler(self, config, log):
        from xdist.scheduler import LoadScopeScheduling

        class Units(LoadScopeScheduling):
            def _split_scope(self, nodeid):
                path = _file(nodeid)
                return "kafka" if path in KAFKA_FILES else path if path in WHOLE_FILES else nodeid
        config.option.loadscopereorder = False       # keep the order of the items (above)
        return Units(config, log)


def pytest_configure(config):
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_Units(), "hwcheck-units")
