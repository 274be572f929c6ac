"""A headless Chromium driven through the DevTools protocol over a pipe (``--remote-debugging-pipe``):
no WebDriver, no websocket library, no port. For the browser viewer's tests.

The browser runs with every network request sent to a dead proxy (``--proxy-server=127.0.0.1:9``,
loopback included) and the protocol's Network events recorded, so a page that asks for anything
beyond its own ``file://`` URL is seen (:attr:`Browser.requests`); console errors and uncaught
exceptions are collected in :attr:`Browser.errors`.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["Browser", "chromium_path"]


def chromium_path() -> str | None:
    """The Chromium executable (Debian package ``chromium``), or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Browser:
    """One headless Chromium with one page; a context manager."""

    def __init__(self, *, width: int = 1400, height: int = 900, timeout: float = 60.0):
        exe = chromium_path()
        if exe is None:
            raise FileNotFoundError("chromium is not installed (Debian package chromium)")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="pa-chromium-")
        cmd_r, self._cmd_w = os.pipe()  # we write commands, the browser reads them on its fd 3
        self._resp_r, resp_w = os.pipe()  # it writes responses on its fd 4

        def child_fds():  # the pipe ends onto fds 3 and 4 (dup2 makes them inheritable)
            a, b = os.dup(cmd_r), os.dup(resp_w)  # first out of the way of 3 and 4
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [exe, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--metrics-recording-only", "--mute-audio",
                "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>", "--enable-unsafe-swiftshader",
                "--use-angle=swiftshader", "--ignore-gpu-blocklist", f"--window-size={width},{height}",
                f"--user-data-dir={self.profile}", "about:blank"]
        self.proc = subprocess.Popen(args, close_fds=False, preexec_fn=child_fds,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(resp_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        target = next(t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=target["targetId"], flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.call(f"{domain}.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    # --- the protocol --------------------------------------------------------------------------
    def _send(self, message: dict) -> None:
        os.write(self._cmd_w, json.dumps(message).encode() + b"\0")

    def _read(self, deadline: float) -> dict:
        import select

        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._resp_r], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._resp_r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message = json.loads(raw)
        if "method" in message:
            self._event(message)
        return message

    def _event(self, message: dict) -> None:
        self.events.append(message)
        method, params = message["method"], message.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.errors.append(details.get("exception", {}).get("description") or details.get("text", ""))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            self.errors.append(params["entry"].get("text", ""))
        elif method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            if not url.startswith(("file:", "data:", "about:", "blob:")):
                self.requests.append(url)

    def call(self, method: str, *, session: bool = False, **params) -> dict:
        """Send one command and return its result (a RuntimeError on a protocol error)."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        self._send(message)
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def wait_for(self, method: str, *, after: int = 0) -> dict:
        """The first event ``method`` among the events from number ``after`` on (waiting for it)."""
        deadline = time.monotonic() + self.timeout
        while True:
            for event in self.events[after:]:
                if event["method"] == method:
                    return event
            self._read(deadline)

    # --- what the tests use --------------------------------------------------------------------
    def open(self, path: str | Path) -> None:
        """Load the file and wait for its load event."""
        mark = len(self.events)
        self.call("Page.navigate", session=True, url=Path(path).resolve().as_uri())
        self.wait_for("Page.loadEventFired", after=mark)

    def evaluate(self, expression: str):
        """The value of a JavaScript expression (promises awaited)."""
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails'].get('exception', {})}")
        return result["result"].get("value")

    def wait_until(self, expression: str) -> None:
        """Poll ``expression`` until it is true."""
        deadline = time.monotonic() + self.timeout
        while not self.evaluate(expression):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{expression} stayed false")
            time.sleep(0.05)

    def click(self, x: float, y: float) -> None:
        """A real left click (press and release) at page coordinates (x, y)."""
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", session=True, type=kind, x=x, y=y, button="left",
                      clickCount=0 if kind == "mouseMoved" else 1)

    def drag(self, x: float, y: float, dx: float, dy: float, steps: int = 5) -> None:
        """Press at (x, y), move by (dx, dy) in ``steps``, release."""
        self.call("Input.dispatchMouseEvent", session=True, type="mousePressed", x=x, y=y, button="left",
                  clickCount=1)
        for i in range(1, steps + 1):
            self.call("Input.dispatchMouseEvent", session=True, type="mouseMoved", x=x + dx * i / steps,
                      y=y + dy * i / steps, button="left")
        self.call("Input.dispatchMouseEvent", session=True, type="mouseReleased", x=x + dx, y=y + dy,
                  button="left", clickCount=1)

    def screenshot(self, path: str | Path) -> Path:
        data = self.call("Page.captureScreenshot", session=True, format="png")["data"]
        Path(path).write_bytes(base64.b64decode(data))
        return Path(path)

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._cmd_w, self._resp_r):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
