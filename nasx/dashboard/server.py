"""The dashboard's HTTP server: JSON about experiments, SVG charts, and the page's static files.

Safety, by construction rather than by filtering:

- Read-only: experiments are read through :mod:`nasx.experiment.readonly` (SQLite ``mode=ro``);
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
import math
import os
import queue
import re
import secrets
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from concurrent.futures import Future
from importlib import resources
from pathlib import Path
from typing import Any

from nasx._errors import NasxError
from nasx.experiment.readonly import ExperimentReadError, ExperimentRecord, read_experiment
from nasx.trial import FAILED, PRUNED, REJECTED, SUCCEEDED

from . import render, rows

LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_LOG_BYTES = 200_000
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


class Experiments:
    """The served experiments, each re-read only when its database changed.

    Reading 20,000 trials again is quick (SQLite), decoding their JSON is not: a finished trial
    whose row did not change keeps the object, and so the JSON, decoded for the last version.
    What the page asks for again and again (the summary, a sorted table) is kept per version.
    """

    def __init__(
        self, directories: list[Path], chart_interval: float = 5.0, quiet_after: float = 0.5
    ):
        self.directories = [Path(d) for d in directories]
        self.chart_interval = chart_interval
        self.quiet_after = quiet_after
        self._cache: dict[int, tuple[str, ExperimentRecord]] = {}
        self._charts: dict[int, tuple[str, float]] = {}
        self._derived: dict[tuple, Any] = {}
        self._rechecks: dict[int, threading.Timer] = {}
        self._lock = threading.Lock()
        # called (index, chart version) when the charts of an experiment move on: the server
        # draws the page's default charts then, before the page asks for them
        self.on_new_charts: Callable[[int, str], None] | None = None

    def chart_version(self, index: int, version: str) -> str:
        """``version``, but moving on at most every ``chart_interval`` seconds while the
        experiment keeps changing, and at once when it has been quiet for ``quiet_after`` s.

        A fast experiment changes its database many times a second; redrawing matplotlib charts
        for each change would take CPU from it. The page redraws charts when this changes, so
        they lag by at most ``chart_interval`` plus one poll, and catch up with the final data
        as soon as the run ends (or pauses).
        """
        now = time.monotonic()
        quiet_for = self._quiet_for(index)
        with self._lock:
            current, since = self._charts.get(index, (None, 0.0))
            moved = current != version and (
                current is None
                or quiet_for >= self.quiet_after
                or now - since >= self.chart_interval
            )
            if moved:
                self._charts[index] = current, since = version, now
            # Not quiet yet: look again once it may be, so that the charts of a run that just
            # ended are drawn by the time the page next asks, not one poll after that.
            # (Only when that comes before the interval's end: then the next poll moves them.)
            quiet_in = self.quiet_after - quiet_for
            recheck = (
                current != version
                and index not in self._rechecks
                and quiet_in < self.chart_interval - (now - since)
            )
            if recheck:
                timer = threading.Timer(max(0.05, quiet_in + 0.05), self._recheck, (index, version))
                timer.daemon = True
                self._rechecks[index] = timer
        if recheck:
            timer.start()
        if moved and self.on_new_charts is not None:
            self.on_new_charts(index, version)
        return version if current is None else current  # (never None here: see `moved`)

    def _recheck(self, index: int, version: str) -> None:
        # the version the page saw, not a newer one: without a page asking, nothing is drawn
        with self._lock:
            self._rechecks.pop(index, None)
        self.chart_version(index, version)

    def _quiet_for(self, index: int) -> float:
        """Seconds since the experiment's database last changed (0 when unknown)."""
        newest = 0
        for name in ("nasx.db", "nasx.db-wal"):
            try:
                newest = max(newest, (self.directories[index] / name).stat().st_mtime_ns)
            except OSError:
                pass
        return max(0.0, time.time() - newest / 1e9) if newest else 0.0

    def version(self, index: int) -> str:
        """Changes whenever the experiment's database (or its WAL) changes."""
        d = self.directories[index]
        parts = []
        for name in ("nasx.db", "nasx.db-wal"):
            try:
                st = (d / name).stat()
            except OSError:
                parts.append("0")
                continue
            # An empty WAL (what a reader opening a finished experiment may create) is no change.
            parts.append(f"{st.st_mtime_ns}.{st.st_size}" if st.st_size else "0")
        ckpt = d / "checkpoints" / "last.ckpt"
        if ckpt.exists():
            parts.append(str(ckpt.stat().st_mtime_ns))
        return "-".join(parts)

    def get(self, index: int) -> tuple[str, ExperimentRecord]:
        if not 0 <= index < len(self.directories):
            raise KeyError(index)
        version = self.version(index)
        with self._lock:
            cached = self._cache.get(index)
            if cached and cached[0] == version:
                return cached
        record = read_experiment(self.directories[index])
        if cached:
            record.trials[:] = _keep_decoded(cached[1].trials, record.trials)
        with self._lock:
            self._cache[index] = (version, record)
        return version, record

    def derived(self, index: int, what: Any, make: Callable[[str, ExperimentRecord], Any]) -> Any:
        """``make(version, record)`` for the experiment's current version, kept until it changes
        (the summary, a sorted table: ``what`` names it)."""
        version, exp = self.get(index)
        key = (index, version, what)
        with self._lock:
            if key in self._derived:
                return self._derived[key]
        value = make(version, exp)
        with self._lock:
            for old in [k for k in self._derived if k[0] == index and k[1] != version]:
                del self._derived[old]  # an older version's: never asked again
            while len(self._derived) >= 64:
                self._derived.pop(next(iter(self._derived)))
            self._derived[key] = value
        return value


# final statuses: these rows no longer change (paused ones may: a promotion runs them again)
_FINISHED = (SUCCEEDED, FAILED, REJECTED, PRUNED)
_ROW = ("status", "metric", "start_time", "end_time", "duration", "error")


def _keep_decoded(old: list, new: list) -> list:
    """``new``, with each finished trial whose row is unchanged replaced by its ``old`` object
    (whose JSON fields are decoded already)."""
    before = {t.id: t for t in old if t.status in _FINISHED}
    out = []
    for t in new:
        o = before.get(t.id)
        same = o is not None and all(getattr(o, f) == getattr(t, f) for f in _ROW)
        out.append(o if same else t)
    return out


def summary(
    index: int, version: str, exp: ExperimentRecord, chart_version: str = ""
) -> dict[str, Any]:
    from nasx.plot.charts import has_arch_weights, metric_names

    best = exp.best(1)
    running = [t for t in exp.trials if t.status == "running"]
    ends = [t.end_time for t in exp.trials if t.end_time]
    return {
        "index": index,
        "name": exp.name,
        "path": str(exp.directory),
        "kind": exp.kind,
        "version": version,
        "chart_version": chart_version or version,
        "space": exp.meta.get("space"),
        "strategy": exp.meta.get("strategy"),
        "direction": exp.direction,
        "labels": list(exp.meta.get("search_space", {})),
        "counts": exp.counts(),
        "n_trials": len(exp.trials),
        "best": {"id": best[0].id, "metric": best[0].metric} if best else None,
        "running": [t.id for t in running],
        "metrics": metric_names(exp.trials),
        "created": exp.meta.get("created"),
        "updated": max(ends) if ends else None,
        "now": time.time(),
        "has_curves": any(t.intermediates for t in exp.trials),
        "has_budget": any(t.budget is not None for t in exp.trials),  # a scheduler's run
        "has_arch_weights": has_arch_weights(exp.directory),
    }


def trial_row(t) -> dict[str, Any]:
    return {
        "id": t.id,
        "status": t.status,
        "metric": t.metric,
        "metrics": t.metrics,
        "budget": t.budget,
        "duration": t.duration,
        "start_time": t.start_time,
        "arch": t.arch,
        "error": (t.error or "").splitlines()[0] if t.error else None,
    }


def _read_log(exp: ExperimentRecord, trial_id: int) -> str:
    path = exp.log_path(trial_id)
    try:
        resolved = path.resolve(strict=True)
    except OSError:
        return ""
    if not resolved.is_relative_to(exp.directory.resolve()):
        return f"(log refused: {path.name} points outside the experiment directory)"
    size = resolved.stat().st_size
    with open(resolved, "rb") as f:
        if size > MAX_LOG_BYTES:
            f.seek(size - MAX_LOG_BYTES)
        text = f.read().decode("utf-8", errors="replace")
    return (f"... (last {MAX_LOG_BYTES} bytes of {size})\n" if size > MAX_LOG_BYTES else "") + text


def _finite(x: Any) -> Any:
    """NaN and infinities as null: browsers' JSON.parse refuses them (a user metric may be NaN)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


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
            from nasx.plot.cell_graph import cell_names

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


class _Cache:
    """A small memo of rendered charts (keyed by the experiment's chart version). A chart being
    drawn is drawn once: a second request for it waits for the first (the page and the
    server's own drawing ahead ask for the same charts)."""

    def __init__(self, size: int = 64):
        self.size, self._lock = size, threading.Lock()
        self._data: dict[Any, Future] = {}

    def get(self, key: Any, make: Callable[[], Any]) -> Any:
        with self._lock:
            drawing = self._data.get(key)
            if drawing is None:
                if len(self._data) >= self.size:
                    self._data.pop(next(iter(self._data)))
                future: Future = Future()
                self._data[key] = future
        if drawing is not None:
            return drawing.result()  # drawn, or being drawn by another thread: wait for it
        try:
            future.set_result(make())
        except BaseException as e:
            with self._lock:
                self._data.pop(key, None)  # asked again, it is drawn again (and fails again)
            future.set_exception(e)
        return future.result()


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
        self.charts = _Cache()
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
