"""The dashboard's HTTP server: JSON about experiments, SVG charts, and the page's static files.

Safety, by construction rather than by filtering:

- Read-only: experiments are read through :mod:`nasx.experiment.storage.readonly` (SQLite ``mode=ro``);
  only GET and HEAD are answered, nothing is written or run.
- No file paths from the client: an experiment is picked by its index in the list given on the
  command line, a trial by its integer id, a static file from a fixed table; anything else is 404.
  A trial log that resolves outside its experiment directory (a symlink) is refused.
- Bound to 127.0.0.1 by default; requests whose ``Host`` is not this machine are refused (DNS
  rebinding). Binding another address needs ``allow_remote`` and then a random access token.
- User strings (labels, values, metric names, errors, logs) reach the page only as JSON, inserted
  with ``textContent``; the Content-Security-Policy forbids inline scripts, so even a missed
  string could not run. Charts are SVG images, which browsers never run scripts in.
- Every malformed request (bad request line, unknown method, non-ASCII token or cookie, bad
  parameter) gets a 4xx answer with these headers, never a dropped connection.

At scale (20,000 trials and a run adding more): the page polls a small summary per experiment
(``/api/experiments``, kept per database version) and fetches the table a page at a time
(``/api/exp/N/rows``, sorted and filtered here); charts are drawn once per chart version, ahead
of the page, and summarised above a few thousand trials (:mod:`nasx.dashboard.render`).

    >>> server = make_server([], port=0)
    >>> server.server_address[0]
    '127.0.0.1'
    >>> server.server_close()
"""

from __future__ import annotations

import errno
import functools
import http.server
import json
import os
import queue
import re
import secrets
import socket
import sys
import threading
import time
import urllib.parse
from importlib import resources
from pathlib import Path
from typing import Any

from nasx._errors import NasxError
from nasx.experiment.storage.readonly import ExperimentReadError

from . import render, rows
from .experiments import (
    ChartCache,
    Experiments,
    _finite,
    _read_log,
    summary,
    trial_row,
)

LOOPBACK = ("127.0.0.1", "localhost", "::1")
_STATIC_TYPES = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
    ".svg": "image/svg+xml",
}
_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _static_files() -> dict[str, tuple[bytes, str]]:
    """Every file the page needs, read once: name -> (bytes, content type)."""
    out = {}
    for entry in resources.files("nasx.dashboard").joinpath("static").iterdir():
        suffix = Path(entry.name).suffix
        if suffix in _STATIC_TYPES:
            out[entry.name] = (entry.read_bytes(), _STATIC_TYPES[suffix])
    return out


def _host_name(host: str | None) -> str:
    """The name in a ``Host`` header without its port: ``[::1]:8080`` -> ``::1``.

    >>> [_host_name(h) for h in ('127.0.0.1:80', 'localhost', '[::1]:8080', '[::1]', None)]
    ['127.0.0.1', 'localhost', '::1', '::1', '']
    """
    host = (host or "").strip()
    if host.startswith("["):  # an IPv6 literal, maybe with a port after the bracket
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _same_token(given: str, token: str) -> bool:
    """A constant-time comparison that also takes what a client may send: ``compare_digest``
    raises TypeError on a str with non-ASCII characters (``?token=é``, a Latin-1 cookie), so
    both sides are compared as UTF-8 bytes (surrogates from undecodable bytes kept).

    >>> _same_token('\u00e9', 'abc'), _same_token('abc', 'abc')
    (False, True)
    """
    return secrets.compare_digest(
        given.encode("utf-8", "surrogateescape"), token.encode("utf-8", "surrogateescape")
    )


class Handler(http.server.BaseHTTPRequestHandler):
    server: DashboardServer
    server_version = "nasx-dashboard"
    sys_version = ""
    # Answer even a request line that names no version (garbage, HTTP/0.9) with a status line:
    # http.server's default, HTTP/0.9, would send an error page without one.
    default_request_version = "HTTP/1.0"

    # ----------------------------------------------------------------- plumbing
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        if self.server.verbose:
            super().log_message(format, *args)

    def _send(self, status: int, body: bytes, content_type: str, extra: dict | None = None) -> None:
        self.send_response(status)
        self.send_header(
            "Content-Type",
            content_type
            + (
                "; charset=utf-8"
                if content_type.startswith("text") or "json" in content_type
                else ""
            ),
        )
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def end_headers(self) -> None:
        # every response, send_error's (a malformed request line) included, carries these
        for k, v in _SECURITY_HEADERS.items():
            self.send_header(k, v)
        super().end_headers()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # http.server answers an unknown HTTP version (``GET / HTTP/9.9``) with 505: it is the
        # client's request that is malformed, so it gets a 4xx like every other bad request
        if code == 505:
            code, message = 400, f"unsupported HTTP version in {self.requestline!r}; send HTTP/1.1"
        super().send_error(code, message, explain)

    def _json(self, data: Any, status: int = 200) -> None:
        body = json.dumps(_finite(data), allow_nan=False, default=str).encode()
        self._send(status, body, "application/json")

    def _error(self, status: int, message: str) -> None:
        self._json({"error": message}, status)

    def _refuse_method(self) -> None:
        self._error(405, "the dashboard is read-only: only GET is answered")

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse_method  # noqa: N815
    do_OPTIONS = do_TRACE = do_CONNECT = _refuse_method  # noqa: N815

    def __getattr__(self, name: str) -> Any:
        # Any other method (``FOO / HTTP/1.1``): 405 like the write methods, not http.server's 501
        if name.startswith("do_"):
            return self._refuse_method
        raise AttributeError(name)

    def do_HEAD(self) -> None:  # noqa: N802
        self.do_GET()

    # ----------------------------------------------------------------- routes
    def do_GET(self) -> None:  # noqa: N802
        try:
            url = urllib.parse.urlsplit(self.path)  # ValueError on "//[::1": a 400 below
            query = urllib.parse.parse_qs(url.query, max_num_fields=100)
            if self._allowed(query):
                self._route(url.path, query)
        except (KeyError, ExperimentReadError) as e:
            self._error(404, f"not found: {e}")
        except ValueError as e:
            self._error(400, str(e))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser went away (a new page, a closed tab): nobody to answer
        except Exception as e:  # a bug: answer it on one line rather than drop the connection
            self._error(500, f"{type(e).__name__}: {e}".splitlines()[0])

    def _allowed(self, query: dict[str, list[str]]) -> bool:
        if self.server.loopback_only and _host_name(self.headers.get("Host")) not in LOOPBACK:
            self._error(403, "the dashboard only answers requests addressed to this machine")
            return False
        token = self.server.token
        if token is None:
            return True
        given = query.get("token", [None])[0]
        cookie = self.headers.get("Cookie") or ""
        cookies = dict(c.strip().split("=", 1) for c in cookie.split(";") if "=" in c)
        if given is not None and _same_token(given, token):
            self._cookie = f"nasx_token={token}; HttpOnly; SameSite=Strict; Path=/"
            return True
        if _same_token(cookies.get("nasx_token", ""), token):
            return True
        self._error(403, "an access token is needed: open the URL that `nasx serve` printed")
        return False

    def _summary(self, index: int) -> dict[str, Any]:
        """The experiment's summary (kept per version), with the charts' version and the time."""
        exps = self.server.experiments
        head = exps.derived(index, "summary", functools.partial(summary, index))
        return {
            **head,
            "chart_version": exps.chart_version(index, head["version"]),
            "now": time.time(),
        }

    def _route(self, path: str, query: dict[str, list[str]]) -> None:
        static = self.server.static
        if path in ("/", "/index.html"):
            body, ctype = static["index.html"]
            cookie = getattr(self, "_cookie", None)
            self._send(200, body, ctype, {"Set-Cookie": cookie} if cookie else None)
            return
        if m := re.fullmatch(r"/static/([A-Za-z0-9_.-]+)", path):
            if m.group(1) not in static:
                raise KeyError(m.group(1))
            self._send(200, *static[m.group(1)])
            return
        if path == "/api/experiments":
            out = []
            for i in range(len(self.server.experiments.directories)):
                try:
                    out.append(self._summary(i))
                except ExperimentReadError as e:
                    out.append(
                        {
                            "index": i,
                            "name": self.server.experiments.directories[i].name,
                            "error": str(e),
                        }
                    )
            self._json(out)
            return
        if m := re.fullmatch(r"/api/exp/([0-9]+)", path):
            # every trial at once (a script's view; the page asks for rows a page at a time)
            i = int(m.group(1))
            version, exp = self.server.experiments.get(i)
            self._json({**self._summary(i), "trials": [trial_row(t) for t in exp.trials]})
            return
        if m := re.fullmatch(r"/api/exp/([0-9]+)/rows", path):
            i = int(m.group(1))
            head = self._summary(i)
            q = rows.parse_query(query, head["metrics"])
            version, ordered = self.server.experiments.derived(
                i,
                ("rows", q.sort, q.descending, q.status),
                lambda v, e: (v, rows.sort_trials(e.trials, q.sort, q.descending, q.status)),
            )
            page = ordered[q.offset : q.offset + q.limit]
            self._json(
                {
                    "version": version,
                    "n_trials": head["n_trials"],
                    "total": len(ordered),
                    "offset": q.offset,
                    "rows": [trial_row(t) for t in page],
                }
            )
            return
        if m := re.fullmatch(r"/api/exp/([0-9]+)/trial/([0-9]+)", path):
            version, exp = self.server.experiments.get(int(m.group(1)))
            t = exp.trial(int(m.group(2)))
            from nasx.plot.graph import cell_names

            self._json(
                {
                    **t.to_dict(),
                    "log": _read_log(exp, t.id),
                    "cells": cell_names(t.arch),
                    "version": version,
                }
            )
            return
        if m := re.fullmatch(r"/api/exp/([0-9]+)/chart/([a-z_]+)\.svg", path):
            i, name = int(m.group(1)), m.group(2)
            version, exp = self.server.experiments.get(i)
            params = {k: v[0] for k, v in query.items() if k in render.CHART_PARAMS}
            render.check(exp, name, params)  # a bad request does not wait for the drawing
            chart_version = self.server.experiments.chart_version(i, version)
            svg = self.server.charts.get(
                (i, name, chart_version, tuple(sorted(params.items()))),
                lambda: render.chart(exp, name, params),
            )
            self._send(200, svg, "image/svg+xml")
            return
        raise KeyError(path)


class ServeError(NasxError, OSError):
    """The dashboard cannot listen where asked (port in use, an address this machine lacks);
    the message fits on one line and says what to change."""

    def __str__(self) -> str:
        return str(self.strerror)  # without OSError's "[Errno 98]" prefix


class DashboardServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, experiments: list[Path], token: str | None, verbose: bool = False):
        self.experiments = Experiments(experiments)
        self.static = _static_files()
        self.charts = ChartCache()
        self._to_draw: queue.SimpleQueue = queue.SimpleQueue()
        self._painter: threading.Thread | None = None
        self.token = token
        self.verbose = verbose
        self.loopback_only = address[0] in LOOPBACK
        # an IPv6 address (``::1``, ``::``) needs an IPv6 socket; names and IPv4 use IPv4
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        try:
            super().__init__(address, Handler)
        except OSError as e:
            raise ServeError(e.errno, _bind_problem(address[0], address[1], e)) from None

    def _draw_ahead(self, index: int, chart_version: str) -> None:
        """Draw the charts the page shows first for a new chart version, in the background: the
        page's requests then find them drawn (or wait for the drawing under way)."""
        if self._painter is None:
            self._painter = threading.Thread(target=self._paint, name="nasx-charts", daemon=True)
            self._painter.start()
        self._to_draw.put((index, chart_version))

    def _paint(self) -> None:
        while (job := self._to_draw.get()) is not None:
            index, chart_version = job
            try:
                version, exp = self.experiments.get(index)
                head = self.experiments.derived(index, "summary", functools.partial(summary, index))
                for name, params in default_charts(head):
                    key = (index, name, chart_version, tuple(sorted(params.items())))
                    self.charts.get(key, lambda: render.chart(exp, name, params))  # noqa: B023
            except Exception:  # noqa: S112 - the page's own request draws it again and reports
                continue

    def server_close(self) -> None:
        if self._painter is not None:
            self._to_draw.put(None)
        super().server_close()


def default_charts(head: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    """The charts (name, parameters) the page asks for first, given an experiment's summary.

    >>> default_charts({'metrics': ['default', 'ms'], 'has_curves': False})
    [('history', {'metric': 'default'}), ('pareto', {'x': 'ms'})]
    >>> default_charts({'metrics': ['arch_probability'], 'has_arch_weights': True})
    [('arch_weights', {})]
    """
    if head.get("has_arch_weights"):  # a one-shot search: its rows are the exported archs
        return [("arch_weights", {})]
    metrics = head.get("metrics") or []
    out = [("history", {"metric": metrics[0] if metrics else "default"})]
    others = [m for m in metrics if m != "default"]
    if len(metrics) > 1 and others:
        out.append(("pareto", {"x": others[0]}))
    if head.get("has_curves"):
        out.append(("curves", {}))
    return out


def _bind_problem(host: str, port: int, error: OSError) -> str:
    """One line on why ``host:port`` cannot be served, and what to try instead."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if error.errno == errno.EADDRINUSE:
        return (
            f"cannot serve on {where}: the port is in use (another `nasx serve`?); "
            "pick another with --port, or --port 0 for a free one"
        )
    if error.errno in (errno.EACCES, errno.EPERM):
        return f"cannot serve on {where}: permission denied (ports below 1024 need root); use --port 8080 or above"
    if isinstance(error, socket.gaierror) or error.errno == errno.EADDRNOTAVAIL:
        return (
            f"cannot serve on {where}: {host!r} is not an address of this machine "
            f"({error.strerror or error}); use 127.0.0.1 (the default), ::1 or localhost"
        )
    return f"cannot serve on {where}: {error.strerror or error}"


def make_server(
    experiments: list[str | os.PathLike],
    host: str = "127.0.0.1",
    port: int = 8080,
    *,
    allow_remote: bool = False,
    verbose: bool = False,
    draw_ahead: bool = False,
) -> DashboardServer:
    """A server for ``experiments`` (not yet serving: call ``serve_forever``).

    Binding an address other than loopback needs ``allow_remote=True``, and then every request
    must carry the random ``server.token`` (``?token=...`` once, a cookie after that).
    :class:`ServeError` (one line) when the port is taken or the address is not this machine's.
    ``draw_ahead`` (what ``nasx serve`` does): draw the page's first charts in a background
    thread whenever an experiment's charts move on, before the page asks for them.
    """
    if not 0 <= port <= 65535:
        raise ServeError(
            errno.EINVAL, f"cannot serve on port {port}: a port is 0 to 65535 (0 picks a free one)"
        )
    if host not in LOOPBACK and not allow_remote:
        raise ValueError(
            f"refusing to bind {host!r}: other machines could read the experiments; pass allow_remote=True"
        )
    token = None if host in LOOPBACK else secrets.token_urlsafe(18)
    server = DashboardServer((host, port), [Path(e) for e in experiments], token, verbose)
    if draw_ahead:
        server.experiments.on_new_charts = server._draw_ahead
    return server


def serve(
    experiments: list[str | os.PathLike],
    host: str = "127.0.0.1",
    port: int = 8080,
    open_browser: bool = False,
) -> int:
    """Serve until interrupted (Ctrl-C); prints the URL. Returns an exit code."""
    server = make_server(
        experiments, host, port, allow_remote=host not in LOOPBACK, verbose=False, draw_ahead=True
    )
    try:
        os.nice(10)  # the experiment comes first on a busy machine
    except OSError:
        pass
    from . import render

    render.warm_up()  # import matplotlib now, not during the first page view
    for i in range(len(experiments)):  # and draw each experiment's first charts ahead of it
        server.experiments.chart_version(i, server.experiments.version(i))
    h, p = server.server_address[:2]
    if isinstance(h, bytes):  # typeshed allows bytes (AF_UNIX); a TCP server's host is a str
        h = h.decode()
    shown = "[::1]" if h == "::1" else "127.0.0.1" if h in LOOPBACK else f"[{h}]" if ":" in h else h
    url = f"http://{shown}:{p}/"
    if server.token:
        url += f"?token={server.token}"
        print(
            f"warning: serving on {h}, reachable from other machines; share this URL only with "
            "people who may read these experiments",
            file=sys.stderr,
        )
    print(
        f"nasx dashboard: {url}  ({len(experiments)} experiment(s), read-only; Ctrl-C to stop)",
        flush=True,
    )
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
