#!/usr/bin/env python3
"""An independent OPC UA client against vlogger's server: Python asyncua (PyPI, FreeOpcUa), not written here.

    asyncua_client.py URL SECURITY [--user NAME --password PW] [--cert DER --key PEM] [--expect-refusal] [--wait S]

SECURITY is `None` or `Policy,Mode` (Basic256Sha256,Sign; Aes128Sha256RsaOaep,SignAndEncrypt ...). The client
connects, browses everything below Root by hierarchical references, reads every attribute of every node,
translates a browse path, subscribes to a changing variable and to the Server object's events, calls
GetMonitoredItems, builds its classes for the server's data types from their DataTypeDefinition attributes
(`load_data_type_definitions`), reads UserNameIdentityToken's definition, finds DI's DeviceSet, and disconnects. It prints one JSON object: what it saw, for the Swift test to check. With
--expect-refusal it prints the refusal (the exception's text) instead.
"""
import argparse
import asyncio
import datetime
import json
import sys

from asyncua import Client, ua
from asyncua.crypto import security_policies
from asyncua.ua.ua_binary import struct_to_binary


async def run(args):
    client = Client(args.url, timeout=10)
    # The ApplicationUri the client claims must be its certificate's (OPC 10000-4 §5.6.2): read from its SAN.
    client.application_uri = "urn:vlogger:test:asyncua"
    if args.cert:
        from cryptography import x509
        with open(args.cert, "rb") as f:
            cert = x509.load_der_x509_certificate(f.read())
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        uris = san.get_values_for_type(x509.UniformResourceIdentifier)
        if uris:
            client.application_uri = uris[0]
    if args.user:
        client.set_user(args.user)
        client.set_password(args.password)
    if args.security != "None":
        policy, mode = args.security.split(",")
        await client.set_security(
            getattr(security_policies, "SecurityPolicy" + policy), args.cert, args.key,
            mode=getattr(ua.MessageSecurityMode, mode))
    try:
        await client.connect()
    except Exception as e:  # the refusal itself is what a refusal test checks
        if args.expect_refusal:
            print(json.dumps({"refused": type(e).__name__ + ": " + str(e)}))
            return 0
        raise
    if args.expect_refusal:
        print(json.dumps({"refused": None}))
        await client.disconnect()
        return 1
    out = {}
    try:
        # Browse everything below Root, forward hierarchical references (and subtypes).
        seen = {}
        todo = [client.get_node(ua.NodeId(84, 0))]
        while todo:
            node = todo.pop()
            key = node.nodeid.to_string()
            if key in seen:
                continue
            seen[key] = node
            refs = await node.get_references(
                refs=ua.ObjectIds.HierarchicalReferences, direction=ua.BrowseDirection.Forward, includesubtypes=True)
            todo.extend(client.get_node(r.NodeId) for r in refs)
        out["nodes"] = len(seen)
        # Every attribute of every node: a Bad status other than Bad_AttributeIdInvalid is a failure.
        bad = []
        reads = 0
        attributes = list(ua.AttributeIds)
        for key, node in seen.items():
            values = await node.read_attributes(attributes)
            for attribute, dv in zip(attributes, values):
                reads += 1
                code = dv.StatusCode_.value if hasattr(dv, "StatusCode_") else dv.StatusCode.value
                if code & 0x80000000 and code != ua.StatusCodes.BadAttributeIdInvalid:
                    bad.append("%s %s %s" % (key, attribute.name, ua.StatusCode(code).name))
        out["attributeReads"] = reads
        out["badReads"] = bad[:1000]
        out["badReadCount"] = len(bad)
        # TranslateBrowsePathsToNodeIds.
        current = await client.nodes.root.get_child(["0:Objects", "0:Server", "0:ServerStatus", "0:CurrentTime"])
        out["translated"] = current.nodeid.to_string()
        # A subscription to a changing variable and to the Server object's events.
        changes = []
        events = []

        class Handler:
            def datachange_notification(self, node, val, data):
                changes.append(str(val))

            def event_notification(self, event):
                events.append({"message": event.Message.Text, "severity": event.Severity})

        sub = await client.create_subscription(50, Handler())
        await sub.subscribe_data_change(current)
        await sub.subscribe_events(client.nodes.server)
        for _ in range(int(args.wait * 20)):
            if len(changes) >= 3 and events:
                break
            await asyncio.sleep(0.05)
        out["changes"] = len(changes)
        out["events"] = events[:3]
        # Call: GetMonitoredItems on the Server object.
        handles = await client.nodes.server.call_method(
            ua.NodeId(11492, 0), ua.Variant(sub.subscription_id, ua.VariantType.UInt32))
        out["monitoredItems"] = len(handles[0])
        await sub.delete()
        out["namespaces"] = await client.get_namespace_array()
        # DataTypeDefinition: asyncua builds its classes for the server's types from that attribute alone.
        loaded = await client.load_data_type_definitions()
        out["loadedTypes"] = sorted(loaded.keys())
        definition = await client.get_node(ua.NodeId(322, 0)).read_data_type_definition()
        out["userNameTokenFields"] = [f.Name for f in definition.Fields]
        out["userNameTokenBase"] = definition.BaseDataType.to_string()
        if "http://opcfoundation.org/UA/AutoID/" in out["namespaces"]:
            autoid = out["namespaces"].index("http://opcfoundation.org/UA/AutoID/")
            definition = await client.get_node(ua.NodeId(3007, autoid)).read_data_type_definition()
            out["rfidScanResultFields"] = [f.Name for f in definition.Fields]
            # One RfidScanResult through the class asyncua built from the served definition.
            t = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
            result = ua.RfidScanResult(
                CodeType="UID", ScanData=ua.ScanData(Encoding=1, Value=bytes.fromhex("E004010012345678")), Timestamp=t,
                Sighting=[ua.RfidSighting(Antenna=1, Strength=-40, Timestamp=t, CurrentPowerLevel=0)])
            out["rfidScanResultBytes"] = struct_to_binary(result).hex()
        # The DI model's DeviceSet, found by the namespace's URI.
        if "http://opcfoundation.org/UA/DI/" in out["namespaces"]:
            di = out["namespaces"].index("http://opcfoundation.org/UA/DI/")
            device_set = await client.nodes.objects.get_child(["%d:DeviceSet" % di])
            out["deviceSet"] = device_set.nodeid.to_string()
            # The AutoID readers under it: each RfidReaderDeviceType's DeviceName and DeviceStatus.
            if "http://opcfoundation.org/UA/AutoID/" in out["namespaces"]:
                autoid = out["namespaces"].index("http://opcfoundation.org/UA/AutoID/")
                devices = {}
                for child in await device_set.get_children(refs=ua.ObjectIds.HasComponent):
                    if (await child.read_type_definition()) != ua.NodeId(1003, autoid):
                        continue
                    name = await (await child.get_child(["%d:DeviceName" % autoid])).read_value()
                    status = await (await child.get_child(["%d:DeviceStatus" % autoid])).read_value()
                    devices[name] = int(status)
                out["devices"] = devices
    finally:
        await client.disconnect()
    out["closed"] = True
    print(json.dumps(out))
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("security")
    p.add_argument("--user")
    p.add_argument("--password")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--expect-refusal", action="store_true")
    p.add_argument("--wait", type=float, default=5, help="seconds to wait for 3 changes and an event")
    sys.exit(asyncio.run(run(p.parse_args())))


if __name__ == "__main__":
    main()
