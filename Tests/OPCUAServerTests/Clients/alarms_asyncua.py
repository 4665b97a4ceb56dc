#!/usr/bin/env python3
"""Alarms and conditions (OPC 10000-9) against vlogger's server with Python asyncua (PyPI, FreeOpcUa), not written here.

    alarms_asyncua.py URL RULE

Connects on security None as anonymous and subscribes to the Server object's events with the filter asyncua builds
itself by browsing the server's AlarmConditionType (i=2915) and LimitAlarmType (i=2955) (`subscribe_alarms_and_conditions`:
every field those types declare, and the ConditionId). Then:

- ConditionRefresh (i=3875 on ConditionType i=2782) with its subscription's id: a RefreshStartEvent (i=2787), the
  retained conditions, a RefreshEndEvent (i=2788);
- Acknowledge (i=9111) on the first unacknowledged condition of RULE, with the EventId of its refreshed event and a
  comment; the event that follows (AckedState/Id true), and AckedState/Id read from the condition's node;
- Acknowledge again (Bad_ConditionBranchAlreadyAcked) and with an EventId the server never sent (Bad_EventIdUnknown);
- 200 ConditionRefresh calls in a row (a flood): each one's status, and the server still answering a Read after.

It prints one JSON object with what it got, for the Swift test to check.
"""
import asyncio
import json
import sys
import time

from asyncua import Client, ua


def value(fields, name):
    v = fields.get(name)
    return None if v is None else v.Value


def plain(v):
    if isinstance(v, ua.NodeId):
        return v.to_string()
    if isinstance(v, ua.LocalizedText):
        return v.Text
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, ua.StatusCode):
        return v.value
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return v


async def run(url, rule):
    client = Client(url, timeout=10)
    client.application_uri = "urn:vlogger:test:alarms-asyncua"
    await client.connect()
    out = {}
    try:
        events = []

        class Handler:
            def event_notification(self, event):
                events.append(event.get_event_props_as_fields_dict())

        sub = await client.create_subscription(100, Handler())
        await sub.subscribe_alarms_and_conditions(
            client.nodes.server, evtypes=[ua.NodeId(ua.ObjectIds.AlarmConditionType),
                                          ua.NodeId(ua.ObjectIds.LimitAlarmType)])
        condition_type = client.get_node(ua.NodeId(ua.ObjectIds.ConditionType))
        refresh = ua.NodeId(ua.ObjectIds.ConditionType_ConditionRefresh)

        def kind(fields):
            t = value(fields, "EventType")
            return t.Identifier if isinstance(t, ua.NodeId) and t.NamespaceIndex == 0 else None

        async def wait_for(pred, seconds=10):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                for i, e in enumerate(events):
                    if pred(e):
                        return i
                await asyncio.sleep(0.05)
            return None

        await condition_type.call_method(refresh, ua.Variant(sub.subscription_id, ua.VariantType.UInt32))
        end = await wait_for(lambda e: kind(e) == 2788)
        start = next((i for i, e in enumerate(events) if kind(e) == 2787), None)
        if start is None or end is None:
            raise SystemExit("no RefreshStart/RefreshEnd: %s" % [kind(e) for e in events])
        refreshed = events[start + 1:end]
        out["refreshed"] = [{k: plain(v.Value) for k, v in e.items()
                             if k in ("ConditionName", "SourceName", "Severity", "Retain", "AckedState/Id",
                                      "ActiveState/Id", "EventType", "HighLimit", "LowLimit", "NodeId")}
                            for e in refreshed]
        out["fieldNames"] = sorted(refreshed[0].keys()) if refreshed else []
        target = next((e for e in refreshed if value(e, "ConditionName") == rule and value(e, "Retain")
                       and value(e, "AckedState/Id") is False), None)
        if target is None:
            raise SystemExit("no unacknowledged condition of %s among %s" % (rule, out["refreshed"]))
        condition = client.get_node(value(target, "NodeId"))
        out["condition"] = condition.nodeid.to_string()
        acknowledge = ua.NodeId(ua.ObjectIds.AcknowledgeableConditionType_Acknowledge)
        comment = ua.Variant(ua.LocalizedText("checked by asyncua"), ua.VariantType.LocalizedText)
        events_before = len(events)
        await condition.call_method(acknowledge, ua.Variant(value(target, "EventId"), ua.VariantType.ByteString), comment)
        out["acknowledge"] = "Good"
        i = await wait_for(lambda e: events.index(e) >= events_before and value(e, "NodeId") == condition.nodeid
                           and value(e, "AckedState/Id") is True)
        acked = events[i] if i is not None else {}
        out["ackedEvent"] = {k: plain(v.Value) for k, v in acked.items()
                             if k in ("AckedState/Id", "ActiveState/Id", "Retain", "Comment", "ClientUserId", "Message")}
        out["ackedStateRead"] = await (await condition.get_child(["0:AckedState", "0:Id"])).read_value()
        for name, event_id in (("again", value(acked or target, "EventId")), ("unknownEventId", b"\x00" * 16)):
            try:
                await condition.call_method(acknowledge, ua.Variant(event_id, ua.VariantType.ByteString), comment)
                out[name] = "Good"
            except ua.UaStatusCodeError as e:
                out[name] = type(e).__name__
        # A flood of ConditionRefresh: each answered, the queue bounded, the server still there.
        statuses = {}
        t0 = time.monotonic()
        for _ in range(200):
            try:
                await condition_type.call_method(refresh, ua.Variant(sub.subscription_id, ua.VariantType.UInt32))
                statuses["Good"] = statuses.get("Good", 0) + 1
            except ua.UaStatusCodeError as e:
                statuses[type(e).__name__] = statuses.get(type(e).__name__, 0) + 1
        out["floodMs"] = round((time.monotonic() - t0) * 1000, 1)
        out["flood"] = statuses
        out["afterFlood"] = str(await client.nodes.server_state.read_value())
        # The plant's view: an asset's value with its unit, range and status, as asyncua decodes them.
        namespaces = await client.get_namespace_array()
        gateway = next(i for i, u in enumerate(namespaces) if u.startswith("urn:vlogger:gateway:"))
        asset_value = client.get_node(ua.NodeId("Assets/CAGE-12/temperature", gateway))
        dv = await asset_value.read_data_value(raise_on_bad_status=False)
        eu_range = await client.get_node(ua.NodeId("Assets/CAGE-12/temperature/EURange", gateway)).read_value()
        units = await client.get_node(ua.NodeId("Assets/CAGE-12/temperature/EngineeringUnits", gateway)).read_value()
        out["assetValue"] = {"value": dv.Value.Value, "status": dv.StatusCode.value if dv.StatusCode else 0,
                             "sourceTimestamp": dv.SourceTimestamp.isoformat() if dv.SourceTimestamp else None,
                             "range": [eu_range.Low, eu_range.High], "unit": units.DisplayName.Text,
                             "name": await client.get_node(ua.NodeId("Assets/CAGE-12/Name", gateway)).read_value()}
    finally:
        await client.disconnect()
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    asyncio.run(run(sys.argv[1], sys.argv[2]))
