#!/usr/bin/env python3
"""A page left open while the gateway dies, in a real headless Chromium (driven as cdp_pages.py drives it).

    cdp_stale.py CHROMIUM URL OUT_DIR

Loads URL at 1280 CSS pixels, waits for the load and two seconds of the page's script, and prints one JSON line
{"phase": "alive", "stale": bool, "ages": [the texts of the values' ages], "banner": text}; then writes
OUT_DIR/loaded and waits (up to 60 s) for OUT_DIR/killed, which the test writes once it has killed the gateway.
From then it looks every 0.2 s, for up to 30 s, whether the page has turned grey (body.stale) with its banner, and
prints {"phase": "dead", "stale", "seconds" (from OUT_DIR/killed to grey), "banner", "ages", "filter"} and writes
OUT_DIR/dead.png, a screenshot of the page as the operator sees it then. Exit 1 when Chromium cannot be driven.
"""
import json, os, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp_pages import Browser  # noqa: E402

PROBE = r"""
(() => JSON.stringify({
  stale: document.body.classList.contains('stale'),
  banner: (document.getElementById('contact') || {}).hidden === false ? document.getElementById('contact').textContent : '',
  ages: Array.from(document.querySelectorAll('[data-ms]')).map(e => e.textContent),
  filter: getComputedStyle(document.getElementById('live')).filter,
  height: Math.ceil(document.documentElement.scrollHeight)
}))()
"""


def probe(b, session):
    r = b.send("Runtime.evaluate", {"expression": PROBE, "returnByValue": True}, session)
    return json.loads(r["result"]["value"])


def main():
    chromium, url, out = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(out, exist_ok=True)
    b = Browser(chromium)
    try:
        session = b.open_page()
        b.load(session, url, 1280)
        time.sleep(2.0)
        alive = probe(b, session)
        alive["phase"] = "alive"
        print(json.dumps(alive), flush=True)
        open(os.path.join(out, "loaded"), "w").write("loaded\n")
        killed = os.path.join(out, "killed")
        deadline = time.time() + 60
        while not os.path.exists(killed) and time.time() < deadline:
            time.sleep(0.05)
        start = time.time()
        facts = probe(b, session)
        while not facts["stale"] and time.time() - start < 30:
            time.sleep(0.2)
            facts = probe(b, session)
        facts["seconds"] = round(time.time() - start, 1)
        time.sleep(2.0)  # the ages have counted on
        facts["ages"] = probe(b, session)["ages"]
        facts["phase"] = "dead"
        b.screenshot(session, os.path.join(out, "dead.png"), 1280, min(facts["height"], 4000))
        print(json.dumps(facts), flush=True)
    finally:
        b.close()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:
        print(f"cdp_stale: {e}", file=sys.stderr)
        sys.exit(1)
