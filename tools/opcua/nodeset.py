#!/usr/bin/env python3
"""Generates the OPC UA server's generated nodes: its part of namespace 0 and the DI model (issue 49).

Input, from the public repository OPCFoundation/UA-Nodeset at a commit (not committed here):
  Schema/Opc.Ua.NodeSet2.xml      every node of namespace 0, its attributes, references and initial values
  DI/Opc.Ua.Di.NodeSet2.xml       OPC 10000-100 Devices (DI) 1.04, the model AutoID's devices derive from
  AutoID/Opc.Ua.AutoID.NodeSet2.xml  OPC 30010 AutoID 1.01: the readers' types, their methods, events and data types

Output (committed): Sources/OPCUAServer/Generated/Namespace0.swift, DeviceIntegration.swift and AutoIDModel.swift,
the chosen nodes
as JSON lines in a string (decoded once when the server starts), with the commit they were made from.

    UA_NODESET_COMMIT="a2d4ae8 2024-10-18" python3 tools/opcua/nodeset.py /tmp/UA-Nodeset

Which nodes: every ReferenceType; the folders under Root; the Server object with the children a client expects
(ServerArray, NamespaceArray, ServerStatus and its parts, ServiceLevel, Auditing, ServerCapabilities with its
operation limits, ServerDiagnostics' EnabledFlag, VendorServerInfo, ServerRedundancy, GetMonitoredItems);
BaseEventType with its fields; the DataTypeDefinition types and the user identity tokens; all of DI and of AutoID
but their XML and JSON encodings and their type dictionaries (the server speaks UA Binary and describes types by their
DataTypeDefinition); and, closed over, every node those name (their type definition, their data type, the
supertypes of each up to the root, an enumeration's EnumStrings or EnumValues, a method's arguments, a structure's
binary encoding and its fields' data types). The full namespace 0 has some 4,900 nodes.
Node ids are written with the server's namespace indices: 0, 1 the server's own (none generated), 2 DI, 3 AutoID.
Initial values are carried over from the NodeSet as OPC UA Binary Variants (hex), so the server decodes them with
the same decoder as everything else. A DataType's <Definition> becomes its DataTypeDefinition attribute, a
StructureDefinition with the supertypes' fields first (see definition()) or an EnumDefinition.
"""
import base64
import datetime
import json
import os
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

U = "{http://opcfoundation.org/UA/2011/03/UANodeSet.xsd}"
X = "{http://opcfoundation.org/UA/2008/02/Types.xsd}"
CLASSES = {"UAObject": 1, "UAVariable": 2, "UAMethod": 4, "UAObjectType": 8, "UAVariableType": 16,
           "UAReferenceType": 32, "UADataType": 64, "UAView": 128}

SEEDS = [
    84, 85, 86, 87, 88, 89, 90, 91,  # Root and its folders
    2253,  # Server
    2254, 2255,  # ServerArray, NamespaceArray
    2256, 2257, 2258, 2259, 2260, 2261, 2262, 2263, 2264, 2265, 2266, 2992, 2993,  # ServerStatus and parts
    2267, 2994,  # ServiceLevel, Auditing
    2268, 2269, 2271, 2272, 2735, 2736, 2737, 3704, 11702, 11703,  # ServerCapabilities
    11704, 11705, 11707, 11709, 11710, 11711, 11712, 11713, 11714,  # OperationLimits
    2274, 2294,  # ServerDiagnostics, EnabledFlag
    2295, 2296, 3709,  # VendorServerInfo, ServerRedundancy, RedundancySupport
    11492,  # GetMonitoredItems
    2041, 2042, 2043, 2044, 2045, 2046, 2047, 3190, 2050, 2051,  # BaseEventType and its fields
    58, 61, 62, 63, 68, 24, 29, 22, 26, 27, 28,  # base types
    77, 78, 80, 11508, 11510,  # modelling rules: Mandatory, Optional, OptionalPlaceholder...
    97, 99, 100, 101, 102,  # DataTypeDefinition, StructureDefinition, EnumDefinition, StructureField, EnumField
    316, 319, 322, 325, 938,  # the user identity tokens (UserNameIdentityToken: a derived structure)
    884,  # Range (a value's EURange)
]

# Event and condition types whose instance declarations come too (the mandatory ones, down their own mandatory
# children, and the optional ones named in WITH_OPTIONAL): the alarms' condition instances are made from them, and a
# client builds its event filter by browsing them (asyncua's get_filter_from_event_type). ConditionType,
# AcknowledgeableConditionType, AlarmConditionType, LimitAlarmType, RefreshStartEventType, RefreshEndEventType.
WITH_DECLARATIONS = [2782, 2881, 2915, 2955, 2787, 2788]
WITH_OPTIONAL = [
    3875,  # ConditionType's ConditionRefresh (called on the type)
    11125, 11126,  # LimitAlarmType's HighLimit and LowLimit (a range rule's limits)
]


# The server's namespace table: namespace 0, the server's own (its ApplicationUri, OPC 10000-5 §8.3.2: index 1 is
# the local server's), then the companion models generated here.
SERVER_NAMESPACES = [
    "http://opcfoundation.org/UA/", None, "http://opcfoundation.org/UA/DI/", "http://opcfoundation.org/UA/AutoID/"]

# The NodeSet files read, each with the Swift file and string its nodes go to.
FILES = [
    ("Schema/Opc.Ua.NodeSet2.xml", "Namespace0.swift", "namespace0Lines"),
    ("DI/Opc.Ua.Di.NodeSet2.xml", "DeviceIntegration.swift", "deviceIntegrationLines"),
    ("AutoID/Opc.Ua.AutoID.NodeSet2.xml", "AutoIDModel.swift", "autoIdLines"),
]


class Model:
    """One NodeSet file: its aliases and how its namespace indices map onto the server's."""

    def __init__(self, path):
        self.tree = ET.parse(path).getroot()
        self.aliases = {a.get("Alias"): a.text for a in self.tree.find(U + "Aliases")}
        uris = self.tree.find(U + "NamespaceUris")
        local = [u.text for u in uris] if uris is not None else []
        self.map = {0: 0}
        for k, uri in enumerate(local, start=1):
            self.map[k] = SERVER_NAMESPACES.index(uri)

    def nid(self, text):
        """(server namespace, number) of a node id's XML text or alias; None for a string or GUID id."""
        if text is None:
            return None
        text = self.aliases.get(text, text).strip()
        ns = 0
        if text.startswith("ns="):
            head, text = text.split(";", 1)
            ns = self.map[int(head[3:])]
        if text.startswith("i="):
            return (ns, int(text[2:]))
        return None

    def qualified(self, text):
        """(server namespace, name) of a browse name `K:Name`."""
        head, sep, rest = text.partition(":")
        if sep and head.isdigit():
            return (self.map[int(head)], rest)
        return (0, text)


MODEL = None


def nid(text):
    return MODEL.nid(text)


def enc_string(s):
    if s is None:
        return struct.pack("<i", -1)
    b = s.encode("utf-8")
    return struct.pack("<i", len(b)) + b


def enc_localized(el):
    locale = el.findtext(X + "Locale")
    text = el.findtext(X + "Text")
    mask = (1 if locale else 0) | (2 if text is not None else 0)
    out = bytes([mask])
    if locale:
        out += enc_string(locale)
    if text is not None:
        out += enc_string(text)
    return out


def enc_text(text):
    """A LocalizedText with text only (or nothing)."""
    if text is None:
        return b"\x00"
    return b"\x02" + enc_string(text)


def enc_id(n):
    """A node id (namespace, number) in the smallest binary form (OPC 10000-6 §5.2.2.9)."""
    ns, i = n
    if ns == 0 and i < 256:
        return bytes([0, i])
    if ns < 256 and i < 65536:
        return bytes([1, ns]) + struct.pack("<H", i)
    return bytes([2]) + struct.pack("<HI", ns, i)


def enc_nodeid(text):
    n = nid(text)
    if n is None:
        raise ValueError("node id " + str(text))
    return enc_id(n)


def enc_datetime(el):
    """xs:dateTime as 100 ns ticks since 1601-01-01 UTC (OPC 10000-6 §5.2.2.5)."""
    t = datetime.datetime.fromisoformat(el.text.strip().replace("Z", "+00:00"))
    delta = t - datetime.datetime(1601, 1, 1, tzinfo=datetime.timezone.utc)
    return struct.pack("<q", (delta.days * 86400 + delta.seconds) * 10_000_000 + delta.microseconds * 10)


def enc_qualified(el):
    ns = int(el.findtext(X + "NamespaceIndex", "0"))
    return struct.pack("<H", MODEL.map[ns]) + enc_string(el.findtext(X + "Name"))


def enc_bytes(el):
    data = base64.b64decode((el.text or "").strip())
    return struct.pack("<i", len(data)) + data


def enc_extension(el):
    """An ExtensionObject of the NodeSet's values: Argument or EnumValueType, binary body."""
    type_id = el.find(X + "TypeId/" + X + "Identifier").text
    body = el.find(X + "Body")[0]
    kind = body.tag.replace(X, "")
    if kind == "Argument":
        dims = body.find(X + "ArrayDimensions")
        dim_values = [int(u.text) for u in dims.findall(X + "UInt32")] if dims is not None else None
        desc = body.find(X + "Description")
        data = enc_string(body.findtext(X + "Name"))
        data += enc_nodeid(body.find(X + "DataType/" + X + "Identifier").text)
        data += struct.pack("<i", int(body.findtext(X + "ValueRank", "-1")))
        if dim_values is None:
            data += struct.pack("<i", -1)
        else:
            data += struct.pack("<i", len(dim_values)) + b"".join(struct.pack("<I", d) for d in dim_values)
        data += enc_localized(desc) if desc is not None else b"\x00"
        encoding = 298  # Argument_Encoding_DefaultBinary
    elif kind == "EnumValueType":
        data = struct.pack("<q", int(body.findtext(X + "Value")))
        dn, de = body.find(X + "DisplayName"), body.find(X + "Description")
        data += enc_localized(dn) if dn is not None else b"\x00"
        data += enc_localized(de) if de is not None else b"\x00"
        encoding = 8251  # EnumValueType_Encoding_DefaultBinary
    else:
        raise ValueError("ExtensionObject body " + kind + " (" + type_id + ")")
    return enc_nodeid("i=%d" % encoding) + b"\x01" + struct.pack("<i", len(data)) + data


SCALARS = {
    "Boolean": (1, lambda e: bytes([1 if e.text.strip() == "true" else 0])),
    "Byte": (3, lambda e: struct.pack("<B", int(e.text))),
    "UInt16": (5, lambda e: struct.pack("<H", int(e.text))),
    "Int32": (6, lambda e: struct.pack("<i", int(e.text))),
    "UInt32": (7, lambda e: struct.pack("<I", int(e.text))),
    "Double": (11, lambda e: struct.pack("<d", float(e.text))),
    "String": (12, lambda e: enc_string(e.text or "")),
    "DateTime": (13, enc_datetime),
    "ByteString": (15, enc_bytes),
    "NodeId": (17, lambda e: enc_nodeid(e.findtext(X + "Identifier"))),
    "QualifiedName": (20, enc_qualified),
    "LocalizedText": (21, enc_localized),
    "ExtensionObject": (22, enc_extension),
}


def enc_value(value):
    """The NodeSet's <Value> as a binary Variant, or None where it is a type this generator leaves out."""
    el = value[0]
    tag = el.tag.replace(X, "")
    if tag.startswith("ListOf"):
        name = tag[len("ListOf"):]
        if name not in SCALARS:
            return None
        code, enc = SCALARS[name]
        items = list(el)
        return bytes([code | 0x80]) + struct.pack("<i", len(items)) + b"".join(enc(i) for i in items)
    if tag not in SCALARS:
        return None
    code, enc = SCALARS[tag]
    return bytes([code]) + enc(el)


def definition(n, nodes, models, supertype):
    """A DataType's DataTypeDefinition attribute as a binary Variant holding a StructureDefinition or an
    EnumDefinition (OPC 10000-3 §8.48 and the EnumDefinition beside it), or None for a type without one (the built-in types, abstract roots).

    A NodeSet's <Definition> lists a structure's own fields only; the attribute lists the supertype's fields first
    and then the type's own (OPC 10000-3 §8.48: "the fields of the supertype ... are at the beginning"), so the
    supertype's fields are prepended here, all the way up to Structure."""
    el, model = nodes[n], models[n]
    d = el.find(U + "Definition")
    if d is None:
        return None
    global MODEL
    MODEL = model
    chain = []
    t = n
    while t in supertype:
        chain.append(t)
        t = supertype[t]
    chain.append(t)
    if (0, 29) in chain or d.get("IsOptionSet") == "true":
        fields = b""
        items = d.findall(U + "Field")
        for f in items:
            dn = f.find(U + "DisplayName")
            de = f.find(U + "Description")
            fields += struct.pack("<q", int(f.get("Value", "0")))
            fields += enc_text(dn.text if dn is not None else f.get("Name"))
            fields += enc_text(de.text if de is not None else None)
            fields += enc_string(f.get("Name"))
        body = struct.pack("<i", len(items)) + fields
        return bytes([22]) + enc_id((0, 123)) + b"\x01" + struct.pack("<i", len(body)) + body
    if (0, 22) not in chain:
        return None
    # The fields from the root down: each structure's own, in its supertype's order first.
    own = []
    for t in reversed(chain):
        if t == (0, 22) or t not in nodes:
            continue
        td = nodes[t].find(U + "Definition")
        if td is None:
            continue
        MODEL = models[t]
        for f in td.findall(U + "Field"):
            own.append((f, models[t]))
    MODEL = model
    union = d.get("IsUnion") == "true"
    optional = any(f.get("IsOptional") == "true" for f, _ in own)
    subtyped = any(f.get("AllowSubTypes") == "true" for f, _ in own)
    structure_type = (4 if subtyped else 2) if union else (3 if subtyped else (1 if optional else 0))
    # An abstract type's DefaultEncodingId is null (§8.48), even where its NodeSet gives it an encoding (AutoID's
    # ScanResult does).
    encoding = None if el.get("IsAbstract") == "true" else next(
        (target for rt, target, fwd in BOTH[n] if rt == (0, 38) and fwd and target in nodes
         and nodes[target].get("BrowseName") == "Default Binary"), None)
    body = enc_id(encoding or (0, 0)) + enc_id(supertype.get(n, (0, 22))) + struct.pack("<i", structure_type)
    body += struct.pack("<i", len(own))
    for f, m in own:
        MODEL = m
        de = f.find(U + "Description")
        body += enc_string(f.get("Name"))
        body += enc_text(de.text if de is not None else None)
        body += enc_id(m.nid(f.get("DataType", "i=24")) or (0, 24))
        body += struct.pack("<i", int(f.get("ValueRank", "-1")))
        dims = f.get("ArrayDimensions")
        if dims:
            values = [int(x) for x in dims.split(",")]
            body += struct.pack("<i", len(values)) + b"".join(struct.pack("<I", v) for v in values)
        else:
            body += struct.pack("<i", -1)
        body += struct.pack("<I", int(f.get("MaxStringLength", "0")))
        body += bytes([1 if f.get("IsOptional") == "true" else 0])
    MODEL = model
    return bytes([22]) + enc_id((0, 122)) + b"\x01" + struct.pack("<i", len(body)) + body


def main():
    global MODEL, BOTH
    root_dir = sys.argv[1]
    commit = os.environ.get("UA_NODESET_COMMIT") or subprocess.run(
        ["git", "-C", root_dir, "log", "-1", "--format=%h %cs"], capture_output=True, text=True).stdout.strip()
    nodes, models, origin = {}, {}, {}
    for index, (path, _, _) in enumerate(FILES):
        model = Model(os.path.join(root_dir, path))
        for el in model.tree:
            kind = el.tag.replace(U, "")
            if kind not in CLASSES:
                continue
            n = model.nid(el.get("NodeId"))
            if n is not None:
                nodes[n], models[n], origin[n] = el, model, index

    def refs(n):
        el, model = nodes[n], models[n]
        out = []
        r = el.find(U + "References")
        for ref in (r if r is not None else []):
            t, target = model.nid(ref.get("ReferenceType")), model.nid(ref.text)
            if t is not None and target is not None:
                out.append((t, target, ref.get("IsForward", "true") != "false"))
        return out

    # Every reference, seen from both ends (the NodeSet writes most of them on one end only).
    BOTH = {n: set() for n in nodes}
    for n in nodes:
        for t, target, forward in refs(n):
            BOTH[n].add((t, target, forward))
            if target in BOTH:
                BOTH[target].add((t, n, not forward))
    supertype = {n: target for n in nodes for t, target, forward in BOTH[n] if t == (0, 45) and not forward}

    def left_out(n):
        """A companion model's XML and JSON encodings and its (deprecated) type dictionary: the server speaks
        UA Binary only and describes types by their DataTypeDefinition."""
        el = nodes[n]
        if el.get("BrowseName") in ("Default XML", "Default JSON"):
            return True
        return any(t == (0, 40) and forward and target in ((0, 72), (0, 69)) for t, target, forward in BOTH[n])

    chosen = {(0, s) for s in SEEDS} | {n for n, el in nodes.items() if el.tag == U + "UAReferenceType"}

    def mandatory(n):
        return any(t == (0, 37) and forward and target == (0, 78) for t, target, forward in BOTH[n])

    # The condition types' instance declarations (WITH_DECLARATIONS).
    todo = [(0, t) for t in WITH_DECLARATIONS]
    chosen |= set(todo) | {(0, o) for o in WITH_OPTIONAL}
    todo += [(0, o) for o in WITH_OPTIONAL]
    while todo:
        n = todo.pop()
        for t, target, forward in BOTH[n]:
            if forward and t in ((0, 46), (0, 47)) and target in nodes and target not in chosen and mandatory(target):
                chosen.add(target)
                todo.append(target)
    chosen |= {n for n in nodes if origin[n] > 0 and not left_out(n)}
    todo = list(chosen)
    while todo:
        n = todo.pop()
        el = nodes[n]
        more = set()
        dt = models[n].nid(el.get("DataType"))
        if dt is not None:
            more.add(dt)
        for t, target, forward in BOTH[n]:
            if t == (0, 40) and forward:  # HasTypeDefinition
                more.add(target)
            if t == (0, 45) and not forward:  # HasSubtype, inverse: the supertype
                more.add(target)
            if t == (0, 37) and forward:  # HasModellingRule
                more.add(target)
            if t == (0, 46) and forward and el.tag in (U + "UADataType", U + "UAMethod"):
                more.add(target)  # an enumeration's EnumStrings/EnumValues, a method's arguments
            if t == (0, 38) and forward and nodes.get(target) is not None and \
                    nodes[target].get("BrowseName") == "Default Binary":
                more.add(target)  # a structure's binary encoding, named by its DataTypeDefinition
        d = el.find(U + "Definition")
        if el.tag == U + "UADataType" and d is not None:
            for f in d.findall(U + "Field"):
                ft = models[n].nid(f.get("DataType"))
                if ft is not None:
                    more.add(ft)  # a field's data type, named by the DataTypeDefinition
        for m in more:
            if m in nodes and m not in chosen and not left_out(m):
                chosen.add(m)
                todo.append(m)

    out = {name: [] for _, name, _ in FILES}
    skipped = []
    definitions = 0
    for n in sorted(chosen):
        el, MODEL = nodes[n], models[n]
        kind = el.tag.replace(U, "")
        bns, bname = MODEL.qualified(el.get("BrowseName"))
        node = {"i": n[1]}
        if n[0]:
            node["n"] = n[0]
        node.update({"c": CLASSES[kind], "b": bname})
        if bns:
            node["bn"] = bns
        node["d"] = el.findtext(U + "DisplayName")
        desc = el.findtext(U + "Description")
        if desc:
            node["de"] = desc
        if kind in ("UAObjectType", "UAVariableType", "UAReferenceType", "UADataType"):
            node["a"] = el.get("IsAbstract") == "true"
        if kind == "UAReferenceType":
            node["s"] = el.get("Symmetric") == "true"
        inverse = el.findtext(U + "InverseName")
        if inverse:
            node["in"] = inverse
        if kind in ("UAVariable", "UAVariableType"):
            dt = MODEL.nid(el.get("DataType", "i=24")) or (0, 24)
            node["dt"] = dt[1]
            if dt[0]:
                node["dn"] = dt[0]
            node["vr"] = int(el.get("ValueRank", "-1"))
            dims = el.get("ArrayDimensions")
            if dims:
                node["ad"] = [int(x) for x in dims.split(",")]
            if kind == "UAVariable":
                node["al"] = int(el.get("AccessLevel", "1"))
                node["ms"] = float(el.get("MinimumSamplingInterval", "0"))
        if kind == "UAObject":
            node["en"] = int(el.get("EventNotifier", "0"))
        value = el.find(U + "Value")
        if value is not None and len(value):
            v = enc_value(value)
            if v is None:
                skipped.append("%s (%s)" % (n, value[0].tag.replace(X, "")))
            else:
                node["v"] = v.hex()
        if kind == "UADataType":
            df = definition(n, nodes, models, supertype)
            MODEL = models[n]
            if df is not None:
                node["df"] = df.hex()
                definitions += 1
        rs = []
        for t, target, forward in BOTH[n]:
            if target not in chosen:
                continue
            if t[0] == 0 and target[0] == 0:
                rs.append([t[1], target[1], 1 if forward else 0])
            else:
                rs.append([t[1], target[1], 1 if forward else 0, t[0], target[0]])
        node["r"] = sorted(rs)
        out[FILES[origin[n]][1]].append(json.dumps(node, separators=(",", ":"), ensure_ascii=False))

    out_dir = os.path.join(os.path.dirname(__file__), "..", "..", "Sources", "OPCUAServer", "Generated")
    os.makedirs(out_dir, exist_ok=True)
    for path, name, variable in FILES:
        lines = out[name]
        text = "\n".join(lines).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
        uri = Model(os.path.join(root_dir, path)).tree.find(U + "Models")[0].get("ModelUri")
        with open(os.path.join(out_dir, name), "w") as f:
            f.write("// Generated by tools/opcua/nodeset.py from OPCFoundation/UA-Nodeset %s, %s\n" % (commit, path))
            f.write("// (OPC Foundation, MIT licence). Do not edit. %d nodes of %s, one JSON object a line:\n"
                    % (len(lines), uri))
            f.write("// i node id, n its namespace (the server's index; none: 0), c node class, b browse name, bn its\n")
            f.write("// namespace, d display name, de description, a abstract, s symmetric, in inverse name, dt data\n")
            f.write("// type, dn its namespace, vr value rank, ad array dimensions, al access level, ms minimum sampling\n")
            f.write("// interval, en event notifier, v value (a binary Variant, hex), df DataTypeDefinition (a binary\n")
            f.write("// Variant, hex), r references [type, target, forward] or [type, target, forward, type's namespace,\n")
            f.write("// target's namespace].\n\n")
            f.write("// swift-format-ignore-file\n")
            f.write('let %s = """\n' % variable)
            f.write(text)
            f.write('\n"""\n')
    print("%s; %d DataTypeDefinitions; values left out: %s" % (
        ", ".join("%s %d nodes" % (name, len(out[name])) for _, name, _ in FILES), definitions,
        ", ".join(skipped) or "none"))


if __name__ == "__main__":
    main()
