#!/usr/bin/env python3
"""An MQTT subscriber that is not vlogger's: Eclipse Paho (Debian python3-paho-mqtt), for the tests.

Usage: mqtt_subscriber.py HOST PORT TOPIC OUT [SECONDS] [--user U] [--password-file F] [--ca CA] [--persistent 1]
Subscribes to TOPIC at QoS 1 and appends one JSON line per message to OUT: {"topic", "retain", "payload"}
(the payload as text). Writes "ready" to OUT.ready once subscribed. Stops after SECONDS (default 60) or when
the file OUT.stop appears. With --persistent, the session survives a disconnection (clean session off, a fixed
client id): the broker keeps what is published at QoS 1 meanwhile and hands it over on reconnection.
"""
import json
import os
import ssl
import sys
import time

import paho.mqtt.client as mqtt

args = sys.argv[1:]
opts = {}
while len(args) > 4 and args[-2].startswith("--"):
    opts[args[-2]] = args[-1]
    args = args[:-2]
host, port, topic, out = args[0], int(args[1]), args[2], args[3]
seconds = float(args[4]) if len(args) > 4 else 60.0

f = open(out, "a", buffering=1)


def on_connect(client, userdata, flags, rc):
    if rc != 0:
        print(f"connect refused: {rc}", file=sys.stderr)
        sys.exit(2)
    client.subscribe(topic, qos=1)


def on_subscribe(client, userdata, mid, granted):
    open(out + ".ready", "w").write("ready\n")


def on_message(client, userdata, msg):
    f.write(json.dumps({"topic": msg.topic, "retain": bool(msg.retain),
                        "payload": msg.payload.decode("utf-8", "replace")}) + "\n")


persistent = "--persistent" in opts
client = mqtt.Client(client_id=f"paho-test-{os.getpid()}", clean_session=not persistent)
client.reconnect_delay_set(min_delay=0.1, max_delay=1)
if "--user" in opts:
    client.username_pw_set(opts["--user"], open(opts["--password-file"]).read().strip())
if "--ca" in opts:
    client.tls_set(ca_certs=opts["--ca"], cert_reqs=ssl.CERT_REQUIRED)
client.on_connect = on_connect
client.on_subscribe = on_subscribe
client.on_message = on_message
client.connect(host, port, keepalive=30)
client.loop_start()
end = time.time() + seconds
while time.time() < end and not os.path.exists(out + ".stop"):
    time.sleep(0.05)
client.loop_stop()
client.disconnect()
