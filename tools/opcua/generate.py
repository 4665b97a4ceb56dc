#!/usr/bin/env python3
"""Generates the OPCUA target's tables from the OPC Foundation's published schema files (issue 49, item 1).

Inputs, from the public repository OPCFoundation/UA-Nodeset at a commit (not committed here):
  Schema/Opc.Ua.Types.bsd   the binary schema of namespace 0: its enumerations and structures
  Schema/StatusCode.csv     every status code: name, value, description
  Schema/NodeIds.csv        every node id of namespace 0: name, number, node class

Outputs (committed): Sources/OPCUA/Generated/StatusCodes.swift and Types.swift (each structure with the NodeIds
of its DataType and of its DefaultBinary encoding).

    git clone https://github.com/OPCFoundation/UA-Nodeset /tmp/UA-Nodeset
    python3 tools/opcua/generate.py /tmp/UA-Nodeset

The built-in types the schema also lists (NodeId, Variant, DataValue, …; their bit fields) are written by hand
in Sources/OPCUA and left out here. Namespace 0's schema has no structure with optional fields or unions (only the
built-ins use bit fields); companion models (AutoID) are generated from their NodeSet2 definitions instead.
"""
import csv
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

NS = {"opc": "http://opcfoundation.org/BinarySchema/"}
BUILT_IN = {
    "XmlElement", "NodeIdType", "TwoByteNodeId", "FourByteNodeId", "NumericNodeId", "StringNodeId", "GuidNodeId",
    "ByteStringNodeId", "NodeId", "ExpandedNodeId", "StatusCode", "DiagnosticInfo", "QualifiedName",
    "LocalizedText", "DataValue", "ExtensionObject", "Variant", "Guid", "ByteString", "String", "DateTime",
}
SWIFT_KEYWORDS = {
    "default", "operator", "protocol", "class", "in", "is", "static", "self", "extension", "return", "where",
    "case", "func", "import", "init", "let", "var", "struct", "enum", "if", "else", "for", "while", "switch",
    "repeat", "break", "continue", "true", "false", "nil", "as", "try", "throw", "throws", "internal", "public",
    "private", "subscript", "typealias", "associatedtype", "inout", "any", "some", "Type", "Protocol",
}

# opc:/ua: type → (Swift type, default, encode template, decode expression, minimum encoded size)
PRIMITIVE = {
    "opc:Boolean": ("Bool", "false", "w.write({v})", "try r.readBool()", 1),
    "opc:SByte": ("Int8", "0", "w.write({v})", "try r.readInt8()", 1),
    "opc:Byte": ("UInt8", "0", "w.write({v})", "try r.readUInt8()", 1),
    "opc:Int16": ("Int16", "0", "w.write({v})", "try r.readInt16()", 2),
    "opc:UInt16": ("UInt16", "0", "w.write({v})", "try r.readUInt16()", 2),
    "opc:Int32": ("Int32", "0", "w.write({v})", "try r.readInt32()", 4),
    "opc:UInt32": ("UInt32", "0", "w.write({v})", "try r.readUInt32()", 4),
    "opc:Int64": ("Int64", "0", "w.write({v})", "try r.readInt64()", 8),
    "opc:UInt64": ("UInt64", "0", "w.write({v})", "try r.readUInt64()", 8),
    "opc:Float": ("Float", "0", "w.write({v})", "try r.readFloat()", 4),
    "opc:Double": ("Double", "0", "w.write({v})", "try r.readDouble()", 8),
    "opc:String": ("String?", "nil", "w.write(string: {v})", "try r.readString()", 4),
    "opc:CharArray": ("String?", "nil", "w.write(string: {v})", "try r.readString()", 4),
    "ua:XmlElement": ("String?", "nil", "w.write(string: {v})", "try r.readString()", 4),
    "opc:ByteString": ("[UInt8]?", "nil", "w.write(byteString: {v})", "try r.readByteString()", 4),
    "opc:DateTime": ("DateTime", "DateTime(rawValue: 0)", "{v}.encode(to: &w)", "try DateTime(from: &r)", 8),
    "opc:Guid": ("Guid", "Guid(data1: 0, data2: 0, data3: 0, data4: [])", "{v}.encode(to: &w)", "try Guid(from: &r)", 16),
    "ua:NodeId": ("NodeId", ".null", "{v}.encode(to: &w)", "try NodeId(from: &r)", 2),
    "ua:ExpandedNodeId": ("ExpandedNodeId", "ExpandedNodeId(.null)", "{v}.encode(to: &w)", "try ExpandedNodeId(from: &r)", 2),
    "ua:StatusCode": ("StatusCode", ".good", "{v}.encode(to: &w)", "try StatusCode(from: &r)", 4),
    "ua:QualifiedName": ("QualifiedName", "QualifiedName(nil)", "{v}.encode(to: &w)", "try QualifiedName(from: &r)", 6),
    "ua:LocalizedText": ("LocalizedText", "LocalizedText(nil)", "{v}.encode(to: &w)", "try LocalizedText(from: &r)", 1),
    "ua:ExtensionObject": ("ExtensionObject", ".null", "{v}.encode(to: &w)", "try ExtensionObject(from: &r)", 3),
    "ua:DataValue": ("DataValue", "DataValue()", "{v}.encode(to: &w)", "try r.nested(\"DataValue\") {{ (r: inout BinaryReader) throws(DecodingError) in try DataValue(from: &r) }}", 1),
    "ua:Variant": ("Variant", ".null", "{v}.encode(to: &w)", "try r.nested(\"Variant\") {{ (r: inout BinaryReader) throws(DecodingError) in try Variant(from: &r) }}", 1),
    "ua:DiagnosticInfo": ("DiagnosticInfo", "DiagnosticInfo()", "{v}.encode(to: &w)", "try r.nested(\"DiagnosticInfo\") {{ (r: inout BinaryReader) throws(DecodingError) in try DiagnosticInfo(from: &r) }}", 1),
}


def lower_camel(name):
    if name.isupper():
        out = name.lower()
    else:
        m = re.match(r"^([A-Z]+)([A-Z][a-z].*)$", name)
        out = (m.group(1).lower() + m.group(2)) if m else name[0].lower() + name[1:]
    out = re.sub(r"[^A-Za-z0-9_]", "_", out)
    if out[0].isdigit():
        out = "_" + out
    return f"`{out}`" if out in SWIFT_KEYWORDS else out


def plain(name):
    return name.strip("`")


def main(repo):
    commit = subprocess.run(
        ["git", "-C", repo, "log", "-1", "--format=%h %cs"], capture_output=True, text=True).stdout.strip()
    commit = commit or os.environ.get("UA_NODESET_COMMIT", "(commit not known)")
    head = (
        "// Generated by tools/opcua/generate.py from OPCFoundation/UA-Nodeset {commit}: {files}. Do not edit;\n"
        "// run the generator again.\n// swift-format-ignore-file\n\n"
    )
    out_dir = os.path.join(os.path.dirname(__file__), "..", "..", "Sources", "OPCUA", "Generated")
    os.makedirs(out_dir, exist_ok=True)

    # Status codes.
    codes = list(csv.reader(open(os.path.join(repo, "Schema", "StatusCode.csv"), encoding="utf-8")))
    lines = [head.format(commit=commit, files="Schema/StatusCode.csv"), "extension StatusCode {\n"]
    for name, value, text in codes:
        lines.append(f"    /// {text.strip()}\n    public static let {lower_camel(name)} = StatusCode({value})\n")
    lines.append("\n    /// Each status code's name, by its code (severity and sub-code; the flag bits masked off).\n")
    lines.append("    public static let names: [UInt32: String] = [\n")
    for name, value, _ in codes:
        lines.append(f"        {value}: \"{name}\",\n")
    lines.append("    ]\n}\n")
    open(os.path.join(out_dir, "StatusCodes.swift"), "w", encoding="utf-8").write("".join(lines))

    # Node ids.
    ids = {}
    for row in csv.reader(open(os.path.join(repo, "Schema", "NodeIds.csv"), encoding="utf-8")):
        if len(row) >= 3:
            ids[row[0]] = (int(row[1]), row[2])

    # Types.
    root = ET.parse(os.path.join(repo, "Schema", "Opc.Ua.Types.bsd")).getroot()
    enums = {e.get("Name"): e for e in root.findall("opc:EnumeratedType", NS) if e.get("Name") not in BUILT_IN}
    structs = [s for s in root.findall("opc:StructuredType", NS) if s.get("Name") not in BUILT_IN]
    opaque = {o.get("Name") for o in root.findall("opc:OpaqueType", NS)}
    struct_names = {s.get("Name") for s in structs}
    min_size = {}

    def type_info(type_name):
        if type_name in PRIMITIVE:
            return PRIMITIVE[type_name]
        local = type_name.split(":", 1)[1]
        if local in enums:
            e = enums[local]
            bits = int(e.get("LengthInBits"))
            size = max(1, bits // 8)
            first = e.findall("opc:EnumeratedValue", NS)
            default = "[]" if e.get("IsOptionSet") == "true" or not first else "." + lower_camel(first[0].get("Name"))
            return (local, default, "{v}.encode(to: &w)", f"try {local}(from: &r)", size)
        if local in struct_names:
            return (local, f"{local}()", "{v}.encode(to: &w)",
                    f"try r.nested(\"{local}\") {{{{ (r: inout BinaryReader) throws(DecodingError) in try {local}(from: &r) }}}}",
                    min_size.get(local, 1))
        raise SystemExit(f"unknown type {type_name}")

    def fields(s):
        fs = s.findall("opc:Field", NS)
        length_fields = {f.get("LengthField") for f in fs if f.get("LengthField")}
        return [f for f in fs if f.get("Name") not in length_fields]

    # Minimum sizes, in dependency order (a few passes settle it).
    for _ in range(6):
        for s in structs:
            total = 0
            for f in fields(s):
                if f.get("LengthField"):
                    total += 4
                else:
                    total += type_info(f.get("TypeName"))[4]
            min_size[s.get("Name")] = total

    lines = [head.format(commit=commit, files="Schema/Opc.Ua.Types.bsd, Schema/NodeIds.csv")]
    for name, e in sorted(enums.items()):
        bits = int(e.get("LengthInBits"))
        raw = {8: "UInt8", 16: "UInt16", 32: "UInt32"}.get(bits, "UInt32")
        values = e.findall("opc:EnumeratedValue", NS)
        doc = (e.findtext("opc:Documentation", default="", namespaces=NS) or "").strip().replace("\n", " ")
        if doc:
            lines.append(f"/// {doc}\n")
        if e.get("IsOptionSet") == "true" or not values:
            lines.append(f"public struct {name}: Swift.OptionSet, Hashable, Sendable, BinaryCodable {{\n")
            lines.append(f"    public var rawValue: {raw}\n    public init(rawValue: {raw}) {{ self.rawValue = rawValue }}\n")
            for v in values:
                value = int(v.get("Value"))
                if value:
                    lines.append(f"    public static let {lower_camel(v.get('Name'))} = {name}(rawValue: {value})\n")
            lines.append(f"    public func encode(to w: inout BinaryWriter) {{ w.write(rawValue) }}\n")
            lines.append(f"    public init(from r: inout BinaryReader) throws(DecodingError) {{ rawValue = try r.read{raw}() }}\n}}\n\n")
        else:
            lines.append(f"public enum {name}: Int32, Hashable, Sendable, CaseIterable, BinaryCodable {{\n")
            for v in values:
                lines.append(f"    case {lower_camel(v.get('Name'))} = {int(v.get('Value'))}\n")
            lines.append("    public func encode(to w: inout BinaryWriter) { w.write(rawValue) }\n")
            lines.append("    public init(from r: inout BinaryReader) throws(DecodingError) {\n")
            lines.append("        let at = r.offset\n        let raw = try r.readInt32()\n")
            lines.append(f"        guard let v = {name}(rawValue: raw) else {{\n")
            lines.append(f"            throw DecodingError(.invalid, at: at, \"{name}: \\(raw)\")\n        }}\n")
            lines.append("        self = v\n    }\n}\n\n")

    generated = []
    for s in structs:
        name = s.get("Name")
        fs = fields(s)
        encoding = ids.get(f"{name}_Encoding_DefaultBinary")
        datatype = ids.get(name)
        doc = (s.findtext("opc:Documentation", default="", namespaces=NS) or "").strip().replace("\n", " ")
        if doc:
            lines.append(f"/// {doc}\n")
        lines.append(f"public struct {name}: Hashable, Sendable, BinaryCodable, Structure {{\n")
        lines.append(f"    public static let dataTypeId = NodeId({datatype[0] if datatype else 0})\n")
        lines.append(f"    public static let binaryEncodingId = NodeId({encoding[0] if encoding else 0})\n")
        params = []
        for f in fs:
            swift, default, _, _, _ = type_info(f.get("TypeName"))
            prop = lower_camel(f.get("Name"))
            if f.get("LengthField"):
                swift, default = f"[{swift}]?", "nil"
            if swift == name:
                raise SystemExit(f"{name} holds itself")
            lines.append(f"    public var {prop}: {swift}\n")
            params.append((prop, swift, default))
        lines.append("\n    public init(" + ", ".join(f"{plain(p)}: {t} = {d}" for p, t, d in params) + ") {\n")
        for p, _, _ in params:
            lines.append(f"        self.{plain(p)} = {plain(p)}\n")
        lines.append("    }\n\n    public func encode(to w: inout BinaryWriter) {\n")
        for f in fs:
            prop = lower_camel(f.get("Name"))
            _, _, enc, _, _ = type_info(f.get("TypeName"))
            if f.get("LengthField"):
                lines.append(f"        w.write(array: {prop}) {{ w, e in {enc.format(v='e')} }}\n")
            else:
                lines.append(f"        {enc.format(v=prop)}\n")
        lines.append("    }\n\n    public init(from r: inout BinaryReader) throws(DecodingError) {\n")
        for f in fs:
            prop = lower_camel(f.get("Name"))
            _, _, _, dec, size = type_info(f.get("TypeName"))
            if f.get("LengthField"):
                lines.append(
                    f"        {prop} = try r.readArray(minimumSize: {size}, \"{name}.{f.get('Name')}\") {{ (r: inout BinaryReader) throws(DecodingError) in {dec.replace('{{', '{').replace('}}', '}')} }}\n")
            else:
                lines.append(f"        {prop} = {dec.replace('{{', '{').replace('}}', '}')}\n")
        lines.append("    }\n}\n\n")
        generated.append(name)

    lines.append("/// Every generated structure, by the NodeId of its DefaultBinary encoding (what an ExtensionObject names).\n")
    lines.append("public let structuresByEncoding: [NodeId: any Structure.Type] = [\n")
    for name in generated:
        if ids.get(f"{name}_Encoding_DefaultBinary"):
            lines.append(f"    {name}.binaryEncodingId: {name}.self,\n")
    lines.append("]\n")
    open(os.path.join(out_dir, "Types.swift"), "w", encoding="utf-8").write("".join(lines))
    print(f"generated {len(codes)} status codes, {len(enums)} enumerations, {len(generated)} structures from {commit}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/UA-Nodeset")
