#!/usr/bin/env python3
"""A Server-Sent Events client for the tests, written to the WHATWG HTML standard's "Server-sent events" parsing
rules (fields `id`, `event`, `data`; a blank line ends an event; lines starting with ':' are comments), on
Python's http.client, not on vlogger's code.

Usage: sse_client.py PORT PATH SECONDS OUT [LAST_EVENT_ID]
Reads the stream for SECONDS (or until the server ends it) and writes one JSON line per event to OUT:
{"id", "event", "key"} (key: the data's "key" member). Exit 0 when the stream opened with 200 and
text/event-stream.
"""
import http.client
import json
import sys
import time

port, path, seconds, out = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
headers = {"Accept": "text/event-stream"}
if len(sys.argv) > 5:
    headers["Last-Event-ID"] = sys.argv[5]
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
conn.request("GET", path, headers=headers)
resp = conn.getresponse()
if resp.status != 200 or not resp.getheader("Content-Type", "").startswith("text/event-stream"):
    print(f"status {resp.status}, {resp.getheader('Content-Type')}", file=sys.stderr)
    sys.exit(1)
f = open(out, "w", buffering=1)
end = time.time() + seconds
event = {"id": None, "event": "message", "data": []}
buf = b""
while time.time() < end:
    try:
        chunk = resp.read1(65536)
    except TimeoutError:
        continue
    except Exception:
        break
    if not chunk:
        break
    buf += chunk
    while b"\n" in buf:
        raw, buf = buf.split(b"\n", 1)
        line = raw.decode("utf-8").rstrip("\r")
        if line == "":
            if event["data"]:
                data = json.loads("\n".join(event["data"]))
                f.write(json.dumps({"id": event["id"], "event": event["event"], "key": data.get("key")}) + "\n")
            event = {"id": event["id"], "event": "message", "data": []}
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "id":
            event["id"] = value
        elif name == "event":
            event["event"] = value
        elif name == "data":
            event["data"].append(value)
conn.close()
