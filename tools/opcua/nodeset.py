#!/usr/bin/env python3
"""Generates the OPC UA server's part of namespace 0 from the OPC Foundation's published NodeSet (issue 49).

Input, from the public repository OPCFoundation/UA-Nodeset at a commit (not committed here):
  Schema/Opc.Ua.NodeSet2.xml   every node of namespace 0, its attributes, references and initial values

Output (committed): Sources/OPCUAServer/Generated/Namespace0.swift, the chosen nodes as JSON lines in a string
(decoded once when the server starts), with the commit it was made from.

    python3 tools/opcua/nodeset.py /tmp/UA-Nodeset

Which nodes: every ReferenceType; the folders under Root; the Server object with the children a client expects
(ServerArray, NamespaceArray, ServerStatus and its parts, ServiceLevel, Auditing, ServerCapabilities with its
operation limits, ServerDiagnostics' EnabledFlag, VendorServerInfo, ServerRedundancy, GetMonitoredItems);
BaseEventType with its fields; and, closed over, every type those nodes name (their type definition, their data
type, the supertypes of each up to the root, an enumeration's EnumStrings or EnumValues, a method's arguments).
The full namespace 0 has some 4,900 nodes; a client that browses everything of this one reads about 600.
Initial values are carried over from the NodeSet as OPC UA Binary Variants (hex), so the server decodes them with
the same decoder as everything else.
"""
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
]


def nid(text):
    """A namespace-0 numeric node id from its XML text or alias; None for another namespace or form."""
    if text is None:
        return None
    text = ALIASES.get(text, text)
    if text.startswith("i="):
        return int(text[2:])
    return None


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


def enc_nodeid(text):
    n = nid(text)
    if n is None:
        raise ValueError("node id " + str(text))
    if n < 256:
        return bytes([0, n])
    return bytes([1, 0]) + struct.pack("<H", n)


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
    "Int32": (6, lambda e: struct.pack("<i", int(e.text))),
    "UInt32": (7, lambda e: struct.pack("<I", int(e.text))),
    "String": (12, lambda e: enc_string(e.text or "")),
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


def main():
    global ALIASES
    root_dir = sys.argv[1]
    path = os.path.join(root_dir, "Schema", "Opc.Ua.NodeSet2.xml")
    commit = os.environ.get("UA_NODESET_COMMIT") or subprocess.run(
        ["git", "-C", root_dir, "log", "-1", "--format=%h %cs"], capture_output=True, text=True).stdout.strip()
    tree = ET.parse(path).getroot()
    ALIASES = {a.get("Alias"): a.text for a in tree.find(U + "Aliases")}
    nodes = {}
    for el in tree:
        kind = el.tag.replace(U, "")
        if kind not in CLASSES:
            continue
        n = nid(el.get("NodeId"))
        if n is not None:
            nodes[n] = el

    def refs(el):
        out = []
        r = el.find(U + "References")
        for ref in (r if r is not None else []):
            t, target = nid(ref.get("ReferenceType")), nid(ref.text)
            if t is not None and target is not None:
                out.append((t, target, ref.get("IsForward", "true") != "false"))
        return out

    # Every reference, seen from both ends (the NodeSet writes most of them on one end only).
    both = {n: set() for n in nodes}
    for n, el in nodes.items():
        for t, target, forward in refs(el):
            both[n].add((t, target, forward))
            if target in both:
                both[target].add((t, n, not forward))

    chosen = set(SEEDS) | {n for n, el in nodes.items() if el.tag == U + "UAReferenceType"}
    todo = list(chosen)
    while todo:
        n = todo.pop()
        el = nodes[n]
        more = set()
        dt = nid(el.get("DataType"))
        if dt is not None:
            more.add(dt)
        for t, target, forward in both[n]:
            if t == 40 and forward:  # HasTypeDefinition
                more.add(target)
            if t == 45 and not forward:  # HasSubtype, inverse: the supertype
                more.add(target)
            if t == 37 and forward:  # HasModellingRule
                more.add(target)
            if t == 46 and forward and el.tag in (U + "UADataType", U + "UAMethod"):
                more.add(target)  # an enumeration's EnumStrings/EnumValues, a method's arguments
        for m in more:
            if m in nodes and m not in chosen:
                chosen.add(m)
                todo.append(m)

    lines = []
    skipped = []
    for n in sorted(chosen):
        el = nodes[n]
        kind = el.tag.replace(U, "")
        node = {"i": n, "c": CLASSES[kind], "b": el.get("BrowseName").split(":")[-1],
                "d": el.findtext(U + "DisplayName")}
        desc = el.findtext(U + "Description")
        if desc:
            node["de"] = desc
        for attr, key in (("IsAbstract", "a"), ("Symmetric", "s"), ("Executable", None)):
            if attr == "IsAbstract" and kind in ("UAObjectType", "UAVariableType", "UAReferenceType",
                                                 "UADataType"):
                node["a"] = el.get("IsAbstract") == "true"
            if attr == "Symmetric" and kind == "UAReferenceType":
                node["s"] = el.get("Symmetric") == "true"
        inverse = el.findtext(U + "InverseName")
        if inverse:
            node["in"] = inverse
        if kind in ("UAVariable", "UAVariableType"):
            node["dt"] = nid(el.get("DataType", "i=24")) or 24
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
                skipped.append("%d (%s)" % (n, value[0].tag.replace(X, "")))
            else:
                node["v"] = v.hex()
        node["r"] = sorted([t, target, 1 if forward else 0] for t, target, forward in both[n] if target in chosen)
        lines.append(json.dumps(node, separators=(",", ":"), ensure_ascii=False))

    out_dir = os.path.join(os.path.dirname(__file__), "..", "..", "Sources", "OPCUAServer", "Generated")
    os.makedirs(out_dir, exist_ok=True)
    text = "\n".join(lines).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    with open(os.path.join(out_dir, "Namespace0.swift"), "w") as f:
        f.write("// Generated by tools/opcua/nodeset.py from OPCFoundation/UA-Nodeset %s, Schema/Opc.Ua.NodeSet2.xml\n"
                % commit)
        f.write("// (OPC Foundation, MIT licence). Do not edit. %d of namespace 0's nodes, one JSON object a line:\n"
                % len(lines))
        f.write("// i node id, c node class, b browse name, d display name, de description, a abstract, s symmetric,\n")
        f.write("// in inverse name, dt data type, vr value rank, ad array dimensions, al access level, ms minimum\n")
        f.write("// sampling interval, en event notifier, v value (a binary Variant, hex), r references\n")
        f.write("// [type, target, forward].\n\n")
        f.write("// swift-format-ignore-file\n")
        f.write('let namespace0Lines = """\n')
        f.write(text)
        f.write('\n"""\n')
    print("%d nodes; values left out: %s" % (len(lines), ", ".join(skipped) or "none"))


if __name__ == "__main__":
    main()
