#!/usr/bin/env python3
"""Checks an edge node's Sparkplug B stream with pysparkplug (PyPI, an implementation nobody here wrote), from the
JSON lines sparkplug_subscriber.py writes (each message's topic and raw payload in hex).

Usage: sparkplug_check.py MESSAGES.jsonl GROUP
Per session of the node (an NBIRTH up to the next NBIRTH or NDEATH; docs/reference/home-assistant-mqtt-discovery.md
§5–6 and docs/reference/sparkplug-b.md give the rules with their tck-ids):
- every DBIRTH, DDATA and NDATA decodes with pysparkplug; DATA is decoded with the device's (or node's) birth, so a
  metric the birth did not declare fails (tck-id-topics-dbirth-metric-reqs, operational-behavior-data-publish-dbirth);
- DDATA only for a device born in the session, and no DBIRTH of a device after that device's DDATA in the session
  (payloads-dbirth-order as it applies to a device that appears later);
- no DATA metric carries a datatype on the wire (payloads-metric-datatype-not-req), read from the raw protobuf that
  pysparkplug ships (its Metric cannot tell an absent datatype from 0);
- one device per tag: each device's births name one `Properties/UID`, and each reading in its DDATA (Reading/JSON)
  is of that UID.
Prints one summary line and exits 0, or prints each finding and exits 1.
"""
import json
import sys

from pysparkplug import DBirth, DData, NBirth, NData, Topic
from pysparkplug._protobuf import Payload as RawPayload


def main(path, group):
    findings = []
    sessions = devices_seen = ddata = data_metrics = 0
    uids = {}  # device -> the UID of its births
    node_birth = None
    births = {}  # device -> its DBIRTH in this session
    had_data = set()  # devices with DDATA in this session
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    for n, line in enumerate(lines, 1):
        topic = line["topic"]
        if not topic.startswith(f"spBv1.0/{group}/") or "raw" not in line:
            continue
        t = Topic.from_str(topic)
        kind = t.message_type.name
        raw = bytes.fromhex(line["raw"])
        where = f"message {n} {topic}"
        if kind == "NBIRTH":
            node_birth = NBirth.decode(raw)
            births, had_data = {}, set()
            sessions += 1
        elif kind == "NDEATH":
            node_birth, births, had_data = None, {}, set()
        elif kind == "DBIRTH":
            if t.device_id in had_data:
                findings.append(f"{where}: DBIRTH of {t.device_id} after its DDATA in the same session")
            birth = DBirth.decode(raw)
            births[t.device_id] = birth
            uid = next((m.value for m in birth.metrics if m.name == "Properties/UID"), None)
            if uid is None:
                findings.append(f"{where}: a device birth without Properties/UID")
            elif uids.setdefault(t.device_id, uid) != uid:
                findings.append(f"{where}: device {t.device_id} was born as {uids[t.device_id]} and now as {uid}")
            devices_seen = len(uids)
        elif kind in ("DDATA", "NDATA"):
            birth = births.get(t.device_id) if kind == "DDATA" else node_birth
            if birth is None:
                findings.append(f"{where}: {kind} without a birth of its {'device' if kind == 'DDATA' else 'node'}")
                continue
            try:
                data = (DData if kind == "DDATA" else NData).decode(raw, birth=birth)
            except KeyError as e:
                findings.append(f"{where}: metric {e} not declared in the birth")
                continue
            for i, m in enumerate(RawPayload.FromString(raw).metrics):
                if m.HasField("datatype"):
                    findings.append(f"{where}: metric {m.name} carries datatype {m.datatype} in DATA")
            data_metrics += len(data.metrics)
            if kind == "DDATA":
                ddata += 1
                had_data.add(t.device_id)
                for m in data.metrics:
                    if m.name == "Reading/JSON":
                        uid = json.loads(m.value).get("uid")
                        if uid != uids.get(t.device_id):
                            findings.append(f"{where}: a reading of {uid} in device {t.device_id} ({uids.get(t.device_id)})")
    for f in findings[:20]:
        print(f)
    if findings:
        print(f"{len(findings)} findings")
        return 1
    if sessions == 0 or ddata == 0:
        print(f"nothing to check: {sessions} sessions, {ddata} DDATA")
        return 1
    print(f"ok: {sessions} sessions, {devices_seen} devices (one per tag), {ddata} DDATA with {data_metrics} metrics, "
          "each declared in its birth, none with a datatype, no DBIRTH after its device's DATA")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
