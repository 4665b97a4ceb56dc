#!/usr/bin/env python3
"""AutoID (OPC 30010) method calls against vlogger's server with o6 (PyPI o6==2.2.0 on open62541), not written here.

    autoid_o6.py URL READER UID

The same calls and the same JSON as autoid_asyncua.py, with o6's own generated AutoID bindings (o6.ns.auto_id,
AutoID 1.01: its ScanSettings, ScanData union and RfidScanResult classes encode and decode the structures; the
server's DataTypeDefinitions are not used). Security None, anonymous.

Two things o6 2.2.0 does that the script and the server allow for: an ExtensionObject argument goes out with o6's
own namespace index of the AutoID model (65525) in its type id, not the server's (vlogger takes an index it does not
have with the number of the expected encoding as that encoding: docs/opcua.md); and results come back as
ExtensionObjects, decoded here with o6.decodeBinary and the binding's class. See o6_client.py for o6's licence mode (it
runs for ten minutes without a licence file; this script takes seconds) and its banner (the JSON is the last line).
"""
import json
import sys
import threading
import time

import o6
from o6.ns import auto_id, ns0

BAD = 0x80000000


def run(url, reader, uid_hex):
    client = o6.Client(
        url, applicationUri="urn:vlogger:test:autoid-o6", securityPolicy=[
            p.value for p in o6.SecurityPolicy if p.value.endswith("#None")][0],
        securityMode=o6.SecurityMode.NONE)
    client.config.timeout = 10000
    client.connect(createDefaultSubscription=False)
    # The server's namespace table mapped onto o6's (the AutoID bindings' index to the server's): without it o6
    # sends its own index in an ExtensionObject's type id.
    client.updateRemoteNamespaces()
    out = {}
    try:
        def children(node):
            refs = client.browse(
                node, direction=ns0.datatypes.BrowseDirection.FORWARD, reftype=o6.NodeId("i=33"), refsubtypes=True)
            return {str(r.browseName.name): o6.NodeId(r.nodeId) for r in refs}

        # DI's DeviceSet (DI i=5001), found from Objects by its browse name: o6 numbers namespaces by its own table.
        device_set = children(o6.NodeId("i=85"))["DeviceSet"]
        device = children(device_set)[reader]
        methods = children(device)

        def call(name, args):
            status, *outputs = client.call(device, methods[name], args)
            return int(status), outputs

        uid = bytes.fromhex(uid_hex)
        settings = auto_id.datatypes.ScanSettings()
        settings.duration = 0.0
        settings.cycles = 1
        settings.dataAvailable = False
        t0 = time.monotonic()
        status, (results, scan_status) = call("Scan", [settings])
        out["scanMs"] = round((time.monotonic() - t0) * 1000, 1)
        out["scanStatus"] = int(scan_status)
        # o6 2.2.0 hands each result back as an ExtensionObject (its type id mapped to ns=auto_id;i=5011, RfidScanResult's
        # encoding); its AutoID binding decodes the body.
        results = [o6.decodeBinary(r.body, auto_id.datatypes.RfidScanResult) if isinstance(r, o6.ExtensionObject) else r
                   for r in results]
        out["scanTypes"] = sorted({type(r).__name__ for r in results})
        out["scanned"] = [bytes(r.scanData.byteString).hex().upper() for r in results]
        out["scanCodeTypes"] = sorted({str(r.codeType) for r in results})
        if results:
            s = results[0].sighting[0]
            out["sighting"] = {"antenna": int(s.antenna), "strength": int(s.strength)}

        def identifier():
            d = auto_id.datatypes.ScanData()
            d.byteString = uid
            return d

        status, (data, st) = call(
            "ReadTag", [identifier(), o6.String("UID"), o6.UInt16(0), o6.UInt32(4), o6.UInt32(8), o6.ByteString(b"")])
        out["readTag"] = {"status": int(st), "data": bytes(data).hex().upper()}
        status, (st,) = call(
            "WriteTag", [identifier(), o6.String("UID"), o6.UInt16(0), o6.UInt32(44),
                         o6.ByteString(bytes([0xBE, 0xEF, 0x00, 0x01])), o6.ByteString(b"")])
        out["writeTag"] = int(st)
        status, (data, st) = call(
            "ReadTag", [identifier(), o6.String("UID"), o6.UInt16(0), o6.UInt32(44), o6.UInt32(4), o6.ByteString(b"")])
        out["readBack"] = {"status": int(st), "data": bytes(data).hex().upper()}

        # ScanStart for 1.5 s with the device's RfidScanEventType events subscribed (select clauses by browse name,
        # the type from o6's AutoID binding): each event's ScanResult decoded by the binding.
        lock = threading.Lock()
        events = []

        def event(fields):
            with lock:
                events.append(fields)

        selects = []
        for name in ["EventType", "SourceName", "Message", "DeviceName", "ScanResult"]:
            operand = ns0.datatypes.SimpleAttributeOperand()
            operand.typeDefinitionId = o6.NodeId(auto_id.objtypes.RfidScanEventType)
            operand.browsePath = [o6.QualifiedName(0 if name in ("EventType", "SourceName", "Message") else
                                                   auto_id.index, name)]
            operand.attributeId = o6.AttributeId.VALUE
            selects.append(operand)
        event_filter = ns0.datatypes.EventFilter()
        event_filter.selectClauses = selects
        sub = client.createSubscription(publishingInterval=50.0)
        client.monitorEvent(device, event, filter=event_filter, subscription=sub)
        settings = auto_id.datatypes.ScanSettings()
        settings.duration = 1500.0
        status, (st,) = call("ScanStart", [settings])
        out["scanStart"] = int(st)
        for _ in range(60):
            with lock:
                if events:
                    break
            time.sleep(0.05)
        call("ScanStop", [])
        with lock:
            got = list(events)
        if got:
            # o6 keys a field by its type and browse path: `ns=3;i=1006/3:ScanResult`.
            f = {k.rsplit("/", 1)[-1].split(":")[-1]: v for k, v in got[0].items()}
            scan = [o6.decodeBinary(r.body, auto_id.datatypes.RfidScanResult) if isinstance(r, o6.ExtensionObject)
                    else r for r in (f.get("ScanResult") or [])]
            out["scanEvent"] = {
                "DeviceName": str(f.get("DeviceName")), "SourceName": str(f.get("SourceName")),
                "CodeType": str(scan[0].codeType) if scan else None,
                "ScanData": bytes(scan[0].scanData.byteString).hex().upper() if scan else None,
                "Antenna": int(scan[0].sighting[0].antenna) if scan else None}
            out["scanEventKeys"] = sorted(got[0].keys())

        payload = bytes(range(0x20, 0x28))
        status, (st,) = call("WriteBlocks", [o6.ByteString(uid), o6.UInt16(14), o6.ByteString(payload)])
        out["writeBlocks"] = int(st)
        t0 = time.monotonic()
        status, (data, st) = call("ReadBlocks", [o6.ByteString(uid), o6.UInt16(14), o6.UInt16(2)])
        out["readBlocksMs"] = round((time.monotonic() - t0) * 1000, 1)
        out["readBlocks"] = {"status": int(st), "data": bytes(data).hex().upper()}
        status, (data, st) = call(
            "ReadBlocks", [o6.ByteString(bytes.fromhex("E004010099999999")), o6.UInt16(0), o6.UInt16(1)])
        out["absent"] = int(st)
        # LastScanData (the UID of the last tag to arrive, a ByteString).
        last = client.read(methods["LastScanData"])
        out["lastScanData"] = bytes(last).hex().upper() if last is not None else None
        status, outputs = call("ReadBlocks", [o6.ByteString(uid), o6.UInt32(14), o6.UInt16(2)])
        out["wrongType"] = o6.StatusCodeError(status).symbol if status & BAD else "Good"
    finally:
        client.disconnect()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1], sys.argv[2], sys.argv[3]))
