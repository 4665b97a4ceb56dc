#!/usr/bin/env python3
"""AutoID (OPC 30010) method calls against vlogger's server with Python asyncua (PyPI, FreeOpcUa), not written here.

    autoid_asyncua.py URL READER UID

Connects on security None as anonymous, builds its classes for the server's data types from their
DataTypeDefinition attributes (`load_data_type_definitions`: ScanSettings, ScanData, RfidScanResult come from
the server, not from this script), finds DeviceSet/READER (DI's DeviceSet, ns=DI;i=5001), and calls:

- Scan(ScanSettings{Duration 0, Cycles 1, DataAvailable false}) -> (RfidScanResult[], Status)
- ReadTag(ScanData{ByteString UID}, "UID", 0, Offset 4, Length 8, b"") -> (ResultData, Status)
- WriteTag(ScanData, "UID", 0, Offset 40, Data 4 bytes, b"") -> (Status), then ReadTag of them back
- the scalar twins: WriteBlocks(Uid, FirstBlock 12, 8 bytes) -> (Status), ReadBlocks(Uid, 12, 2) -> (Data, Status),
  WriteBlocks again with the same arguments (a retry: answered from the first call), ReadBlocks of a UID that is
  not in the field (Status 8, no_identifier), ReadBlocks past the end of the tag (Status 7, out_of_range_error)
- ReadBlocks with a String where the UInt16 FirstBlock goes (Bad_InvalidArgument)

It prints one JSON object with what it got, for the Swift test to check.
"""
import asyncio
import dataclasses
import json
import sys
import time

from asyncua import Client, ua


async def run(url, reader, uid_hex):
    client = Client(url, timeout=10)
    client.application_uri = "urn:vlogger:test:autoid-asyncua"
    await client.connect()
    out = {}
    try:
        await client.load_data_type_definitions()
        di = await client.get_namespace_index("http://opcfoundation.org/UA/DI/")
        autoid = await client.get_namespace_index("http://opcfoundation.org/UA/AutoID/")
        device_set = client.get_node(ua.NodeId(5001, di))
        device = None
        for child in await device_set.get_children():
            if (await child.read_browse_name()).Name == reader:
                device = child
        if device is None:
            raise SystemExit("no device %s under DeviceSet" % reader)

        async def method(name, ns):
            return await device.get_child(["%d:%s" % (ns, name)])

        gateway_ns = device.nodeid.NamespaceIndex
        uid = bytes.fromhex(uid_hex)

        # The device's AutoID events: RfidScanEventType (after ScanStart) and RfidAccessEventType (each access).
        events = {"scan": [], "access": []}

        class Handler:
            def event_notification(self, event):
                if hasattr(event, "ScanResult"):
                    events["scan"].append(event)
                elif hasattr(event, "AccessResult"):
                    events["access"].append(event)

        sub = await client.create_subscription(50, Handler())
        scan_type = client.get_node(ua.NodeId(1006, autoid))
        access_type = client.get_node(ua.NodeId(1016, autoid))
        await sub.subscribe_events(device, scan_type)
        await sub.subscribe_events(device, access_type)
        # Scan: the tags in the field now.
        settings = ua.ScanSettings(Duration=0.0, Cycles=1, DataAvailable=False)
        t0 = time.monotonic()
        results, status = await device.call_method(await method("Scan", autoid), settings)
        out["scanMs"] = round((time.monotonic() - t0) * 1000, 1)
        out["scanStatus"] = status
        out["scanned"] = [r.ScanData.Value.hex().upper() for r in results]
        out["scanFields"] = [[f.name for f in dataclasses.fields(r)] for r in results[:1]]
        out["scanCodeTypes"] = sorted({r.CodeType for r in results})
        if results:
            s = results[0].Sighting[0]
            out["sighting"] = {"antenna": s.Antenna, "strength": s.Strength}

        identifier = ua.ScanData(Encoding=1, Value=uid)

        def u16(n):
            return ua.Variant(n, ua.VariantType.UInt16)

        def u32(n):
            return ua.Variant(n, ua.VariantType.UInt32)

        data, status = await device.call_method(
            await method("ReadTag", autoid), identifier, "UID", u16(0), u32(4), u32(8), b"")
        out["readTag"] = {"status": status, "data": data.hex().upper()}
        status = await device.call_method(
            await method("WriteTag", autoid), identifier, "UID", u16(0), u32(40), bytes([0xCA, 0xFE, 0xF0, 0x0D]), b"")
        out["writeTag"] = status
        data, status = await device.call_method(
            await method("ReadTag", autoid), identifier, "UID", u16(0), u32(40), u32(4), b"")
        out["readBack"] = {"status": status, "data": data.hex().upper()}
        data, status = await device.call_method(
            await method("ReadTag", autoid), ua.ScanData(Encoding=1, Value=uid), "EPC", u16(0), u32(0), u32(4), b"")
        out["readTagEpc"] = status

        # ScanStart for 1.5 s: an RfidScanEventType event per tag, each field decoded by asyncua from the event
        # type's properties (DeviceName, ScanResult: RfidScanResult[]).
        status = await device.call_method(await method("ScanStart", autoid), ua.ScanSettings(Duration=1500.0))
        out["scanStart"] = status
        active = await (await device.get_child(["%d:ScanActive" % autoid])).read_value()
        for _ in range(60):
            if events["scan"]:
                break
            await asyncio.sleep(0.05)
        await device.call_method(await method("ScanStop", autoid))
        await asyncio.sleep(0.3)
        out["scanActiveWhileScanning"] = active
        out["scanActiveAfterStop"] = await (await device.get_child(["%d:ScanActive" % autoid])).read_value()
        if events["scan"]:
            e = events["scan"][0]
            r = e.ScanResult[0]
            out["scanEvent"] = {
                "DeviceName": e.DeviceName, "SourceName": e.SourceName, "Severity": e.Severity,
                "Message": e.Message.Text, "CodeType": r.CodeType, "ScanData": r.ScanData.Value.hex().upper(),
                "Antenna": r.Sighting[0].Antenna, "Timestamp": r.Timestamp.isoformat()}
            out["scanEventUids"] = sorted({e.ScanResult[0].ScanData.Value.hex().upper() for e in events["scan"]})

        write_blocks = await method("WriteBlocks", gateway_ns)
        read_blocks = await method("ReadBlocks", gateway_ns)
        payload = bytes(range(0x10, 0x18))
        out["writeBlocks"] = await device.call_method(write_blocks, uid, u16(12), payload)
        out["writeBlocksAgain"] = await device.call_method(write_blocks, uid, u16(12), payload)
        t0 = time.monotonic()
        data, status = await device.call_method(read_blocks, uid, u16(12), u16(2))
        out["readBlocksMs"] = round((time.monotonic() - t0) * 1000, 1)
        out["readBlocks"] = {"status": status, "data": data.hex().upper()}
        data, status = await device.call_method(read_blocks, bytes.fromhex("E004010099999999"), u16(0), u16(1))
        out["absent"] = status
        # LastScanData (the UID of the last tag to arrive, a ByteString) and LastScanTimestamp.
        last = await (await device.get_child(["%d:LastScanData" % autoid])).read_value()
        out["lastScanData"] = last.hex().upper() if isinstance(last, bytes) else repr(last)
        out["lastScanTimestamp"] = str(await (await device.get_child(["%d:LastScanTimestamp" % autoid])).read_value())
        data, status = await device.call_method(read_blocks, uid, u16(65000), u16(2))
        out["pastTheEnd"] = status
        await asyncio.sleep(0.3)
        commands = [e.Command for e in events["access"]]
        out["accessCommands"] = commands
        if events["access"]:
            e = events["access"][-1]
            a = e.AccessResult[0]
            out["accessEvent"] = {"Client": e.Client, "Command": e.Command, "Identifier": a.Identifier.Value.hex().upper(),
                                  "CodeType": a.CodeType, "Severity": e.Severity}
        last = await device.get_child(["%d:LastAccess" % gateway_ns])
        out["lastAccess"] = {
            name: (v.hex().upper() if isinstance(v, bytes) else v if not hasattr(v, "isoformat") else v.isoformat())
            for name in ["Client", "Command", "Identifier", "Status", "Timestamp"]
            for v in [await (await last.get_child(["%d:%s" % (gateway_ns, name)])).read_value()]}
        # A decoded value with a unit: its EngineeringUnits (OPC 10000-8 §5.6.3), decoded by asyncua's own EUInformation.
        try:
            units = await client.get_node(
                ua.NodeId("Tags/E008010000004212/temperature/EngineeringUnits", gateway_ns)).read_value()
            out["temperatureUnits"] = {"UnitId": units.UnitId, "DisplayName": units.DisplayName.Text,
                                       "NamespaceUri": units.NamespaceUri}
        except ua.UaStatusCodeError as e:
            out["temperatureUnits"] = ua.StatusCode(e.code).name
        try:
            await device.call_method(read_blocks, uid, "twelve", u16(2))
            out["wrongType"] = "Good"
        except ua.UaStatusCodeError as e:
            out["wrongType"] = ua.StatusCode(e.code).name
    finally:
        await client.disconnect()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(run(sys.argv[1], sys.argv[2], sys.argv[3])))
