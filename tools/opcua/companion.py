#!/usr/bin/env python3
"""Generates a companion model's data types from its NodeSet2 (issue 49 item 1, the AutoID model of issue 50).

Input, from the public repository OPCFoundation/UA-Nodeset at a commit (not committed here):
  AutoID/Opc.Ua.AutoID.NodeSet2.xml   OPC 30010 AutoID 1.01 (OPC Foundation, MIT licence)

Output (committed): Sources/OPCUA/Generated/AutoID.swift: each DataType's <Definition> as Swift: enumerations
(Int32), structures (a structure with optional fields has an EncodingMask, a UInt32 whose bit n says the n-th
optional field follows, counted over the supertype's fields first: OPC 10000-6 §5.2.7), unions (a UInt32
SwitchField, 0 for no field, n for the n-th: OPC 10000-6 §5.2.8), and the String subtypes as typealiases. The
NodeIds take the index the server gives the model's URI (the fourth argument; the NodeSet's own index, 1, without
it): vlogger's server has AutoID at 3 (namespace 0, the server's own at 1, DI at 2: tools/opcua/nodeset.py).

    python3 tools/opcua/companion.py /tmp/UA-Nodeset AutoID/Opc.Ua.AutoID.NodeSet2.xml AutoID 3
"""
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(__file__))
from generate import lower_camel, plain  # noqa: E402

U = "{http://opcfoundation.org/UA/2011/03/UANodeSet.xsd}"

# Namespace 0's data types by number: (Swift type, default, encode, decode, minimum size).
NS0 = {
    1: ("Bool", "false", "w.write({v})", "try r.readBool()", 1),
    2: ("Int8", "0", "w.write({v})", "try r.readInt8()", 1),
    3: ("UInt8", "0", "w.write({v})", "try r.readUInt8()", 1),
    4: ("Int16", "0", "w.write({v})", "try r.readInt16()", 2),
    5: ("UInt16", "0", "w.write({v})", "try r.readUInt16()", 2),
    6: ("Int32", "0", "w.write({v})", "try r.readInt32()", 4),
    7: ("UInt32", "0", "w.write({v})", "try r.readUInt32()", 4),
    8: ("Int64", "0", "w.write({v})", "try r.readInt64()", 8),
    9: ("UInt64", "0", "w.write({v})", "try r.readUInt64()", 8),
    10: ("Float", "0", "w.write({v})", "try r.readFloat()", 4),
    11: ("Double", "0", "w.write({v})", "try r.readDouble()", 8),
    12: ("String?", "nil", "w.write(string: {v})", "try r.readString()", 4),
    13: ("DateTime", "DateTime(rawValue: 0)", "{v}.encode(to: &w)", "try DateTime(from: &r)", 8),
    15: ("[UInt8]?", "nil", "w.write(byteString: {v})", "try r.readByteString()", 4),
    17: ("NodeId", ".null", "{v}.encode(to: &w)", "try NodeId(from: &r)", 2),
    21: ("LocalizedText", "LocalizedText(nil)", "{v}.encode(to: &w)", "try LocalizedText(from: &r)", 1),
    22: ("ExtensionObject", ".null", "{v}.encode(to: &w)", "try ExtensionObject(from: &r)", 3),
    24: ("Variant", ".null", "{v}.encode(to: &w)",
         "try r.nested(\"Variant\") { (r: inout BinaryReader) throws(DecodingError) in try Variant(from: &r) }", 1),
    290: ("Double", "0", "w.write({v})", "try r.readDouble()", 8),  # Duration
    294: ("DateTime", "DateTime(rawValue: 0)", "{v}.encode(to: &w)", "try DateTime(from: &r)", 8),  # UtcTime
}


def main(repo, path, model, index=None):
    commit = subprocess.run(
        ["git", "-C", repo, "log", "-1", "--format=%h %cs"], capture_output=True, text=True).stdout.strip()
    commit = commit or os.environ.get("UA_NODESET_COMMIT", "(commit not known)")
    root = ET.parse(os.path.join(repo, path)).getroot()
    aliases = {a.get("Alias"): a.text for a in root.find(U + "Aliases")}
    uri = root.find(U + "NamespaceUris")[0].text

    def nid(text):
        text = aliases.get(text, text)
        m = re.match(r"^(?:ns=(\d+);)?i=(\d+)$", text or "")
        return (int(m.group(1) or 0), int(m.group(2))) if m else None

    types = {}
    for dt in root.findall(U + "UADataType"):
        refs = dt.find(U + "References")
        supertype = next((nid(r.text) for r in refs if r.get("ReferenceType") == "HasSubtype"
                          and r.get("IsForward") == "false"), None)
        encoding = None
        for r in refs:
            if r.get("ReferenceType") == "HasEncoding":
                target = next((n for n in root.findall(U + "UAObject") if n.get("NodeId") == r.text), None)
                if target is not None and target.get("BrowseName") == "Default Binary":
                    encoding = nid(r.text)
        types[nid(dt.get("NodeId"))] = dict(
            name=dt.get("BrowseName").split(":")[-1], el=dt, supertype=supertype, encoding=encoding,
            definition=dt.find(U + "Definition"))

    def kind(t):
        d = t["definition"]
        if d is None:
            return "alias"
        if t["supertype"] == (0, 29):
            return "enum"
        return "union" if d.get("IsUnion") == "true" else "struct"

    def info(data_type):
        """(Swift type, default, encode template, decode expression, minimum size) of a field's DataType."""
        if data_type is None:
            return NS0[24]
        n = nid(data_type)
        if n[0] == 0:
            if n[1] not in NS0:
                raise SystemExit("namespace 0 type i=%d is not mapped" % n[1])
            return NS0[n[1]]
        t = types[n]
        k = kind(t)
        if k == "alias":
            return info("i=%d" % t["supertype"][1])
        name = t["name"]
        if k == "enum":
            return (name, "." + lower_camel(t["definition"].findall(U + "Field")[0].get("Name")),
                    "{v}.encode(to: &w)", "try %s(from: &r)" % name, 4)
        default = ".null" if k == "union" else name + "()"
        return (name, default, "{v}.encode(to: &w)",
                "try r.nested(\"%s\") { (r: inout BinaryReader) throws(DecodingError) in try %s(from: &r) }"
                % (name, name), 4)

    def all_fields(t):
        """The fields of a structure, its supertypes' first."""
        up = types.get(t["supertype"]) if t["supertype"] and t["supertype"][0] == 1 else None
        own = t["definition"].findall(U + "Field")
        return (all_fields(up) if up else []) + own

    out = ["// Generated by tools/opcua/companion.py from OPCFoundation/UA-Nodeset %s, %s (%s; OPC Foundation,\n"
           "// MIT licence). Do not edit; run the generator again.\n// swift-format-ignore-file\n\n" % (commit, path, uri),
           "/// The data types of %s (namespace URI %s).\npublic enum %s {\n    public static let namespaceUri = \"%s\"\n}\n\n"
           % (model, uri, model, uri)]
    names = []
    for key in sorted(types, key=lambda k: types[k]["name"]):
        t = types[key]
        name, k = t["name"], kind(t)
        doc = (t["el"].findtext(U + "Documentation") or "").strip()
        if doc:
            out.append("/// %s\n" % doc)
        if k == "alias":
            base = info("i=%d" % t["supertype"][1])[0].rstrip("?")
            out.append("public typealias %s = %s\n\n" % (name, base))
            continue
        if k == "enum":
            out.append("public enum %s: Int32, Hashable, Sendable, CaseIterable, BinaryCodable {\n" % name)
            for f in t["definition"].findall(U + "Field"):
                out.append("    case %s = %s\n" % (lower_camel(f.get("Name")), f.get("Value")))
            out.append("    public func encode(to w: inout BinaryWriter) { w.write(rawValue) }\n")
            out.append("    public init(from r: inout BinaryReader) throws(DecodingError) {\n")
            out.append("        let at = r.offset\n        let raw = try r.readInt32()\n")
            out.append("        guard let v = %s(rawValue: raw) else { throw DecodingError(.invalid, at: at, \"%s: \\(raw)\") }\n" % (name, name))
            out.append("        self = v\n    }\n}\n\n")
            continue
        header = ("    public static let dataTypeId = NodeId(%d, namespace: %d)\n" % (key[1], index or key[0])
                  + "    public static let binaryEncodingId = NodeId(%d, namespace: %d)\n"
                  % (t["encoding"][1], index or t["encoding"][0]))
        names.append(name)
        if k == "union":
            fields = t["definition"].findall(U + "Field")
            out.append("public enum %s: Hashable, Sendable, BinaryCodable, Structure {\n" % name)
            out.append(header)
            out.append("    /// No field (SwitchField 0).\n    case null\n")
            for f in fields:
                out.append("    case %s(%s)\n" % (lower_camel(f.get("Name")), info(f.get("DataType"))[0]))
            out.append("\n    public func encode(to w: inout BinaryWriter) {\n        switch self {\n")
            out.append("        case .null: w.write(UInt32(0))\n")
            for i, f in enumerate(fields, 1):
                p = lower_camel(f.get("Name"))
                enc = info(f.get("DataType"))[2].format(v="v")
                out.append("        case .%s(let v):\n            w.write(UInt32(%d))\n            %s\n" % (plain(p), i, enc))
            out.append("        }\n    }\n\n    public init(from r: inout BinaryReader) throws(DecodingError) {\n")
            out.append("        let at = r.offset\n        switch try r.readUInt32() {\n        case 0: self = .null\n")
            for i, f in enumerate(fields, 1):
                p = lower_camel(f.get("Name"))
                out.append("        case %d: self = .%s(%s)\n" % (i, plain(p), info(f.get("DataType"))[3]))
            out.append("        case let s: throw DecodingError(.invalid, at: at, \"%s: SwitchField \\(s)\")\n" % name)
            out.append("        }\n    }\n}\n\n")
            continue
        fields = all_fields(t)
        optional = [f for f in fields if f.get("IsOptional") == "true"]
        out.append("public struct %s: Hashable, Sendable, BinaryCodable, Structure {\n" % name)
        out.append(header)
        params = []
        for f in fields:
            swift, default = info(f.get("DataType"))[:2]
            if f.get("ValueRank") == "1":
                swift, default = "[%s]?" % swift, "nil"
            if f.get("IsOptional") == "true":
                swift, default = (swift if swift.endswith("?") else swift + "?"), "nil"
            prop = lower_camel(f.get("Name"))
            out.append("    public var %s: %s\n" % (prop, swift))
            params.append((prop, swift, default))
        out.append("\n    public init(" + ", ".join("%s: %s = %s" % (plain(p), s, d) for p, s, d in params) + ") {\n")
        for p, _, _ in params:
            out.append("        self.%s = %s\n" % (plain(p), plain(p)))
        out.append("    }\n\n    public func encode(to w: inout BinaryWriter) {\n")
        if optional:
            out.append("        var mask: UInt32 = 0\n")
            for i, f in enumerate(optional):
                out.append("        if %s != nil { mask |= 1 << %d }\n" % (lower_camel(f.get("Name")), i))
            out.append("        w.write(mask)\n")
        for f in fields:
            p = lower_camel(f.get("Name"))
            enc = info(f.get("DataType"))[2]
            array = f.get("ValueRank") == "1"
            if f.get("IsOptional") == "true":
                inner = ("w.write(array: v) { w, e in %s }" % enc.format(v="e")) if array else enc.format(v="v")
                out.append("        if let v = %s { %s }\n" % (p, inner))
            elif array:
                out.append("        w.write(array: %s) { w, e in %s }\n" % (p, enc.format(v="e")))
            else:
                out.append("        %s\n" % enc.format(v=p))
        out.append("    }\n\n    public init(from r: inout BinaryReader) throws(DecodingError) {\n")
        if optional:
            out.append("        let mask = try r.readUInt32()\n")
        for f in fields:
            p = lower_camel(f.get("Name"))
            _, _, _, dec, size = info(f.get("DataType"))
            if f.get("ValueRank") == "1":
                dec = "try r.readArray(minimumSize: %d, \"%s.%s\") { (r: inout BinaryReader) throws(DecodingError) in %s }" % (
                    size, name, f.get("Name"), dec)
            if f.get("IsOptional") == "true":
                bit = optional.index(f)
                out.append("        %s = mask & (1 << %d) != 0 ? %s : nil\n" % (p, bit, dec))
            else:
                out.append("        %s = %s\n" % (p, dec))
        out.append("    }\n}\n\n")
    out.append("extension %s {\n    /// Every generated structure and union, by the NodeId of its DefaultBinary encoding.\n" % model)
    out.append("    public static let structuresByEncoding: [NodeId: any Structure.Type] = [\n")
    for n in names:
        out.append("        %s.binaryEncodingId: %s.self,\n" % (n, n))
    out.append("    ]\n}\n")
    target = os.path.join(os.path.dirname(__file__), "..", "..", "Sources", "OPCUA", "Generated", model + ".swift")
    open(target, "w", encoding="utf-8").write("".join(out))
    print("%s: %d structures and unions from %s" % (model, len(names), commit))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else None)
