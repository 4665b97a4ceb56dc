#!/usr/bin/env python3
"""Alarms and conditions (OPC 10000-9) against vlogger's server with o6 (PyPI o6==2.2.0 on open62541), not written here.

    alarms_o6.py URL RULE

The same steps and the same JSON as alarms_asyncua.py, with an event filter written out here (open62541 has no
filter builder): the fields by their browse paths from BaseEventType, and the ConditionId (ConditionType i=2782, an
empty path, the NodeId attribute), which open62541 sends with a null browse path. Security None, anonymous. See
o6_client.py for o6's licence mode (ten minutes without a licence file; this script takes seconds) and its banner
(the JSON is the last line).
"""
import json
import sys
import threading
import time

import o6
from o6.ns import ns0

FIELDS = [["EventId"], ["EventType"], ["SourceNode"], ["SourceName"], ["Time"], ["Message"], ["Severity"],
          ["ConditionName"], ["Retain"], ["AckedState", "Id"], ["ActiveState", "Id"], ["Comment"], ["ClientUserId"],
          ["HighLimit"], ["LowLimit"]]
BAD = 0x80000000


def status_name(status):
    status = int(status)
    if status & BAD:
        return o6.StatusCodeError(status).symbol
    return "Good"


def plain(v):
    if isinstance(v, o6.LocalizedText):
        return str(v.text)
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, o6.NodeId):
        return str(v)
    if hasattr(v, "item"):
        return v.item()
    return v


def run(url, rule):
    client = o6.Client(
        url, applicationUri="urn:vlogger:test:alarms-o6", securityPolicy=[
            p.value for p in o6.SecurityPolicy if p.value.endswith("#None")][0],
        securityMode=o6.SecurityMode.NONE)
    client.config.timeout = 10000
    client.connect(createDefaultSubscription=False)
    out = {}
    try:
        selects = []
        for path in FIELDS:
            op = ns0.datatypes.SimpleAttributeOperand()
            op.typeDefinitionId = o6.NodeId("i=2041")
            op.browsePath = [o6.QualifiedName(0, n) for n in path]
            op.attributeId = o6.AttributeId.VALUE
            selects.append(op)
        cid = ns0.datatypes.SimpleAttributeOperand()
        cid.typeDefinitionId = o6.NodeId("i=2782")
        cid.browsePath = []
        cid.attributeId = o6.AttributeId.NODE_ID
        selects.append(cid)
        event_filter = ns0.datatypes.EventFilter()
        event_filter.selectClauses = selects

        lock = threading.Lock()
        events = []

        def on_event(fields):
            with lock:
                events.append({k: v for k, v in dict(fields).items()})

        sub = client.createSubscription(publishingInterval=100.0)
        client.monitorEvent("i=2253", on_event, filter=event_filter, subscription=sub)

        def kind(e):
            t = e.get("/EventType")
            return str(t) if t is not None else None

        def wait_for(pred, seconds=10):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                with lock:
                    for i, e in enumerate(events):
                        if pred(i, e):
                            return i
                time.sleep(0.05)
            return None

        status, *_ = client.call("i=2782", "i=3875", [o6.UInt32(sub.id)])
        out["refreshStatus"] = status_name(status)
        end = wait_for(lambda i, e: kind(e) == "i=2788")
        with lock:
            start = next((i for i, e in enumerate(events) if kind(e) == "i=2787"), None)
            if start is None or end is None:
                raise SystemExit("no RefreshStart/RefreshEnd: %s" % [kind(e) for e in events])
            refreshed = events[start + 1:end]
        out["refreshed"] = [{k.lstrip("/"): plain(v) for k, v in e.items()
                             if k in ("/ConditionName", "/SourceName", "/Severity", "/Retain", "/AckedState/Id",
                                      "/ActiveState/Id", "/EventType", "/HighLimit", "/LowLimit", "i=2782#NodeId")}
                            for e in refreshed]
        target = next((e for e in refreshed if str(e.get("/ConditionName")) == rule and bool(e.get("/Retain"))
                       and e.get("/AckedState/Id") is not None and not bool(e.get("/AckedState/Id"))), None)
        if target is None:
            raise SystemExit("no unacknowledged condition of %s among %s" % (rule, out["refreshed"]))
        condition = target["i=2782#NodeId"]
        out["condition"] = str(condition)
        comment = o6.LocalizedText("checked by o6", "en")
        with lock:
            before = len(events)
        status, *_ = client.call(condition, "i=9111", [o6.ByteString(bytes(target["/EventId"])), comment])
        out["acknowledge"] = status_name(status)
        i = wait_for(lambda i, e: i >= before and str(e.get("i=2782#NodeId")) == str(condition)
                     and bool(e.get("/AckedState/Id")))
        with lock:
            acked = events[i] if i is not None else {}
        out["ackedEvent"] = {k.lstrip("/"): plain(v) for k, v in acked.items()
                             if k in ("/AckedState/Id", "/ActiveState/Id", "/Retain", "/Comment", "/ClientUserId",
                                      "/Message")}
        status, *_ = client.call(condition, "i=9111", [o6.ByteString(bytes(acked.get("/EventId") or b"")), comment])
        out["again"] = status_name(status)
        status, *_ = client.call(condition, "i=9111", [o6.ByteString(b"\x00" * 16), comment])
        out["unknownEventId"] = status_name(status)
        statuses = {}
        t0 = time.monotonic()
        for _ in range(200):
            status, *_ = client.call("i=2782", "i=3875", [o6.UInt32(sub.id)])
            name = status_name(status)
            statuses[name] = statuses.get(name, 0) + 1
        out["floodMs"] = round((time.monotonic() - t0) * 1000, 1)
        out["flood"] = statuses
        sub.delete()
    finally:
        client.disconnect()
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2])
