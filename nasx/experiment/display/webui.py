"""NNI's web UI for ``run(port=...)``: ``nasx serve``'s dashboard of the run, in a child process.

NNI starts its web UI on ``port`` when an experiment runs. nasx's page is ``nasx serve``
(read-only, reading ``nasx.db`` as the run writes it): :class:`WebUI` starts it on
``127.0.0.1:port`` as soon as the run has created its store, says where in one line, and stops
it when the run returns. It is a child process, so drawing charts never takes the experiment's
interpreter (or its GIL), and the experiment package never imports the dashboard's.

    >>> ui = WebUI('/nonexistent/workdir', port=8081)
    >>> ui.url
    'http://127.0.0.1:8081/'
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import TracebackType

from nasx.experiment.display.progress import announce
from nasx.experiment.storage.store import DB_NAME

_log = logging.getLogger("nasx.experiment")

_POLL_S = 0.2  # how often to look for the store before the dashboard can read it


class WebUI:
    """``nasx serve WORKDIR --port PORT`` for the length of a ``with`` block (a run)."""

    def __init__(self, workdir: str | os.PathLike[str], port: int):
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise ValueError(f"run(port=...) must be a TCP port, 1 to 65535; got {port!r}")
        self.workdir, self.port = Path(workdir), port
        self.url = f"http://127.0.0.1:{port}/"
        self._process: subprocess.Popen[str] | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._watcher = threading.Thread(target=self._start_when_stored, daemon=True)

    def __enter__(self) -> WebUI:
        self._watcher.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop the dashboard (and stop waiting for the store); idempotent."""
        with self._lock:  # the watcher starts the process under it: none can start after this
            self._done.set()
            process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
        if self._watcher.is_alive() and threading.current_thread() is not self._watcher:
            self._watcher.join(timeout=5)

    def _start_when_stored(self) -> None:
        """Wait for the run's ``nasx.db`` (``nasx serve`` refuses a directory without one), then
        start the dashboard and report its first line: the URL, or why it could not serve."""
        while not (self.workdir / DB_NAME).exists():
            if self._done.wait(_POLL_S):
                return
        command = [sys.executable, "-m", "nasx.cli", "serve", str(self.workdir)]
        command += ["--port", str(self.port)]
        with self._lock:
            if self._done.is_set():
                return
            process = subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
            )
            self._process = process
        assert process.stdout is not None
        with process.stdout:
            first = process.stdout.readline().strip()
            if not first.startswith("nasx dashboard:"):
                process.wait()
                if not self._done.is_set():
                    _log.warning("run(port=%d): the dashboard did not start: %s", self.port, first)
                return
            announce(f"web UI (nasx serve) of {self.workdir}: {self.url}")
            # Keep reading so a full pipe never blocks the dashboard; its lines are not the run's.
            for _ in process.stdout:
                pass
