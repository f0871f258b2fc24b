"""The HTML trace report in a real headless Chromium (Debian's /usr/bin/chromium via Playwright).

CI (CI=true, set by .ci/run, which installs chromium) always runs it; elsewhere it skips, saying
why, only when chromium or playwright is missing. HWCHECK_UPDATE_SCREENSHOTS=1 rewrites the
screenshot docs/ embeds (docs/img/report-hw-data-loss.png). The browser is conftest's
``browser_page``.
"""

import json
import os
from pathlib import Path

from hwcheck.checker.trace import load_itf, replay
from hwcheck.cli.html import render_html

from .conftest import ROOT, run_cli

SCREENSHOT = ROOT / "docs" / "img" / "report-hw-data-loss.png"
CX = ROOT / "counterexamples"


def _report(tmp_path, trace: Path) -> Path:
    out = tmp_path / "report.html"
    proc = run_cli("replay", trace, "--html", out, "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert f"html: {out}" in proc.stdout
    return out


def test_stepping_through_the_hw_loss_shows_the_violation_at_its_step(tmp_path, browser_page):
    page = browser_page
    trace = CX / "hw-data-loss.itf.json"
    steps = len(json.loads(trace.read_text())["states"]) - 1
    page.goto(_report(tmp_path, trace).as_uri() + "#step=0")

    # the initial state (#step=0): one lane per replica, nothing broken yet
    assert page.inner_text("#counter") == f"step 0 / {steps}"
    assert page.locator("#lanes g.lane").count() == 2
    assert not page.locator("#violation").is_visible()

    # step through with the keyboard: every step's action as the caption, no violation before the last
    actions = [s["#meta"]["action"] for s in json.loads(trace.read_text())["states"]]
    for i in range(1, steps + 1):
        page.keyboard.press("ArrowRight")
        assert page.inner_text("#caption") == f"step {i}: {actions[i]}"
        assert page.locator("#violation").is_visible() == (i == steps), f"step {i}"
    page.keyboard.press("ArrowRight")                        # past the end: stays at the end
    assert page.inner_text("#counter") == f"step {steps} / {steps}"

    # the end: the violation is shown, highlighted as happening now, and the lost record drawn
    banner = page.locator("#violation")
    assert banner.get_attribute("class") == "now"
    assert f"NoCommittedDataLoss broken (first at step {steps})" in banner.inner_text()
    assert "the violation this trace was stored for" in banner.inner_text()
    # what breaks it, in the spec's words (spec/invariants.py why_broken)
    assert "record 0, acknowledged at offset 0, is not there on r1" in banner.locator(".why").inner_text()
    assert page.evaluate("document.body.dataset.broken") == "NoCommittedDataLoss"
    missing = page.locator("#lanes rect.missing")
    assert missing.count() == 1 and missing.get_attribute("data-record") == "0"
    # r0 still holds the acknowledged record 0 at offset 0, written in epoch 0
    cell = page.locator('#lanes g[data-replica="r0"] rect.cell')
    assert (cell.get_attribute("data-offset"), cell.get_attribute("data-record"),
            cell.get_attribute("data-epoch")) == ("0", "0", "0")
    assert page.locator("#lanes .hw").count() == 4 and page.locator("#lanes .leo").count() == 4
    assert page.locator("#timeline .tmessage").count() >= 3          # fetches and responses

    if os.environ.get("HWCHECK_UPDATE_SCREENSHOTS") == "1":
        page.screenshot(path=str(SCREENSHOT), full_page=True)
    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000

    # back to the start with Home: the banner goes away; the buttons move too
    page.keyboard.press("Home")
    assert not page.locator("#violation").is_visible()
    page.click("#last")
    assert page.locator("#violation").is_visible()
    page.click("#prev")
    assert page.inner_text("#counter") == f"step {steps - 1} / {steps}"

    assert page.errors == []
    assert all(url.startswith("file://") for url in page.requests), page.requests   # no network


def test_the_report_opens_at_the_violation_and_links_to_steps(tmp_path, browser_page):
    page = browser_page
    trace = CX / "hw-data-loss.itf.json"
    steps = len(json.loads(trace.read_text())["states"]) - 1
    report = _report(tmp_path, trace).as_uri()
    page.goto(report)                                           # no #step: the step the trace is for
    assert page.inner_text("#counter") == f"step {steps} / {steps}" and page.locator("#violation").is_visible()
    assert page.evaluate("location.hash") == f"#step={steps}"
    page.goto(report + "#step=4")                                # a link to a step opens there
    page.reload()
    assert page.inner_text("#counter") == f"step 4 / {steps}"
    page.locator('#steps li[data-step="7"]').click()             # the list of steps moves, and the address follows
    assert page.inner_text("#counter") == f"step 7 / {steps}" and page.evaluate("location.hash") == "#step=7"
    assert page.locator("#steps li.current").get_attribute("data-step") == "7"
    assert page.locator("#steps li").count() == steps + 1
    assert "NoCommittedDataLoss" in page.locator(f'#steps li[data-step="{steps}"]').inner_text()
    page.evaluate("location.hash = '#step=2'")                   # editing the address moves too
    page.wait_for_function("document.getElementById('counter').textContent.startsWith('step 2 /')")
    assert page.errors == []


def test_messages_in_flight_and_the_epoch_cache_are_drawn(tmp_path, browser_page):
    """kip380's power-failure loss with min ISR 2: a message drawn as an arrow between lanes, the epoch caches."""
    page = browser_page
    trace = CX / "kip380-power-failure-min-isr-2-loss.itf.json"
    doc = json.loads(trace.read_text())
    page.goto(_report(tmp_path, trace).as_uri())
    with_message = next(i for i, s in enumerate(doc["states"]) if s["inflight"])
    page.fill("#slider", str(with_message))
    page.dispatch_event("#slider", "input")
    assert page.inner_text("#counter").startswith(f"step {with_message} /")
    [(follower, msg)] = doc["states"][with_message]["inflight"].items()
    arrow = page.locator("#lanes path.message")
    assert arrow.count() == 1 and arrow.get_attribute("data-type") == msg["type"]
    assert "cache e0@0" in page.locator("#lanes").text_content()
    page.click(f'#timeline rect.col[data-step="{len(doc["states"]) - 1}"]')
    assert "NoCommittedDataLoss" in page.inner_text("#violation")
    assert page.errors == []


def test_a_divergence_outlines_the_cells_that_disagree(tmp_path, browser_page):
    """Unclean election with min ISR 2: r0 and r1 hold different records at an offset below both HWs."""
    page = browser_page
    trace = CX / "kip380-unclean-min-isr-2-divergence.itf.json"
    last = json.loads(trace.read_text())["states"][-1]
    page.goto(_report(tmp_path, trace).as_uri() + "#step=0")
    assert page.locator("#lanes rect.culprit").count() == 0
    page.keyboard.press("End")
    assert "NoLogDivergence broken" in page.inner_text("#violation")
    culprits = page.locator("#lanes rect.culprit")
    assert culprits.count() == 2
    cells = {(c.get_attribute("data-offset"), c.get_attribute("data-record"), c.get_attribute("data-epoch"))
             for c in culprits.all()}
    offset = int(next(iter(cells))[0])
    expected = {(str(offset), str(r["log"][offset]["record"]), str(r["log"][offset]["epoch"]))
                for r in last["replicas"].values()}
    assert cells == expected and len(expected) == 2          # the same offset, two different entries
    assert page.errors == []


# Every label of the page at the step shown, or at every step (everySteps): its box (an SVG text, or a line of an HTML text), the
# part of it in sight when the drawing scrolls sideways in its own box (.scroll), and what is wrong:
# two labels that intersect, a label outside the window (not in a scrolling box), a label cut by
# the edge of its drawing, a page wider than the window.
LABEL_FAULTS = r"""(everyStep) => {
  const faults = [], vw = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > vw) faults.push(`the page is ${document.documentElement.scrollWidth} px wide`);
  const key = (k) => document.dispatchEvent(new KeyboardEvent("keydown", {key: k, bubbles: true}));
  if (everyStep) key("Home");
  for (let step = Number(document.body.dataset.step); ; step++) {
    const boxes = [];
    for (const t of document.querySelectorAll("svg text")) {
      const r = t.getBoundingClientRect(), s = t.ownerSVGElement.getBoundingClientRect();
      if (r.left < s.left - 0.5 || r.right > s.right + 0.5 || r.top < s.top - 0.5 || r.bottom > s.bottom + 0.5)
        faults.push(`step ${step}: "${t.textContent}" cut by its drawing's edge`);
      if (t.textContent.includes("[object")) faults.push(`step ${step}: "${t.textContent}"`);
      const box = t.closest(".scroll");
      if (!box) { boxes.push([r, t.textContent]); continue; }
      const c = box.getBoundingClientRect(), left = Math.max(r.left, c.left), right = Math.min(r.right, c.right);
      if (right > left) boxes.push([new DOMRect(left, r.top, right - left, r.height), t.textContent]);
    }
    const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n; (n = walk.nextNode());) {
      const p = n.parentElement;
      if (!n.textContent.trim() || p.closest("svg, script") || !p.getClientRects().length) continue;
      const range = document.createRange();
      range.selectNodeContents(n);
      for (const r of range.getClientRects()) if (r.width > 0) boxes.push([r, n.textContent.trim()]);
    }
    for (const [r, text] of boxes)
      if (r.left < -0.5 || r.right > vw + 0.5) faults.push(`step ${step}: "${text}" outside the window`);
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, ta] = boxes[i], [b, tb] = boxes[j];
        if (Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5)
          faults.push(`step ${step}: "${ta}" overlaps "${tb}"`);
      }
    if (document.body.dataset.step !== String(step)) throw new Error("lost step " + step);
    if (!everyStep || document.body.dataset.step === document.getElementById("slider").max) break;
    key("ArrowRight");
  }
  return [...new Set(faults)];
}"""


def _page(tmp_path, name: str) -> str:
    """The report of a curated trace, made in this process (no CLI to start), as a file: address."""
    trace = CX / f"{name}.itf.json"
    done = replay(load_itf(trace.read_text()))
    out = tmp_path / f"{name}.html"
    out.write_text(render_html(done.model, done.trace, trace.name, done.trace.invariant))
    return out.as_uri()


def _label_faults(page, width: int, every_step: bool) -> list:
    page.set_viewport_size({"width": width, "height": 900})
    page.evaluate("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    return page.evaluate(LABEL_FAULTS, every_step)


def test_no_two_labels_overlap_at_any_width(tmp_path, browser_page):
    """The 2-replica trace with the longest logs and steps (a truncating follower, OffsetsForLeaderEpoch
    and its response) and the 3-replica loss, from a phone's width to a wide screen: no label
    intersects another, none leaves the window (the drawings scroll sideways in their own box), none
    is cut off. Every step at 360 px (the most wrapping) and 1920 px (the whole drawing in sight),
    the step the page opens at in between (the drawings' labels do not move with the width)."""
    page = browser_page
    for name in ("kip101-divergence-kafka-6361", "kafka19522-3-replicas-crash-and-power-failure-loss"):
        page.goto(_page(tmp_path, name))
        for width in (800, 1280, 360, 1920):
            faults = _label_faults(page, width, every_step=width in (360, 1920))
            assert faults == [], f"{name} at {width} px: {faults[:8]}"
    # a FetchResponse with a diverging epoch (a field that is an object), one field a line
    page.goto(_page(tmp_path, "kafka10554-kafka-13141-loss") + "#step=8")
    assert page.locator("#lanes path.message").get_attribute("data-type") == "FetchResponse"
    assert "diverging_epoch={epoch=0 end_offset=0}" in page.locator("#lanes").text_content()
    for width in (360, 1920):
        assert _label_faults(page, width, every_step=False) == [], width
    assert page.errors == []


def test_the_docs_embed_the_screenshot():
    assert SCREENSHOT.exists() and SCREENSHOT.stat().st_size > 10_000
    assert "img/report-hw-data-loss.png" in (ROOT / "docs" / "cli.md").read_text()


def test_html_refuses_to_overwrite_and_other_families(tmp_path):
    out = tmp_path / "mine.html"
    out.write_text("precious")
    proc = run_cli("replay", CX / "hw-data-loss.itf.json", "--html", out)
    assert proc.returncode == 2 and out.read_text() == "precious"
    assert proc.stderr.strip().splitlines() == [f"hwcheck: error: {out} exists; not overwriting it "
                                                "(use --force or another path)"]
    assert run_cli("replay", CX / "hw-data-loss.itf.json", "--html", out, "--force").returncode == 0
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert " src=" not in page and " href=" not in page        # self-contained: nothing to fetch
