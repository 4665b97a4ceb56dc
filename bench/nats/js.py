#!/usr/bin/env python3
"""One JetStream API request over NATS's own text protocol (nats-server's client port), for bench/nats/nats.sh:
no NATS client library is packaged in Debian 12. Prints the JSON answer; exit 1 on an error answer or no answer.

    python3 bench/nats/js.py PORT SUBJECT [JSON]     # e.g. 4222 '$JS.API.STREAM.INFO.VLOGGER'

The protocol (docs.nats.io, "Client Protocol"): the server greets with INFO; the client sends CONNECT {json},
SUB <subject> <sid>, PUB <subject> <reply-to> <bytes>\\r\\n<payload>\\r\\n; the answer comes as
MSG <subject> <sid> <bytes>\\r\\n<payload>\\r\\n (HMSG with headers: NATS/1.0 header block, then the payload).
"""
import json, socket, sys, time

def request(port, subject, payload=b"", timeout=5.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    f = s.makefile("rb")
    f.readline()  # INFO {...}
    inbox = "_INBOX.js%d" % int(time.time() * 1000)
    s.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\n')
    s.sendall(("SUB %s 1\r\n" % inbox).encode())
    s.sendall(("PUB %s %s %d\r\n" % (subject, inbox, len(payload))).encode() + payload + b"\r\n")
    s.sendall(b"PING\r\n")
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = f.readline()
        if not line:
            break
        if line.startswith(b"PING"):
            s.sendall(b"PONG\r\n")
        elif line.startswith(b"MSG "):
            n = int(line.split()[-1])
            body = f.read(n + 2)[:n]
            return json.loads(body)
        elif line.startswith(b"HMSG "):
            parts = line.split()
            hlen, total = int(parts[-2]), int(parts[-1])
            body = f.read(total + 2)[:total]
            text = body[hlen:]
            if not text:  # a status message (503: no responders) has headers only
                return {"error": {"description": body[:hlen].decode(errors="replace").strip()}}
            return json.loads(text)
        elif line.startswith(b"-ERR"):
            return {"error": {"description": line.decode(errors="replace").strip()}}
    return None

if __name__ == "__main__":
    port, subject = int(sys.argv[1]), sys.argv[2]
    payload = sys.argv[3].encode() if len(sys.argv) > 3 else b""
    try:
        answer = request(port, subject, payload)
    except OSError as e:
        print("js.py: %s" % e, file=sys.stderr)
        sys.exit(1)
    if answer is None:
        print("js.py: no answer to %s" % subject, file=sys.stderr)
        sys.exit(1)
    print(json.dumps(answer))
    sys.exit(1 if "error" in answer else 0)
