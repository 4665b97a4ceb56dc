#!/usr/bin/env python3
"""A second independent OPC UA client against vlogger's server: o6 (PyPI o6==2.2.0, o6 Automation GmbH's Python
stack on the open62541 C SDK), not written here.

    o6_client.py URL SECURITY [--user NAME --password PW] [--cert DER --key PEM] [--expect-refusal] [--wait S]

The same command line and the same JSON as asyncua_client.py. SECURITY is `None` or `Policy,Mode`
(Basic256Sha256,Sign; Aes128Sha256RsaOaep,SignAndEncrypt ...). The client connects, browses everything below Root
by hierarchical references, reads every attribute of every node, translates a browse path (the
TranslateBrowsePathsToNodeIds service, `Client.browseSimplifiedBrowsePaths`), subscribes to a changing variable
and to the Server object's events, calls GetMonitoredItems, and disconnects. It prints one JSON object, as the
last line of stdout, for the Swift test to check. With --expect-refusal it prints the refusal instead: the
exception's type, the OPC UA status name (`StatusCodeError.symbol`, e.g. BadUserAccessDenied) and its code.

About o6 (from its wheel: METADATA, o6/__init__.py, o6/client.py, o6/subscription.py):
- Licence: the PyPI wheel is the commercial build. Without an o6-issued Credential (a licence file; the native
  module names an O6PYTHON_LICENSE_FILE setting) it runs in "ten-minute Script Mode": `import o6` starts a
  process-wide timer and the process exits with a failure status after ten minutes (METADATA, "Licensing"). The full client API is
  available in that mode; this script finishes in seconds, so it never runs into the limit. On import o6
  prints an ASCII banner to stdout and one "SCRIPT MODE" line to stderr; the JSON is always the last line.
- Every part asyncua_client.py does is available: Client.browse (follows BrowseNext itself), serviceRead
  (raw Read, 27 attributes of one node per request, as asyncua does), browseSimplifiedBrowsePaths (the
  TranslateBrowsePathsToNodeIds service), createSubscription / monitor / monitorEvent, call, read.
- connect() makes a "default subscription" of its own unless told not to; this script opts out
  (createDefaultSubscription=False) so the server sees one subscription with exactly two monitored items, as
  with asyncua.
- Username/password on a None channel: the token is encrypted with the policy the server's UserTokenPolicy
  names (vlogger: Basic256Sha256), which open62541 can only do with a client certificate and key loaded, so
  --cert/--key are loaded whatever SECURITY is (asyncua does the equivalent without them).
- The server certificate is not checked: with no trust list open62541 logs "No certificate store configured.
  Accepting the certificate." and goes on, as asyncua does by default; the server's checks of the *client*
  certificate are what the tests are about.
"""
import argparse
import json
import sys
import threading
import time

import o6
from o6.ns import ns0

# Short names as asyncua spells them -> o6's security-policy URIs.
POLICIES = {p.value.rsplit("#", 1)[-1].replace("_", "").lower(): p.value for p in o6.SecurityPolicy}
MODES = {"None": o6.SecurityMode.NONE, "Sign": o6.SecurityMode.SIGN, "SignAndEncrypt": o6.SecurityMode.SIGN_AND_ENCRYPT}
BAD_ATTRIBUTE_ID_INVALID = 0x80350000
SELECT = ["EventId", "EventType", "SourceNode", "SourceName", "Time", "ReceiveTime", "Message", "Severity"]


def application_uri(der):
    """The URI in the certificate's subjectAltName (OPC 10000-6 §6.2.2), which the ApplicationDescription must
    repeat; found without an X.509 library: after the extension's OID, the first [6] uniformResourceIdentifier."""
    at = der.find(b"\x06\x03\x55\x1d\x11")
    while at >= 0:
        at = der.find(b"\x86", at + 1)
        if at < 0 or at + 2 > len(der):
            break
        n = der[at + 1]
        if n < 0x80 and b":" in der[at + 2:at + 2 + n]:
            return der[at + 2:at + 2 + n].decode("ascii", "replace")
    return "urn:vlogger:test:o6"


def refusal_text(e):
    """`StatusCodeError: BadUserAccessDenied (0x801F0000)`; str() of an o6 StatusCodeError is only the number."""
    code = getattr(e, "code", None)
    parts = [type(e).__name__ + ":", getattr(e, "symbol", None)]
    parts.append("(0x%08X)" % code if isinstance(code, int) else str(e))
    parts += getattr(e, "__notes__", [])
    return " ".join(p for p in parts if p)


def status_name(code):
    try:
        return o6.StatusCodeError(code).symbol
    except Exception:
        return "0x%08X" % code


def run(args):
    secure = args.security != "None"
    kwargs = {}
    if args.cert and args.key:
        with open(args.cert, "rb") as f:
            der = f.read()
        kwargs.update(certificate=der, privateKey=args.key, applicationUri=application_uri(der))
    else:
        kwargs.update(applicationUri="urn:vlogger:test:o6")
    if secure:
        policy, mode = args.security.split(",")
        kwargs.update(securityPolicy=POLICIES[policy.lower()], securityMode=MODES[mode])
    else:
        kwargs.update(securityPolicy=POLICIES["none"], securityMode=o6.SecurityMode.NONE)
    if args.user:
        kwargs.update(username=args.user, password=args.password or "")
    client = o6.Client(args.url, **kwargs)
    client.config.timeout = 10000
    try:
        client.connect(createDefaultSubscription=False)
    except Exception as e:  # the refusal itself is what a refusal test checks
        client.disconnect()
        if args.expect_refusal:
            print(json.dumps({"refused": refusal_text(e)}))
            return 0
        raise
    if args.expect_refusal:
        print(json.dumps({"refused": None}))
        client.disconnect()
        return 1
    out = {}
    try:
        # Browse everything below Root, forward hierarchical references (and subtypes).
        seen = {}
        todo = [o6.NodeId("i=84")]
        while todo:
            node = todo.pop()
            key = str(node)
            if key in seen:
                continue
            seen[key] = node
            refs = client.browse(
                node, direction=ns0.datatypes.BrowseDirection.FORWARD,
                reftype=o6.NodeId("i=33"), refsubtypes=True)
            for r in refs:
                target = r.nodeId
                if target.svr or target.nsu:  # a node on another server or by URI: not ours to read
                    continue
                todo.append(o6.NodeId(target))
        out["nodes"] = len(seen)
        # Every attribute of every node: a Bad status other than Bad_AttributeIdInvalid is a failure.
        bad = []
        reads = 0
        definitions = 0

        attributes = list(o6.AttributeId)
        for key, node in seen.items():
            request = ns0.datatypes.ReadRequest()
            request.timestampsToReturn = ns0.datatypes.TimestampsToReturn.BOTH
            items = []
            for attribute in attributes:
                item = ns0.datatypes.ReadValueId()
                item.nodeId = node
                item.attributeId = attribute
                items.append(item)
            request.nodesToRead = items
            response = client.serviceRead(request)
            response.responseHeader.serviceResult.check(message="Read " + key)
            if len(response.results) != len(attributes):
                raise RuntimeError("Read %s: %d results for %d attributes" % (key, len(response.results), len(attributes)))
            browse_name = None
            for attribute, dv in zip(attributes, response.results):
                reads += 1
                code = int(dv.status or 0)
                if attribute == o6.AttributeId.BROWSE_NAME and not code & 0x80000000:
                    browse_name = str(getattr(dv.value, "name", ""))
                if code & 0x80000000 and code != BAD_ATTRIBUTE_ID_INVALID:
                    bad.append("%s %s %s" % (key, attribute.name, status_name(code)))
                if attribute == o6.AttributeId.DATA_TYPE_DEFINITION and not code & 0x80000000:
                    definitions += 1  # decoded by open62541 as its StructureDefinition or EnumDefinition
                    if key == "i=322":
                        out["userNameTokenFields"] = [str(f.name) for f in dv.value.fields]
                        out["userNameTokenBase"] = str(dv.value.baseDataType)
                    if browse_name == "RfidScanResult":  # AutoID's (o6 numbers namespaces by its own table)
                        out["rfidScanResultFields"] = [str(f.name) for f in dv.value.fields]
        out["definitions"] = definitions
        out["attributeReads"] = reads
        out["badReads"] = bad[:1000]
        out["badReadCount"] = len(bad)
        # TranslateBrowsePathsToNodeIds.
        result = client.browseSimplifiedBrowsePaths(
            "i=84", [o6.QualifiedName(0, n) for n in ("Objects", "Server", "ServerStatus", "CurrentTime")])
        result.statusCode.check(message="TranslateBrowsePathsToNodeIds")
        current = o6.NodeId(result.targets[0].targetId)
        out["translated"] = str(current)
        # A subscription to a changing variable and to the Server object's events.
        lock = threading.Lock()
        changes = []
        events = []

        def datachange(value):
            with lock:
                changes.append(str(value))

        def event(fields):
            message = fields.get("/Message")
            severity = fields.get("/Severity")
            with lock:
                events.append({
                    "message": getattr(message, "text", message),
                    "severity": int(severity) if severity is not None else None})

        sub = client.createSubscription(publishingInterval=50.0)
        client.monitor(current, datachange, samplingInterval=50.0, subscription=sub)
        selects = []
        for name in SELECT:
            operand = ns0.datatypes.SimpleAttributeOperand()
            operand.typeDefinitionId = o6.NodeId("i=2041")  # BaseEventType
            operand.browsePath = [o6.QualifiedName(0, name)]
            operand.attributeId = o6.AttributeId.VALUE
            selects.append(operand)
        event_filter = ns0.datatypes.EventFilter()
        event_filter.selectClauses = selects
        client.monitorEvent("i=2253", event, filter=event_filter, subscription=sub)
        for _ in range(int(args.wait * 20)):
            with lock:
                if len(changes) >= 3 and events:
                    break
            time.sleep(0.05)
        with lock:
            out["changes"] = len(changes)
            out["events"] = events[:3]
        # Call: GetMonitoredItems on the Server object.
        status, *outputs = client.call("i=2253", "i=11492", [o6.UInt32(sub.id)])
        o6.StatusCode(status).check(message="GetMonitoredItems")
        out["monitoredItems"] = len(outputs[0])
        sub.delete()
        out["namespaces"] = [str(u) for u in client.read("i=2255")]
        # The DI model's DeviceSet, found by the namespace's URI.
        if "http://opcfoundation.org/UA/DI/" in out["namespaces"]:
            di = out["namespaces"].index("http://opcfoundation.org/UA/DI/")
            result = client.browseSimplifiedBrowsePaths("i=85", [o6.QualifiedName(di, "DeviceSet")])
            result.statusCode.check(message="TranslateBrowsePathsToNodeIds DeviceSet")
            out["deviceSet"] = str(o6.NodeId(result.targets[0].targetId))
    finally:
        client.disconnect()
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
    code = run(p.parse_args())
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
