#!/usr/bin/env python3
"""A Sparkplug B subscriber that is not vlogger's, for the tests: Eclipse Paho (MQTT) and Google's protobuf runtime
with code that Debian's protoc generates, at start, from Eclipse Tahu's schema (sparkplug/sparkplug_b.proto beside
this file; its source in sparkplug/SOURCE.md).

Usage: sparkplug_subscriber.py HOST PORT OUT [SECONDS]
Subscribes to spBv1.0/# at QoS 1 and appends one JSON line per message to OUT:
  {"topic", "retain", "qos", "payload", "raw"} where payload is the decoded Sparkplug payload
  {"timestamp", "seq" (null when absent), "metrics": [{"name", "datatype" (null when absent on the wire),
  "timestamp", "is_historical", "is_null", "value", "properties" ({key: value})}]} (bytes as hex), or, for STATE
  topics, the text; raw is the payload's bytes in hex (for sparkplug_check.py's second decoder).
Writes "ready" to OUT.ready once subscribed. Stops after SECONDS (default 120) or when OUT.stop appears.
Commands, each a file the test writes (taken once, then removed):
  OUT.rebirth  holding a topic (and a count, 1 by default): publishes that many NCMD payloads with "Node Control/Rebirth" = true (Boolean) there;
  OUT.state    holding "HOST_ID online|offline TIMESTAMP": publishes {"online": …, "timestamp": …} retained at
               QoS 1 to spBv1.0/STATE/HOST_ID.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import paho.mqtt.client as mqtt

here = os.path.dirname(os.path.abspath(__file__))
gen = tempfile.mkdtemp(prefix="sparkplug-py-")
subprocess.run(["protoc", f"--python_out={gen}", "-I", os.path.join(here, "sparkplug"), "sparkplug_b.proto"],
               check=True)
sys.path.insert(0, gen)
import sparkplug_b_pb2 as spb  # noqa: E402

host, port, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 120.0
f = open(out, "a", buffering=1)


def value(m):
    which = m.WhichOneof("value")
    if which is None:
        return None
    v = getattr(m, which)
    if which == "bytes_value":
        return v.hex().upper()
    return v


def decode(payload):
    p = spb.Payload()
    p.ParseFromString(payload)
    return {
        "timestamp": p.timestamp if p.HasField("timestamp") else None,
        "seq": p.seq if p.HasField("seq") else None,
        "metrics": [{
            "name": m.name if m.HasField("name") else None,
            "datatype": m.datatype if m.HasField("datatype") else None,
            "timestamp": m.timestamp if m.HasField("timestamp") else None,
            "is_historical": m.is_historical,
            "is_null": m.is_null,
            "value_field": m.WhichOneof("value"),
            "value": value(m),
            "properties": {k: value(v) for k, v in zip(m.properties.keys, m.properties.values)}
            if m.HasField("properties") else None,
        } for m in p.metrics],
    }


def on_connect(client, userdata, flags, rc):
    if rc != 0:
        print(f"connect refused: {rc}", file=sys.stderr)
        sys.exit(2)
    client.subscribe("spBv1.0/#", qos=1)


def on_subscribe(client, userdata, mid, granted):
    open(out + ".ready", "w").write("ready\n")


def on_message(client, userdata, msg):
    if msg.topic.startswith("spBv1.0/STATE/"):
        payload = msg.payload.decode("utf-8", "replace")
    else:
        try:
            payload = decode(msg.payload)
        except Exception as e:  # a payload the schema cannot read is a finding, not a crash
            payload = {"error": str(e)}
    f.write(json.dumps({"topic": msg.topic, "retain": bool(msg.retain), "qos": msg.qos, "payload": payload,
                        "raw": msg.payload.hex()}) + "\n")


client = mqtt.Client(client_id=f"sparkplug-test-{os.getpid()}", clean_session=True)
client.reconnect_delay_set(min_delay=0.1, max_delay=1)
client.on_connect = on_connect
client.on_subscribe = on_subscribe
client.on_message = on_message
client.connect(host, port, keepalive=30)
client.loop_start()
end = time.time() + seconds
while time.time() < end and not os.path.exists(out + ".stop"):
    if os.path.exists(out + ".rebirth"):
        parts = open(out + ".rebirth").read().split()
        os.remove(out + ".rebirth")
        topic, count = parts[0], int(parts[1]) if len(parts) > 1 else 1
        for _ in range(count):
            p = spb.Payload()
            p.timestamp = int(time.time() * 1000)
            m = p.metrics.add()
            m.name = "Node Control/Rebirth"
            m.timestamp = p.timestamp
            m.datatype = 11  # Boolean
            m.boolean_value = True
            client.publish(topic, p.SerializeToString(), qos=0)
    if os.path.exists(out + ".state"):
        host_id, state, ts = open(out + ".state").read().split()
        os.remove(out + ".state")
        client.publish(f"spBv1.0/STATE/{host_id}", json.dumps({"online": state == "online", "timestamp": int(ts)}),
                       qos=1, retain=True)
    time.sleep(0.02)
client.loop_stop()
client.disconnect()
