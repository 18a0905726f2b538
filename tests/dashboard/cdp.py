"""Drive Debian's headless Chromium over the DevTools protocol (CDP) for the dashboard tests.

Only what the tests need: open a URL, evaluate JavaScript, take a screenshot. Chromium is
started with a fresh profile and no network features; the tests skip when it is not installed.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--remote-debugging-port=0",
    "--window-size=1400,1100",
]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """``async with Browser() as b: await b.goto(url); await b.eval('1 + 1')``."""

    def __init__(self):
        # (Chromium's helpers may still write to the profile as it exits)
        self.profile = tempfile.TemporaryDirectory(
            prefix="nasx-chromium-", ignore_cleanup_errors=True
        )
        self.proc: subprocess.Popen | None = None
        self._ids = itertools.count(1)

    async def __aenter__(self) -> Browser:
        import aiohttp

        self.proc = subprocess.Popen(
            [chromium_path(), *FLAGS, f"--user-data-dir={self.profile.name}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = Path(self.profile.name) / "DevToolsActivePort"
        deadline = time.monotonic() + 120  # a loaded machine takes a while
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("chromium did not start its DevTools endpoint")
            await asyncio.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        self.session = aiohttp.ClientSession()
        for _ in range(50):
            async with self.session.get(f"http://127.0.0.1:{port}/json/list") as r:
                pages = [t for t in await r.json() if t["type"] == "page"]
            if pages:
                break
            await asyncio.sleep(0.1)
        self.ws = await self.session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0)
        await self.call("Page.enable")
        await self.call("Runtime.enable")
        return self

    async def __aexit__(self, *exc) -> None:
        await self.ws.close()
        await self.session.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.profile.cleanup()

    async def call(self, method: str, **params):
        msg_id = next(self._ids)
        await self.ws.send_str(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            msg = json.loads((await self.ws.receive(timeout=30)).data)
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]
            if (
                msg.get("method") == "Runtime.consoleAPICalled"
                or msg.get("method") == "Runtime.exceptionThrown"
            ):
                self.console.append(msg["params"])

    console: list = []

    async def goto(self, url: str) -> None:
        await self.call("Page.navigate", url=url)
        await self.wait_for("document.readyState === 'complete'")

    async def eval(self, expression: str):
        result = await self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, timeout: float = 30.0):
        deadline = time.monotonic() + timeout
        while True:
            value = await self.eval(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout} s for {expression}")
            await asyncio.sleep(0.2)

    async def screenshot(self, path: Path) -> None:
        data = await self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(data["data"]))
