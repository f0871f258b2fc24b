"""One Kafka release's jars, resolved from Maven Central by ``mvn`` into a per-user cache.

``hwcheck reproduce`` runs real brokers of the release a counterexample is about; their classpath
is the release's ``kafka_2.xx`` artifact with its runtime dependencies and a logging backend, as
published on Maven Central (no distribution tarball, no build). ``resolve`` writes a generated pom
that depends on the coordinates asked and lets ``mvn dependency:copy-dependencies`` copy them with
their transitive runtime dependencies to ``<root>/<name>/lib/``; the ``-sources`` jars asked (no
dependencies) go to ``<root>/<name>/sources/``, so a trace can be read beside the code it runs.

The cache lives outside the repository (``cache_root``). A release is resolved once: the marker
``.complete``, written last, records the coordinates asked, and a later call asking the same ones
returns without running mvn or touching the network. The release is built in a temporary folder
beside its final place and renamed into it, under a file lock, so an interrupted resolve never
leaves a half cache that looks complete and two processes resolving the same release wait for
each other instead of colliding.

A failure is one line a user can act on (``ResolveError``): ``blocked: <coordinate>`` when Maven
Central does not have it, ``maven unreachable: <reason>`` when mvn could not connect, else
mvn's own last error line.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

# The plugin is pinned: an unpinned one is whatever the Maven at hand defaults to (2.8 for 3.8.7).
DEPENDENCY_PLUGIN = "3.8.1"
MARKER = ".complete"
TIMEOUT = 900  # seconds; Kafka 4.1.1 with its dependencies is 43 MB
_PART = re.compile(r"[A-Za-z0-9_.\-]+")


class ResolveError(Exception):
    """One line a user can act on, e.g. ``maven unreachable: ...``, ``blocked:
    org.apache.kafka:kafka_2.11:0.10.2.1 (not resolved by Maven Central)``, ``mvn not found on
    PATH: install Maven``, ``java not found on PATH: install Java 17``."""


def cache_root() -> Path:
    """Where resolved releases live: ``$HWCHECK_KAFKA_CACHE`` if set, else
    ``$XDG_CACHE_HOME/hwcheck/kafka``, else ``~/.cache/hwcheck/kafka`` (never inside the
    repository: the jars are large and the same for every checkout).
    """
    if os.environ.get("HWCHECK_KAFKA_CACHE"):
        return Path(os.environ["HWCHECK_KAFKA_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "hwcheck" / "kafka"


def _split(coordinate: str) -> tuple[str, str, str]:
    """``group:artifact:version`` as its three parts; anything else (an empty part, a character
    that is not one of Maven's, which also keeps the pom well formed) is refused."""
    parts = coordinate.split(":")
    if len(parts) != 3 or not all(_PART.fullmatch(p) for p in parts):
        raise ResolveError(f"bad coordinate {coordinate!r}: expected group:artifact:version")
    return parts[0], parts[1], parts[2]


def pom(artifacts: Sequence[str], sources: Sequence[str] = ()) -> str:
    """The generated pom: a dependency on each of ``artifacts``, and on the ``sources`` jar of each
    of ``sources`` with every transitive dependency excluded. Two executions of the dependency
    plugin, run by one mvn (one JVM start): ``lib`` copies the runtime closure without the sources
    jars, ``sources`` copies the sources jars alone; their folders are the properties
    ``hwcheck.lib`` and ``hwcheck.sources``, given on mvn's command line.

    >>> text = pom(["org.slf4j:slf4j-api:1.7.36"], sources=["org.slf4j:slf4j-api:1.7.36"])
    >>> print(text[text.index("  <dependencies>"):text.index("  <build>")], end="")
      <dependencies>
        <dependency>
          <groupId>org.slf4j</groupId>
          <artifactId>slf4j-api</artifactId>
          <version>1.7.36</version>
        </dependency>
        <dependency>
          <groupId>org.slf4j</groupId>
          <artifactId>slf4j-api</artifactId>
          <version>1.7.36</version>
          <classifier>sources</classifier>
          <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>
        </dependency>
      </dependencies>
    >>> pom(["kafka_2.13:4.1.1"])
    Traceback (most recent call last):
    ...
    hwcheck.cluster.jars.ResolveError: bad coordinate 'kafka_2.13:4.1.1': expected group:artifact:version
    """
    deps = []
    asked = [(c, None) for c in artifacts] + [(c, "sources") for c in sources]
    for coordinate, classifier in dict.fromkeys(asked):  # once each: mvn warns of duplicates
        group, artifact, version = _split(coordinate)
        extra = ("" if classifier is None else
                 f"      <classifier>{classifier}</classifier>\n"
                 "      <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId>"
                 "</exclusion></exclusions>\n")
        deps.append("    <dependency>\n"
                    f"      <groupId>{group}</groupId>\n"
                    f"      <artifactId>{artifact}</artifactId>\n"
                    f"      <version>{version}</version>\n"
                    f"{extra}"
                    "    </dependency>\n")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
            "  <modelVersion>4.0.0</modelVersion>\n"
            "  <groupId>hwcheck</groupId>\n"
            "  <artifactId>kafka-jars</artifactId>\n"
            "  <version>0</version>\n"
            "  <packaging>pom</packaging>\n"
            "  <dependencies>\n"
            f"{''.join(deps)}"
            "  </dependencies>\n"
            "  <build>\n"
            "    <plugins>\n"
            "      <plugin>\n"
            "        <groupId>org.apache.maven.plugins</groupId>\n"
            "        <artifactId>maven-dependency-plugin</artifactId>\n"
            f"        <version>{DEPENDENCY_PLUGIN}</version>\n"
            "        <executions>\n"
            "          <execution>\n"
            "            <id>lib</id>\n"
            "            <configuration>\n"
            "              <outputDirectory>${hwcheck.lib}</outputDirectory>\n"
            "              <includeScope>runtime</includeScope>\n"
            "              <excludeClassifiers>sources</excludeClassifiers>\n"
            "            </configuration>\n"
            "          </execution>\n"
            "          <execution>\n"
            "            <id>sources</id>\n"
            "            <configuration>\n"
            "              <outputDirectory>${hwcheck.sources}</outputDirectory>\n"
            "              <includeClassifiers>sources</includeClassifiers>\n"
            "              <excludeTransitive>true</excludeTransitive>\n"
            "            </configuration>\n"
            "          </execution>\n"
            "        </executions>\n"
            "      </plugin>\n"
            "    </plugins>\n"
            "  </build>\n"
            "</project>\n")


_NOT_FOUND = re.compile(r"(?:Could not find artifact|Failure to find) ([\w.\-:]+)|([\w.\-:]+) was not found in ")
_CONNECTION = re.compile(r"Connect to |Unknown ?Host|Network is unreachable|timed out|Connection refused|"
                         r"No route to host|name resolution|PKIX|handshake|Connection reset", re.I)
_BOILERPLATE = re.compile(r"^$|^To see the full stack trace|^Re-run Maven|^For more information about|"
                          r"^\[Help \d+\]")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _asked(found: str, artifacts: Sequence[str]) -> str:
    """A coordinate in mvn's spelling (``g:a:jar:v`` or ``g:a:jar:sources:v``) as the user wrote
    it, saying whether it is the sources jar and whether it was asked or is a dependency."""
    parts = found.split(":")
    if len(parts) < 4:
        return found
    mine = f"{parts[0]}:{parts[1]}:{parts[-1]}"
    suffix = " sources jar" if len(parts) == 5 and parts[3] == "sources" else ""
    kind = "" if mine in artifacts else ", a dependency"
    return f"{mine}{suffix} (not resolved by Maven Central{kind})"


def classify(output: str, artifacts: Sequence[str]) -> str:
    """The one line to tell a user about mvn's failed run, from its output: ``blocked:`` with
    the coordinate Maven Central does not have (a jar before a sources jar: when a release is
    missing mvn may name either); ``maven unreachable:`` with the innermost cause when mvn could
    not connect; else ``mvn failed:`` with mvn's last error line that is not advice on re-running
    it. ``artifacts`` are the coordinates asked (``group:artifact:version``).

    >>> out = ("[ERROR] Failed to execute goal on project kafka-jars: Could not resolve dependencies"
    ...        " for project hwcheck:kafka-jars:pom:0: Could not find artifact"
    ...        " org.apache.kafka:kafka_2.13:jar:0.10.2.1 in central"
    ...        " (https://repo.maven.apache.org/maven2) -> [Help 1]")
    >>> classify(out, ["org.apache.kafka:kafka_2.13:0.10.2.1"])
    'blocked: org.apache.kafka:kafka_2.13:0.10.2.1 (not resolved by Maven Central)'
    """
    output = _ANSI.sub("", output)
    missing = [m.group(1) or m.group(2) for m in _NOT_FOUND.finditer(output)]
    if missing:
        jars = [m for m in missing if ":sources:" not in m]
        return f"blocked: {_asked((jars or missing)[0].rstrip(':.'), artifacts)}"
    raw = output.splitlines()
    lines = [re.sub(r"\s*-> \[Help \d+\]$", "", re.sub(r"^\[(ERROR|FATAL|WARNING|INFO)\] ?", "", line)).strip()
             for line in raw]
    for line in lines:
        if _CONNECTION.search(line) or "Could not transfer" in line:
            segments = line.split(": ")
            at = next((i for i, s in enumerate(segments) if _CONNECTION.search(s)), None)
            if at is None:
                at = next(i for i, s in enumerate(segments) if "Could not transfer" in s)
            return f"maven unreachable: {': '.join(segments[at:])[:200]}"
    errors = [line for r, line in zip(raw, lines) if r.startswith(("[ERROR]", "[FATAL]")) and not _BOILERPLATE.search(line)]
    last = errors[-1] if errors else next((line for line in reversed(lines) if line), "no output")
    return f"mvn failed: {last[:300]}"


def lib_size(path) -> int:
    """Bytes of the files under ``path`` (a release's ``lib`` folder, say)."""
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def parse_java_version(text: str) -> Optional[int]:
    """The major version in ``java -version``'s output (``1.8`` is 8), or None.

    >>> parse_java_version('openjdk version "17.0.15" 2025-04-15')
    17
    >>> parse_java_version('Picked up JAVA_TOOL_OPTIONS: -Xss1m\\njava version "1.8.0_292"')
    8
    >>> parse_java_version('openjdk version "21-ea" 2023-09-19')
    21
    """
    found = re.search(r'version "(?:1\.)?(\d+)', text)
    return int(found.group(1)) if found else None


def java_version(java: str = "java") -> int:
    """The major version of ``java`` (a name on PATH or a path): brokers of each release need
    their own range (Kafka 4.x needs 17; 0.10 and 0.11 do not start on 17)."""
    exe = shutil.which(java)
    if exe is None:
        raise ResolveError(f"java not found on PATH: install Java 17 (looked for {java!r})")
    proc = subprocess.run([exe, "-version"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    version = parse_java_version(proc.stderr + proc.stdout)
    if version is None:
        first = (proc.stderr + proc.stdout).strip().splitlines() or ["no output"]
        raise ResolveError(f"cannot read the version of {exe}: {first[0]}")
    return version


def _wanted(artifacts: Sequence[str], sources: Sequence[str]) -> str:
    """The marker's text: the coordinates asked, sorted, once each, one a line."""
    return "".join(sorted({f"lib {c}\n" for c in artifacts}) + sorted({f"sources {c}\n" for c in sources}))


def _complete(folder: Path, wanted: str) -> bool:
    marker = folder / MARKER
    try:
        return marker.read_text() == wanted and (folder / "lib").is_dir()
    except OSError:
        return False


def resolve(name: str, artifacts: Sequence[str], *, sources: Sequence[str] = (), root: Path | None = None,
            log: Callable[[str], None] | None = None) -> Path:
    """``<root>/<name>/lib``, holding the jars of ``artifacts`` and their transitive runtime
    dependencies, with the ``-sources`` jar of each of ``sources`` in ``<root>/<name>/sources``;
    ``root`` is ``cache_root()`` unless given. Returns at once, without mvn, if the cache already
    holds exactly these coordinates; otherwise resolves (again) and replaces the folder.
    ``log``, if given, receives short progress lines. Raises ResolveError, one line."""
    if not _PART.fullmatch(name) or name.startswith("."):
        raise ResolveError(f"bad cache name {name!r}")
    for coordinate in [*artifacts, *sources]:
        _split(coordinate)
    root = Path(root) if root is not None else cache_root()
    folder = root / name
    wanted = _wanted(artifacts, sources)
    if _complete(folder, wanted):
        return folder / "lib"
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ResolveError("mvn not found on PATH: install Maven")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{name}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if log:
                log(f"waiting for another process resolving {name} ...")
            fcntl.flock(lock, fcntl.LOCK_EX)
        if _complete(folder, wanted):  # the other process resolved it meanwhile
            return folder / "lib"
        for stale in root.glob(f".{name}.tmp-*"):  # left by a killed resolve; we hold the lock
            shutil.rmtree(stale, ignore_errors=True)
        _resolve_into(mvn, folder, artifacts, sources, wanted, log)
    return folder / "lib"


def _resolve_into(mvn: str, folder: Path, artifacts: Sequence[str], sources: Sequence[str], wanted: str,
                  log: Callable[[str], None] | None) -> None:
    """Run mvn into a temporary folder beside ``folder``, write the marker last, then swap it in."""
    name = folder.name
    count = len(set(artifacts) | set(sources))
    if log:
        log(f"resolving {name} ({count} coordinate{'s' if count != 1 else ''}) ...")
    start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=folder.parent))
    try:
        tmp.chmod(0o755)  # mkdtemp's 0700 would stay on the release folder once renamed
        (tmp / "lib").mkdir()
        (tmp / "sources").mkdir()
        (tmp / "pom.xml").write_text(pom(artifacts, sources))
        # the plugin by its full coordinates: a prefix (``dependency:``) is looked up in a
        # repository's metadata, which fails offline and with mirrors even when the plugin is local
        goal = f"org.apache.maven.plugins:maven-dependency-plugin:{DEPENDENCY_PLUGIN}:copy-dependencies"
        goals = [f"{goal}@lib"] + ([f"{goal}@sources"] if sources else [])
        cmd = [mvn, "-B", "-q", "-f", str(tmp / "pom.xml"), *goals,
               f"-Dhwcheck.lib={tmp / 'lib'}", f"-Dhwcheck.sources={tmp / 'sources'}"]
        try:
            proc = subprocess.run(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  stdin=subprocess.DEVNULL, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            raise ResolveError(f"maven unreachable: mvn did not finish in {TIMEOUT} s") from None
        if proc.returncode != 0:
            raise ResolveError(classify(proc.stdout, [*artifacts, *sources]))
        shutil.rmtree(tmp / "target", ignore_errors=True)
        (tmp / MARKER).write_text(wanted)
        old = None
        if folder.exists():
            old = folder.parent / f".{name}.tmp-old-{os.getpid()}"
            folder.rename(old)
        tmp.rename(folder)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if log:
        jars = len(list((folder / "lib").glob("*.jar")))
        extra = f", {len(list((folder / 'sources').glob('*.jar')))} sources jars" if sources else ""
        log(f"resolved {name}: {jars} jars, {lib_size(folder / 'lib') / 1e6:.0f} MB{extra} "
            f"in {time.monotonic() - start:.1f} s")
