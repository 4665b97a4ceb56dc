#!/usr/bin/env python3
"""Looks at pages in a real headless Chromium through the DevTools protocol over a pipe (--remote-debugging-pipe:
NUL-terminated JSON messages on file descriptors 3 and 4, so no WebSocket library is needed).

    cdp_pages.py CHROMIUM BASE_URL OUT_DIR NAME=PATH...

For each page and each width (1280 and 400 CSS pixels) it loads BASE_URL+PATH, waits for the load and a moment
for the page's scripts, writes a full-page screenshot OUT_DIR/NAME-WIDTH.png, and prints one JSON line:
{"name", "width", "scroll_width", "client_width", "overflow": [elements wider than the viewport], "h1", "alarms",
"links"}. Exit 1 when Chromium cannot be driven.
"""
import base64, fcntl, json, os, subprocess, sys, tempfile, time


class Browser:
    def __init__(self, chromium):
        self.profile = tempfile.mkdtemp(prefix="vlogger-cdp-")
        # The pipes above fd 10, so that moving them to 3 and 4 in the child overwrites none of them.
        def high(fd):
            n = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
            os.close(fd)
            return n
        to_child_r, self.to_child_w = [high(x) for x in os.pipe()]
        self.from_child_r, from_child_w = [high(x) for x in os.pipe()]
        # The browser reads commands on its fd 3 and writes answers on its fd 4.
        def setup():
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)
        self.proc = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--disable-extensions", "--remote-debugging-pipe", "--user-data-dir=" + self.profile, "about:blank"],
            preexec_fn=setup, pass_fds=(3, 4), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_child_w, json.dumps(msg).encode() + b"\0")
        return self.wait_for(self.next_id)

    def read_message(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.from_child_r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(raw)

    def wait_for(self, ident):
        while True:
            m = self.read_message()
            if m.get("id") == ident:
                if "error" in m:
                    raise RuntimeError(f"{m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def open_page(self):
        """A blank page, attached; the session id the page's commands take."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send("Page.enable", session=session)
        return session

    def load(self, session, url, width):
        """Loads url at width CSS pixels and waits (up to 20 s) for the document to be complete."""
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600}, session)
        self.send("Page.navigate", {"url": url}, session)
        deadline = time.time() + 20
        while time.time() < deadline:
            r = self.send("Runtime.evaluate", {"expression": "document.readyState", "returnByValue": True}, session)
            if r.get("result", {}).get("value") == "complete":
                return
            time.sleep(0.1)

    def screenshot(self, session, file, width, height):
        """A PNG of the page's top width × height CSS pixels (beyond the viewport) into file."""
        shot = self.send("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}}, session)
        with open(file, "wb") as f:
            f.write(base64.b64decode(shot["data"]))

    def close(self):
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


PROBE = r"""
(() => {
  const width = document.documentElement.clientWidth;
  const over = [];
  for (const e of document.querySelectorAll('body *')) {
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > width + 1) over.push(e.tagName.toLowerCase() + (e.className ? '.' + String(e.className).split(' ')[0] : '') + ' ' + Math.round(r.right));
  }
  return JSON.stringify({
    scroll_width: document.documentElement.scrollWidth, client_width: width, overflow: over.slice(0, 10),
    h1: (document.querySelector('h1') || {}).textContent || '',
    alarms: document.querySelectorAll('tr.alarm').length,
    links: Array.from(document.querySelectorAll('a[href^="/tags/"]')).length,
    height: Math.ceil(document.documentElement.scrollHeight)
  });
})()
"""


def main():
    chromium, base, out = sys.argv[1], sys.argv[2], sys.argv[3]
    pages = [a.split("=", 1) for a in sys.argv[4:]]
    os.makedirs(out, exist_ok=True)
    b = Browser(chromium)
    try:
        session = b.open_page()
        for name, path in pages:
            for width in (1280, 400):
                b.load(session, base + path, width)
                time.sleep(1.0)
                r = b.send("Runtime.evaluate", {"expression": PROBE, "returnByValue": True}, session)
                facts = json.loads(r["result"]["value"])
                file = os.path.join(out, f"{name}-{width}.png")
                b.screenshot(session, file, width, min(facts["height"], 8000))
                facts.update({"name": name, "width": width, "file": file})
                print(json.dumps(facts), flush=True)
    finally:
        b.close()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:
        print(f"cdp_pages: {e}", file=sys.stderr)
        sys.exit(1)
