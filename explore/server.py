"""The explorer's HTTP server: stdlib ``ThreadingHTTPServer`` bound to 127.0.0.1, serving
``page.html`` and a JSON API over one :class:`~hwcheck.explore.session.Session`.

API (every answer JSON; a refused request is ``{"error": "<one line>"}`` with status 400):

- ``GET /api/view``: the view at the cursor (session.py ``Session.view``);
- ``POST /api/step {"action": "leader_handle_fetch(r0,r1)"}``, ``POST /api/goto {"step": 3}``,
  ``POST /api/back``, ``POST /api/forward``, ``POST /api/reset``: move, answer the new view;
- ``POST /api/open {"trace": "<ITF text>", "name": "x.itf.json"}``: step through a trace;
- ``POST /api/mode {"mode": "kip966"}``: the path's steps under another mode (differential);
- ``GET /api/path.itf.json``: the path up to the cursor as ITF (``hwcheck replay`` takes it);
- ``POST /api/search {"invariant": "NoCommittedDataLoss"}``, ``GET /api/search``,
  ``POST /api/search/stop``, ``POST /api/search/take``: bfs from the current state for the
  shortest way to break the invariant, its progress, its stop, and its continuation put after
  the cursor (search.py); ``POST /api/search {"shorter": true}``: bfs from the initial state for
  the shortest path to the current state, which ``take`` puts in place of the path walked.

Requests whose Host is not the address served (127.0.0.1:PORT or localhost:PORT) are refused
(403), and so are POSTs that are not ``application/json`` (a page of another site cannot send
those without the browser asking first).

>>> from hwcheck.spec import Config, Model
>>> from hwcheck.explore.session import Session
>>> server = make_server(Session(Model(Config(mode="hw"))))
>>> server.server_address[0], server.server_address[1] > 0
('127.0.0.1', True)
>>> server.server_close()
"""

from __future__ import annotations

import json
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources

from hwcheck.checker.trace import TraceError, load_itf

from .search import REACHES, Reaching, Search
from .session import ExploreError, Session

HOST = "127.0.0.1"
MAX_BODY = 16 * 1024 * 1024


def page() -> bytes:
    return resources.files("hwcheck.explore").joinpath("page.html").read_bytes()


class ExploreServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, session: Session, port: int = 0):
        self.session = session
        self.lock = threading.Lock()
        self.search = None
        super().__init__((HOST, port), Handler)
        self.port = self.server_address[1]
        self.hosts = {f"{HOST}:{self.port}", f"localhost:{self.port}"}

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def stop_search(self) -> None:
        if self.search is not None:
            self.search.stop()
            self.search.thread.join()

    def server_close(self) -> None:
        self.stop_search()
        super().server_close()


def make_server(session: Session, port: int = 0) -> ExploreServer:
    """A server bound to 127.0.0.1:``port`` (0: any free port); OSError if the port is taken."""
    return ExploreServer(session, port)


class Handler(BaseHTTPRequestHandler):
    server: ExploreServer
    server_version = "hwcheck-explore"

    def log_message(self, format, *args):      # no access log on the terminal
        pass

    # ------------------------------------------------------------ plumbing
    def _send(self, status: int, body: bytes, content_type: str, extra: dict = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, value, status: int = 200, extra: dict = None) -> None:
        self._send(status, json.dumps(value).encode(), "application/json", extra)

    def _error(self, status: int, message: str) -> None:
        self._json({"error": message}, status)

    def _host_ok(self) -> bool:
        if self.headers.get("Host") not in self.server.hosts:
            self._error(HTTPStatus.FORBIDDEN, f"Host {self.headers.get('Host')!r} refused: "
                                              f"this server answers {self.server.url} only")
            return False
        return True

    def _body(self) -> dict:
        kind = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        if kind != "application/json":
            raise ExploreError("POST bodies are application/json")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise ExploreError("Content-Length is not a number") from None
        if not 0 <= length <= MAX_BODY:
            raise ExploreError(f"request body over {MAX_BODY} bytes")
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw or b"{}")
        except (ValueError, RecursionError):
            raise ExploreError("request body is not JSON") from None
        if not isinstance(body, dict):
            raise ExploreError("request body is not a JSON object")
        return body

    # ------------------------------------------------------------ GET
    def do_GET(self):
        if not self._host_ok():
            return
        path = self.path.split("?")[0]
        srv = self.server
        if path in ("/", "/index.html"):
            return self._send(200, page(), "text/html; charset=utf-8")
        try:
            with srv.lock:
                if path == "/api/view":
                    return self._json(self._view())
                if path == "/api/path.itf.json":
                    doc = srv.session.itf()
                    name = f"hwcheck-explore-{srv.session.mode_name}-{srv.session.cursor}-steps.itf.json"
                    return self._send(200, (json.dumps(doc, indent=1) + "\n").encode(), "application/json",
                                      {"Content-Disposition": f'attachment; filename="{name}"'})
                if path == "/api/search":
                    return self._json(srv.search.report() if srv.search else {"state": "none"})
        except Exception as e:            # a bug: one line to the page, the server keeps serving
            return self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"internal error: {type(e).__name__}: {e}")
        self._error(HTTPStatus.NOT_FOUND, f"no such page: {path}")

    # ------------------------------------------------------------ POST
    def do_POST(self):
        if not self._host_ok():
            return
        path = self.path.split("?")[0]
        srv = self.server
        try:
            body = self._body()
            with srv.lock:
                s = srv.session
                if path == "/api/step":
                    s.apply(_text(body, "action"))
                elif path == "/api/goto":
                    s.goto(body.get("step"))
                elif path == "/api/back":
                    s.back()
                elif path == "/api/forward":
                    s.forward()
                elif path == "/api/reset":
                    s.reset()
                elif path == "/api/mode":
                    s.switch_mode(_text(body, "mode"))
                elif path == "/api/open":
                    name = body.get("name") if isinstance(body.get("name"), str) else "trace"
                    try:
                        doc = load_itf(_text(body, "trace"))
                    except TraceError as e:
                        raise ExploreError(f"{name}: {e}") from None
                    s.open_trace(doc, name)
                elif path == "/api/search":
                    srv.stop_search()
                    here = s.states[s.cursor]
                    try:
                        if body.get("shorter"):
                            srv.search = Search(Reaching(s.model, here), s.model.init_states()[0], REACHES,
                                                kind="shorter", walked=s.cursor)
                        else:
                            srv.search = Search(s.model, here, _text(body, "invariant"), kind="break",
                                                walked=s.cursor)
                    except ValueError as e:
                        raise ExploreError(str(e)) from None
                    srv.search.start()
                    return self._json(srv.search.report())
                elif path == "/api/search/stop":
                    srv.stop_search()
                    return self._json(srv.search.report() if srv.search else {"state": "none"})
                elif path == "/api/search/take":
                    found = srv.search.report() if srv.search else {}
                    if found.get("state") != "done" or found.get("verdict") != "violated":
                        raise ExploreError("no path found to take")
                    if found["kind"] == "shorter":          # the shortest path to this state instead
                        if s.states[s.cursor] != srv.search.model.target:
                            raise ExploreError("the search looked for another state: go back to it or search again")
                        s.goto(0)
                        for label in found["labels"]:
                            s.apply(label)
                    else:                                   # the continuation, after the cursor
                        if s.states[s.cursor] != srv.search.start_state:
                            raise ExploreError("the search ran from another state: go back to it or search again")
                        here = s.cursor
                        for label in found["labels"]:
                            s.apply(label)
                        s.goto(here)
                else:
                    return self._error(HTTPStatus.NOT_FOUND, f"no such call: {path}")
                return self._json(self._view())
        except ExploreError as e:
            return self._error(HTTPStatus.BAD_REQUEST, str(e))
        except Exception as e:            # a bug: one line to the page, the server keeps serving
            return self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"internal error: {type(e).__name__}: {e}")

    def _view(self) -> dict:
        view = self.server.session.view()
        view["modes"] = _modes(view["model"])
        return view


def _text(body: dict, key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str):
        raise ExploreError(f"{key!r} is missing or not a string")
    return value


def _modes(family: str) -> list:
    """The modes a design-model path can be switched to (``hwcheck modes``)."""
    if family != "design":
        return []
    from hwcheck.spec.modes import ALIASES, LADDER
    return [m.name for m in LADDER] + list(ALIASES)
