"""benchmarks/run.py: the table it prints and how it judges issue 8's targets."""

import importlib.util
import os
import subprocess
import sys

from hwcheck.spec import Config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = os.path.join(ROOT, "benchmarks", "run.py")


def load_run():
    spec = importlib.util.spec_from_file_location("bench_run", RUN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_table_has_one_row_per_cell_with_the_checkers_figures():
    env = {k: v for k, v in os.environ.items() if k not in ("TLC_JAR", "TLC_SPECS")}
    out = subprocess.run([sys.executable, RUN, "--rows", "hw", "--workers", "1,2", "--symmetry", "off"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.split()[:2] == ["hwcheck", "design"]]
    assert len(rows) == 2
    for line, workers in zip(rows, ("1", "2")):
        cells = line.split()
        assert cells[:6] == ["hwcheck", "design", "hw", "defaults,", "to", "counterexample"]
        assert cells[6:8] == ["off", workers] and "violated (12 steps)" in line and "27,920" in line


def test_targets_are_judged_on_the_figures_given():
    run = load_run()
    tlc = {"kip279": {"wall": 5.0, "distinct": 53_099, "how": "measured"},
           "kip320-3": {"wall": 600.0, "distinct": 9_985_570, "how": "measured"}}

    def fig(wall, distinct, rss=100.0, base=30.0):
        return {"wall": wall, "distinct": distinct, "rss": rss, "base": base}

    runs = {("kip279", False, 2): fig(1.0, 53_099),
            ("kip320-3", True, 2): fig(250.0, 1_665_204),                # 2.4x: short of 3x
            ("kip320-3", False, 1): fig(400.0, 10_000_000, rss=30.0 + 10_000_000 * 60 / 2**20),
            ("kip320-3", False, 2): fig(260.0, 10_000_000, rss=30.0 + 10_000_000 * 70 / 2**20)}
    lines = run.targets(runs, tlc, 2)
    assert lines[0].startswith("kip279") and lines[0].endswith(": met")
    assert "2.4x faster than TLC" in lines[1] and lines[1].endswith("NOT met")
    assert "60 bytes per visited state" in lines[2] and lines[2].endswith(": met")
    assert "70 bytes per visited state" in lines[3] and lines[3].endswith("NOT met")
    assert "2 workers 1.54x one worker" in lines[4] and lines[4].endswith("NOT met")
    runs[("kip279", False, 2)] = fig(1.0, 53_098)                         # a count that differs fails
    assert run.targets(runs, tlc, 2)[0].endswith("NOT met")


RF3 = os.path.join(ROOT, "benchmarks", "rf3.py")


def test_rf3_prints_a_row_per_run_and_leaves_no_temp_folder(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    out = subprocess.run([sys.executable, RF3, "--rows", "defaults", "--base", "none", "--plain", "--limit", "1"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    [row] = [line for line in out.stdout.splitlines() if line.startswith("defaults ")]
    cells = row.split()
    assert cells[1:4] == ["this", "tree", "(plain)"] and cells[5] in ("holds", "stopped")
    assert cells[4] == Config(mode="epoch").mode         # the newest mode of the code measured
    assert int(cells[6].replace(",", "")) > 0           # classes reached
    assert list(tmp_path.iterdir()) == []                # the temp folder is gone


def test_rf3_refuses_an_unknown_row_in_one_line():
    out = subprocess.run([sys.executable, RF3, "--rows", "crashes-9"], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and out.stderr.strip().splitlines() == [
        "rf3.py: unknown row 'crashes-9'; choose from " + ", ".join(load_rf3().ROWS) + ", one-fault, two-faults"]


def load_rf3():
    spec = importlib.util.spec_from_file_location("bench_rf3", RF3)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rf3_repeats_a_row_and_adds_the_median_run(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    out = subprocess.run([sys.executable, RF3, "--rows", "defaults", "--base", "none", "--plain", "--limit", "1",
                          "--repeat", "3"], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith("defaults ")]
    assert len(rows) == 4 and "median of 3" in rows[3] and "median" not in "".join(rows[:3])
    speeds = sorted(int(row.split()[-2].replace(",", "")) for row in rows[:3])
    assert int(rows[3].split()[-2].replace(",", "")) == speeds[1]     # classes/s of the middle run
    assert list(tmp_path.iterdir()) == []


def test_rf3_median_run_and_ratio():
    rf3 = load_rf3()
    run = lambda distinct, wall, complete=True: {"distinct": distinct, "wall": wall, "complete": complete}
    assert rf3.median_run([run(10, 4.0), run(10, 2.0), run(10, 3.0)])["wall"] == 3.0
    assert rf3.median_run([run(10, 4.0), run(10, 2.0)])["wall"] == 4.0      # the slower of two
    assert rf3.ratio([run(10, 4.0), run(10, 3.0)]) == "0.75x time"
    assert rf3.ratio([run(10, 4.0), run(30, 6.0, complete=False)]) == "2.00x classes/s"
    assert rf3.ratio([run(10, 4.0)]) == ""


def test_rf3_builds_this_tree_from_the_files_git_knows(tmp_path):
    """Not from the tree itself, whose ignored build/ folder may still hold modules deleted since."""
    tree, copy = tmp_path / "tree", tmp_path / "copy"
    tree.mkdir()
    git = lambda *args: subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True)
    git("init", "-q")
    (tree / ".gitignore").write_text("build/\n")
    (tree / "pkg").mkdir()
    (tree / "pkg" / "kept.py").write_text("1\n")
    (tree / "pkg" / "gone.py").write_text("2\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x")
    (tree / "pkg" / "gone.py").unlink()                              # deleted, not yet committed
    (tree / "pkg" / "new.py").write_text("3\n")                      # untracked, not ignored
    (tree / "build" / "lib" / "pkg").mkdir(parents=True)
    (tree / "build" / "lib" / "pkg" / "stale.py").write_text("4\n")  # what an old build left
    load_rf3().copy_of_tree(str(tree), str(copy))
    assert sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file()) == [
        ".gitignore", "pkg/kept.py", "pkg/new.py"]
