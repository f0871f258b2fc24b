"""hwcheck.cluster.jars: the generated pom, the cache, and mvn's failures as one line.

mvn is replaced by a fake that writes jars where the real one would (no network); one slow test
resolves a tiny artifact through the real mvn."""

import doctest
import shutil
import subprocess
import threading
import time
import xml.etree.ElementTree as ET

import pytest

from hwcheck.cluster import jars
from hwcheck.cluster.jars import ResolveError, classify, pom, resolve

KAFKA = "org.apache.kafka:kafka_2.13:4.1.1"
METADATA = "org.apache.kafka:kafka-metadata:4.1.1"
NS = {"m": "http://maven.apache.org/POM/4.0.0"}

# mvn -B -q's output, recorded with Maven 3.8.7 (the escape codes are its own)
HELP = ("[ERROR] \n[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.\n"
        "[ERROR] Re-run Maven using the -X switch to enable full debug logging.\n[ERROR] \n"
        "[ERROR] For more information about the errors and possible solutions, please read the following articles:\n"
        "[ERROR] [Help 1] http://cwiki.apache.org/confluence/display/MAVEN/DependencyResolutionException\n"
        "\x1b[0m\x1b[0m")
FAILED = ("\x1b[0m\x1b[0m[ERROR] Failed to execute goal on project kafka-jars: Could not resolve dependencies for "
          "project hwcheck:kafka-jars:pom:0: ")
NOT_FOUND = (FAILED + "Could not find artifact org.apache.kafka:kafka_2.13:jar:0.10.2.1 in central "
             "(https://repo.maven.apache.org/maven2) -> [Help 1]\n" + HELP)
NOT_FOUND_BOTH = (FAILED + "The following artifacts could not be resolved: org.apache.kafka:kafka_2.13:jar:4.9.9, "
                  "org.apache.kafka:kafka_2.13:jar:sources:4.9.9: Could not find artifact "
                  "org.apache.kafka:kafka_2.13:jar:4.9.9 in central (https://repo.maven.apache.org/maven2) "
                  "-> [Help 1]\n" + HELP)
NOT_FOUND_CACHED = (FAILED + "org.apache.kafka:kafka_2.13:jar:sources:4.4.0 was not found in "
                    "https://repo.maven.apache.org/maven2 during a previous attempt. This failure was cached in the "
                    "local repository and resolution is not reattempted until the update interval of central has "
                    "elapsed or updates are forced -> [Help 1]\n" + HELP)
NOT_FOUND_DEPENDENCY = (FAILED + "Could not find artifact com.yammer.metrics:metrics-core:jar:2.2.0 in central "
                        "(https://repo.maven.apache.org/maven2) -> [Help 1]\n" + HELP)
UNKNOWN_HOST = (FAILED + "Failed to collect dependencies at org.apache.kafka:kafka_2.13:jar:4.1.1: Failed to read "
                "artifact descriptor for org.apache.kafka:kafka_2.13:jar:4.1.1: Could not transfer artifact "
                "org.apache.kafka:kafka_2.13:pom:4.1.1 from/to central (https://repo.maven.apache.org/maven2): "
                "transfer failed for https://repo.maven.apache.org/maven2/org/apache/kafka/kafka_2.13/4.1.1/"
                "kafka_2.13-4.1.1.pom: Unknown host repo.maven.apache.org: Name or service not known -> [Help 1]\n"
                + HELP)
PLUGIN_REFUSED = ("\x1b[0m\x1b[0m[ERROR] Plugin org.apache.maven.plugins:maven-dependency-plugin:3.8.1 or one of its "
                  "dependencies could not be resolved: Failed to read artifact descriptor for "
                  "org.apache.maven.plugins:maven-dependency-plugin:jar:3.8.1: Could not transfer artifact "
                  "org.apache.maven.plugins:maven-dependency-plugin:pom:3.8.1 from/to central "
                  "(http://127.0.0.1:9/maven2): transfer failed for http://127.0.0.1:9/maven2/org/apache/maven/"
                  "plugins/maven-dependency-plugin/3.8.1/maven-dependency-plugin-3.8.1.pom: Connect to 127.0.0.1:9 "
                  "[/127.0.0.1] failed: Connection refused -> [Help 1]\n" + HELP)
TIMED_OUT = (FAILED + "Could not transfer artifact org.apache.kafka:kafka-clients:jar:4.1.1 from/to central "
             "(https://repo.maven.apache.org/maven2): transfer failed for https://repo.maven.apache.org/maven2/org/"
             "apache/kafka/kafka-clients/4.1.1/kafka-clients-4.1.1.jar: Connect to repo.maven.apache.org:443 "
             "[repo.maven.apache.org/151.101.0.215] failed: Connect timed out -> [Help 1]\n" + HELP)
BAD_POM = ("[ERROR] [ERROR] Some problems were encountered while processing the POMs:\n"
           "[FATAL] Non-parseable POM /tmp/x/pom.xml: Unrecognised tag: 'dependenc' (position: START_TAG seen "
           "...<dependenc>... @9:16)  @ line 9, column 16\n @ \n"
           "[ERROR] The build could not read 1 project -> [Help 1]\n[ERROR]   \n"
           "[ERROR]   The project  (/tmp/x/pom.xml) has 1 error\n"
           "[ERROR]     Non-parseable POM /tmp/x/pom.xml: Unrecognised tag: 'dependenc' @ line 9, column 16 -> [Help 2]\n"
           + HELP)


def test_docstring_examples_run():
    result = doctest.testmod(jars)
    assert result.attempted > 0 and result.failed == 0


def test_pom_depends_on_each_coordinate_and_on_sources_jars_alone():
    project = ET.fromstring(pom([KAFKA, "org.slf4j:slf4j-reload4j:1.7.36"], sources=[KAFKA, METADATA]))
    deps = [{child.tag.split("}")[1]: child.text for child in dep}
            for dep in project.findall("m:dependencies/m:dependency", NS)]
    assert [(d["groupId"], d["artifactId"], d["version"], d.get("classifier")) for d in deps] == [
        ("org.apache.kafka", "kafka_2.13", "4.1.1", None), ("org.slf4j", "slf4j-reload4j", "1.7.36", None),
        ("org.apache.kafka", "kafka_2.13", "4.1.1", "sources"), ("org.apache.kafka", "kafka-metadata", "4.1.1", "sources")]
    sources = project.findall("m:dependencies/m:dependency/m:exclusions/m:exclusion", NS)
    assert [(e.find("m:groupId", NS).text, e.find("m:artifactId", NS).text) for e in sources] == [("*", "*")] * 2
    executions = {e.find("m:id", NS).text: {c.tag.split("}")[1]: c.text for c in e.find("m:configuration", NS)}
                  for e in project.iter("{%s}execution" % NS["m"])}
    assert executions["lib"]["includeScope"] == "runtime" and executions["lib"]["excludeClassifiers"] == "sources"
    assert executions["sources"]["includeClassifiers"] == "sources"
    assert project.find("m:build/m:plugins/m:plugin/m:version", NS).text == jars.DEPENDENCY_PLUGIN


@pytest.mark.parametrize("bad", ["kafka_2.13:4.1.1", "org.apache.kafka:kafka_2.13:4.1.1:jar", "a:<b>:1", "a::1"])
def test_pom_refuses_a_malformed_coordinate(bad):
    with pytest.raises(ResolveError, match="bad coordinate"):
        pom([bad])


def test_cache_root_prefers_the_variable_then_xdg_then_home(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("HWCHECK_KAFKA_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert jars.cache_root() == tmp_path / ".cache" / "hwcheck" / "kafka"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert jars.cache_root() == tmp_path / "xdg" / "hwcheck" / "kafka"
    monkeypatch.setenv("HWCHECK_KAFKA_CACHE", str(tmp_path / "mine"))
    assert jars.cache_root() == tmp_path / "mine"


class FakeMvn:
    """Stands for ``subprocess.run`` of mvn: writes one jar per lib coordinate and one sources jar
    per sources coordinate where the real mvn would, or fails with ``output``."""

    def __init__(self, returncode=0, output="", delay=0.0):
        self.returncode, self.output, self.delay, self.calls = returncode, output, delay, []
        self.running = threading.Event()

    def __call__(self, cmd, **kwargs):
        self.calls.append(cmd)
        self.running.set()
        time.sleep(self.delay)
        props = dict(arg[2:].split("=", 1) for arg in cmd if arg.startswith("-D"))
        project = ET.parse(cmd[cmd.index("-f") + 1]).getroot()
        if self.returncode == 0:
            for dep in project.findall("m:dependencies/m:dependency", NS):
                artifact, version = dep.find("m:artifactId", NS).text, dep.find("m:version", NS).text
                if dep.find("m:classifier", NS) is None:
                    (jars.Path(props["hwcheck.lib"]) / f"{artifact}-{version}.jar").write_bytes(b"x" * 1000)
                elif any(goal.endswith("@sources") for goal in cmd):
                    (jars.Path(props["hwcheck.sources"]) / f"{artifact}-{version}-sources.jar").write_bytes(b"s")
        return subprocess.CompletedProcess(cmd, self.returncode, stdout=self.output)


@pytest.fixture
def fake_mvn(monkeypatch):
    monkeypatch.setattr(jars.shutil, "which", lambda name: f"/opt/fake/{name}")
    fake = FakeMvn()
    monkeypatch.setattr(jars.subprocess, "run", fake)
    return fake


def no_mvn(*args, **kwargs):
    raise AssertionError("mvn ran on a cache hit")


def test_resolve_fills_lib_and_sources_then_hits_the_cache(fake_mvn, monkeypatch, tmp_path):
    lines = []
    lib = resolve("kafka-4.1.1", [KAFKA], sources=[KAFKA, METADATA], root=tmp_path, log=lines.append)
    assert lib == tmp_path / "kafka-4.1.1" / "lib"
    assert sorted(p.name for p in lib.iterdir()) == ["kafka_2.13-4.1.1.jar"]
    assert sorted(p.name for p in (lib.parent / "sources").iterdir()) == [
        "kafka-metadata-4.1.1-sources.jar", "kafka_2.13-4.1.1-sources.jar"]
    assert (lib.parent / ".complete").read_text() == f"lib {KAFKA}\nsources {METADATA}\nsources {KAFKA}\n"
    assert lines[0] == "resolving kafka-4.1.1 (2 coordinates) ..."
    assert lines[1].startswith("resolved kafka-4.1.1: 1 jars, 0 MB, 2 sources jars in ")
    cmd = fake_mvn.calls[0]
    assert cmd[:3] == ["/opt/fake/mvn", "-B", "-q"] and sum(goal.endswith(("@lib", "@sources")) for goal in cmd) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [".kafka-4.1.1.lock", "kafka-4.1.1"]

    monkeypatch.setattr(jars.subprocess, "run", no_mvn)
    monkeypatch.setattr(jars.shutil, "which", lambda name: None)  # a hit needs no mvn at all
    assert resolve("kafka-4.1.1", [KAFKA, KAFKA], sources=[METADATA, KAFKA], root=tmp_path) == lib


def test_a_hand_made_complete_cache_is_a_hit(monkeypatch, tmp_path):
    (tmp_path / "kafka-3.9.1" / "lib").mkdir(parents=True)
    (tmp_path / "kafka-3.9.1" / ".complete").write_text(f"lib {KAFKA}\n")
    monkeypatch.setattr(jars.subprocess, "run", no_mvn)
    assert resolve("kafka-3.9.1", [KAFKA], root=tmp_path) == tmp_path / "kafka-3.9.1" / "lib"


def test_other_coordinates_resolve_again_and_replace_the_folder(fake_mvn, tmp_path):
    resolve("kafka", [KAFKA], root=tmp_path)
    (tmp_path / "kafka" / "lib" / "stale.jar").write_bytes(b"")
    lib = resolve("kafka", [KAFKA, "org.slf4j:slf4j-reload4j:1.7.36"], root=tmp_path)
    assert len(fake_mvn.calls) == 2
    assert sorted(p.name for p in lib.iterdir()) == ["kafka_2.13-4.1.1.jar", "slf4j-reload4j-1.7.36.jar"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".kafka.lock", "kafka"]
    assert not list((tmp_path / "kafka" / "sources").iterdir())


def test_a_folder_without_its_marker_is_resolved_again(fake_mvn, tmp_path):
    (tmp_path / "kafka" / "lib").mkdir(parents=True)  # an interrupted copy by hand, say
    resolve("kafka", [KAFKA], root=tmp_path)
    assert len(fake_mvn.calls) == 1 and (tmp_path / "kafka" / ".complete").exists()


def test_a_failed_resolve_leaves_the_old_cache_and_no_half_one(fake_mvn, tmp_path):
    resolve("kafka", [KAFKA], root=tmp_path)
    fake_mvn.returncode, fake_mvn.output = 1, NOT_FOUND
    with pytest.raises(ResolveError) as err:
        resolve("kafka", ["org.apache.kafka:kafka_2.13:0.10.2.1"], root=tmp_path)
    assert str(err.value) == "blocked: org.apache.kafka:kafka_2.13:0.10.2.1 (not resolved by Maven Central)"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".kafka.lock", "kafka"]
    assert (tmp_path / "kafka" / ".complete").read_text() == f"lib {KAFKA}\n"


def test_an_interrupted_resolve_leaves_nothing_that_looks_complete(monkeypatch, tmp_path):
    def interrupted(cmd, **kwargs):
        props = dict(arg[2:].split("=", 1) for arg in cmd if arg.startswith("-D"))
        (jars.Path(props["hwcheck.lib"]) / "half.jar").write_bytes(b"")
        raise KeyboardInterrupt

    monkeypatch.setattr(jars.subprocess, "run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        resolve("kafka", [KAFKA], root=tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [".kafka.lock"]


def test_a_stale_temporary_folder_is_removed_under_the_lock(fake_mvn, tmp_path):
    (tmp_path / ".kafka.tmp-abc123" / "lib").mkdir(parents=True)  # a resolve killed by SIGKILL
    resolve("kafka", [KAFKA], root=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".kafka.lock", "kafka"]


def test_two_resolving_the_same_release_run_mvn_once(fake_mvn, tmp_path):
    """The second asks while the first's mvn runs: it waits on the lock, then finds the cache."""
    fake_mvn.delay = 0.3
    lines, results = [], []

    def one():
        results.append(resolve("kafka", [KAFKA], root=tmp_path, log=lines.append))

    first, second = threading.Thread(target=one), threading.Thread(target=one)
    first.start()
    assert fake_mvn.running.wait(5)
    second.start()
    first.join()
    second.join()
    assert len(fake_mvn.calls) == 1 and results == [tmp_path / "kafka" / "lib"] * 2
    assert "waiting for another process resolving kafka ..." in lines


def test_mvn_missing_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr(jars.shutil, "which", lambda name: None)
    monkeypatch.setattr(jars.subprocess, "run", no_mvn)
    with pytest.raises(ResolveError, match="^mvn not found on PATH: install Maven$"):
        resolve("kafka", [KAFKA], root=tmp_path)


def test_bad_names_are_refused_before_mvn(monkeypatch, tmp_path):
    monkeypatch.setattr(jars.subprocess, "run", no_mvn)
    for name in ["../kafka", ".hidden", ""]:
        with pytest.raises(ResolveError, match="bad cache name"):
            resolve(name, [KAFKA], root=tmp_path)
    with pytest.raises(ResolveError, match="bad coordinate"):
        resolve("kafka", [KAFKA], sources=["kafka_2.13"], root=tmp_path)


@pytest.mark.parametrize("output, asked, line", [
    (NOT_FOUND, ["org.apache.kafka:kafka_2.13:0.10.2.1"],
     "blocked: org.apache.kafka:kafka_2.13:0.10.2.1 (not resolved by Maven Central)"),
    (NOT_FOUND_BOTH, ["org.apache.kafka:kafka_2.13:4.9.9"],
     "blocked: org.apache.kafka:kafka_2.13:4.9.9 (not resolved by Maven Central)"),
    (NOT_FOUND_CACHED, ["org.apache.kafka:kafka_2.13:4.4.0"],
     "blocked: org.apache.kafka:kafka_2.13:4.4.0 sources jar (not resolved by Maven Central)"),
    (NOT_FOUND_DEPENDENCY, [KAFKA],
     "blocked: com.yammer.metrics:metrics-core:2.2.0 (not resolved by Maven Central, a dependency)"),
    (UNKNOWN_HOST, [KAFKA], "maven unreachable: Unknown host repo.maven.apache.org: Name or service not known"),
    (PLUGIN_REFUSED, [KAFKA], "maven unreachable: Connect to 127.0.0.1:9 [/127.0.0.1] failed: Connection refused"),
    (TIMED_OUT, [KAFKA], "maven unreachable: Connect to repo.maven.apache.org:443 "
                         "[repo.maven.apache.org/151.101.0.215] failed: Connect timed out"),
    (BAD_POM, [KAFKA], "mvn failed: Non-parseable POM /tmp/x/pom.xml: Unrecognised tag: 'dependenc' "
                       "@ line 9, column 16"),
    ("Error: JAVA_HOME is not defined correctly.\n  We cannot execute /nowhere/bin/java\n", [KAFKA],
     "mvn failed: We cannot execute /nowhere/bin/java"),
    ("", [KAFKA], "mvn failed: no output"),
])
def test_classify_makes_one_line_of_mvn_output(output, asked, line):
    assert classify(output, asked) == line


def test_java_missing_is_one_line(monkeypatch):
    monkeypatch.setenv("PATH", "")
    with pytest.raises(ResolveError, match="^java not found on PATH: install Java 17"):
        jars.java_version()


@pytest.mark.skipif(shutil.which("java") is None, reason="no java on PATH")
def test_java_version_of_the_java_on_path():
    assert jars.java_version() >= 8


def test_lib_size_counts_the_files_below(tmp_path):
    (tmp_path / "a.jar").write_bytes(b"x" * 10)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.jar").write_bytes(b"x" * 5)
    assert jars.lib_size(tmp_path) == 15


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("mvn") is None, reason="no mvn on PATH")
def test_resolve_a_tiny_artifact_through_the_real_mvn(tmp_path):
    """slf4j-reload4j pulls slf4j-api and reload4j: a transitive closure, a sources jar (about 3 s
    with Maven's plugins cached; a first mvn run on a fresh ~/.m2 fetches them first, 41 s seen)."""
    coordinate = "org.slf4j:slf4j-reload4j:1.7.36"
    lib = resolve("tiny", [coordinate], sources=[coordinate], root=tmp_path)
    assert sorted(p.name for p in lib.iterdir()) == [
        "reload4j-1.2.19.jar", "slf4j-api-1.7.36.jar", "slf4j-reload4j-1.7.36.jar"]
    assert [p.name for p in (lib.parent / "sources").iterdir()] == ["slf4j-reload4j-1.7.36-sources.jar"]
    with pytest.raises(ResolveError, match=r"^blocked: org\.slf4j:slf4j-reload4j:0\.0\.1 "):
        resolve("tiny", ["org.slf4j:slf4j-reload4j:0.0.1"], root=tmp_path)
