#!/usr/bin/env python3
"""A webhook receiver for the tests, written with Python's standard library (not vlogger's code).

Usage: webhook_receiver.py PORTFILE OUT SECRETFILE FAILFIRST GONEKIND [ROTATEFILE]
Listens on 127.0.0.1 (a free port, written to PORTFILE). Each POST: the HMAC-SHA256 of the body with the secret
(first line of SECRETFILE, read again for every request) is compared with the X-Vlogger-Signature header; a body
that does not verify is answered 401; the first FAILFIRST requests are answered 500; an event whose "kind" is
GONEKIND is answered 410; any other 200. With ROTATEFILE (the sender's secret file): the first request that does
not verify makes the receiver write its own secret into ROTATEFILE (mode 0600, replaced atomically) before it
answers 401, as an operator rotating a secret on both ends would, the receiver first. One JSON line per request goes
to OUT: {"key", "status", "kind", "verified"}. Runs until killed.
"""
import hashlib
import hmac
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

portfile, out, secretfile, failfirst, gone = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
rotatefile = sys.argv[6] if len(sys.argv) > 6 else None
rotated = [False]


def current_secret():
    return open(secretfile).read().splitlines()[0].strip().encode()
log = open(out, "a", buffering=1)
lock = threading.Lock()
count = [0]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        secret = current_secret()
        expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        verified = hmac.compare_digest(expected, self.headers.get("X-Vlogger-Signature", ""))
        try:
            o = json.loads(body)
        except ValueError:
            o = {}
        with lock:
            count[0] += 1
            n = count[0]
        if not verified:
            status = 401
            with lock:
                if rotatefile and not rotated[0]:
                    rotated[0] = True
                    tmp = rotatefile + ".new"
                    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                    os.write(fd, secret + b"\n")
                    os.close(fd)
                    os.rename(tmp, rotatefile)
        elif n <= failfirst:
            status = 500
        elif o.get("kind") == gone:
            status = 410
        else:
            status = 200
        log.write(json.dumps({"key": o.get("key"), "header_key": self.headers.get("X-Vlogger-Key"),
                              "status": status, "kind": o.get("kind"), "verified": verified}) + "\n")
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
open(portfile + ".tmp", "w").write(str(server.server_address[1]))
import os
os.rename(portfile + ".tmp", portfile)
server.serve_forever()
