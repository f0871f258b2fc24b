"""The screenshots of the explorer in docs/img/, made by a person, never by the tests:

    python -m hwcheck.explore.screenshots            # writes docs/img/explore-*.png (from the project's root)

It needs Debian's /usr/bin/chromium and the playwright package (``pip install '.[test]'``), serves
the page on 127.0.0.1 in a thread, and takes two pictures: KIP-101 scenario 1 clicked through in
mode ``hw`` up to the loss (NoCommittedDataLoss red), and KAFKA-15583's power-failure loss opened
under ``kip966`` (the step 4.0 refuses marked). Only the top of each page (the state, the
invariants, the buttons) is taken, at 1200x820, to keep the files small.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


def _served(model):
    from .server import make_server
    from .session import Session
    server = make_server(Session(model))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    return server, thread


def _wait_step(page, step: int) -> None:
    page.wait_for_function(f"document.getElementById('counter').textContent.startsWith('step {step} /')")


def main(root: str = ".") -> int:
    from playwright.sync_api import sync_playwright

    from hwcheck.spec import Config, Model
    root_path = Path(root)
    out = root_path / "docs" / "img"
    loss = root_path / "counterexamples" / "hw-data-loss.itf.json"
    kip966 = root_path / "counterexamples" / "kafka15583-power-failure-min-isr-2-loss.itf.json"
    labels = [s["#meta"]["action"] for s in json.loads(loss.read_text())["states"]][1:]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 820})
            server, thread = _served(Model(Config(mode="hw")))
            try:
                page.goto(server.url)
                for i, label in enumerate(labels, start=1):
                    page.click(f'#actions button.action[data-label="{label}"]')
                    _wait_step(page, i)
                page.screenshot(path=str(out / "explore-hw-data-loss.png"))
            finally:
                server.shutdown(), server.server_close(), thread.join()
            server, thread = _served(Model(Config()))
            try:
                page.goto(server.url)
                page.wait_for_selector("button.action")
                page.set_input_files("#open", str(kip966))
                page.wait_for_function("document.getElementById('counter').textContent === 'step 0 / 13'")
                page.select_option("#mode", "kip966")
                page.click("#switch")
                page.wait_for_selector("#refusal:not([hidden])")
                page.click("#path tr[data-step='9']")
                _wait_step(page, 9)
                page.evaluate("window.scrollTo(0, 0)")
                page.screenshot(path=str(out / "explore-kip966-refused.png"))
            finally:
                server.shutdown(), server.server_close(), thread.join()
        finally:
            browser.close()
    for name in ("explore-hw-data-loss.png", "explore-kip966-refused.png"):
        path = out / name
        print(f"{path}: {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
