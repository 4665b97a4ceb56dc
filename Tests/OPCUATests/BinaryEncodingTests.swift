import Foundation
import Testing

@testable import OPCUA

/// OPC UA Binary (OPC 10000-6 §5.2) against an encoder nobody here wrote: Fixtures/asyncua-golden.json holds what
/// Python asyncua 2.1.0 encodes for the same values (Fixtures/make_golden.py made it); each value encodes to those
/// bytes and those bytes decode to it. Where asyncua departs from the spec (DataValue's picoseconds,
/// DiagnosticInfo's Locale and LocalizedText bits, a nested DiagnosticInfo), the bytes come from the spec's
/// tables instead (docs/reference/opcua.md).
@Suite struct BinaryEncodingTests {
    struct Golden: Decodable {
        struct Case: Decodable {
            let name: String
            let kind: String
            let hex: String
        }
        let source: String
        let cases: [Case]
    }

    static let golden: Golden? = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/asyncua-golden.json")
        return (try? Data(contentsOf: url)).flatMap { try? JSONDecoder().decode(Golden.self, from: $0) }
    }()

    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex, let j = hex.index(i, offsetBy: 2, limitedBy: hex.endIndex) {
            out.append(UInt8(hex[i..<j], radix: 16) ?? 0)
            i = j
        }
        return out
    }

    static let guid = Guid("72962B91-FA75-4AE6-8D28-B404DC7DAF63")!
    /// 2026-11-28T08:30:00.250Z and 08:30:01Z.
    static let t0 = DateTime(millisecondsSince1970: 1_795_854_600_250)
    static let t1 = DateTime(millisecondsSince1970: 1_795_854_601_000)
    static let dataValue = DataValue(
        value: .scalar(.double(21.5)), status: StatusCode(0x408F_0000), sourceTimestamp: t0, serverTimestamp: t1)

    /// The same values as make_golden.py, by case name.
    static let values: [String: any BinaryCodable] = [
        "boolean": Variant.scalar(.boolean(true)),
        "sbyte": Variant.scalar(.sByte(-5)),
        "byte": Variant.scalar(.byte(200)),
        "int16": Variant.scalar(.int16(-30000)),
        "uint16": Variant.scalar(.uInt16(60000)),
        "int32": Variant.scalar(.int32(-2_000_000_000)),
        "uint32": Variant.scalar(.uInt32(4_000_000_000)),
        "int64": Variant.scalar(.int64(-9_000_000_000_000_000_000)),
        "uint64": Variant.scalar(.uInt64(18_000_000_000_000_000_000)),
        "float": Variant.scalar(.float(1.5)),
        "double": Variant.scalar(.double(-2.25)),
        "string": Variant.scalar(.string("Kühlraum 12")),
        "string-null": Variant.scalar(.string(nil)),
        "datetime": Variant.scalar(.dateTime(t0)),
        "guid": Variant.scalar(.guid(guid)),
        "bytestring": Variant.scalar(.byteString([0x01, 0x02, 0xFF])),
        "xmlelement": Variant.scalar(.xmlElement("<a/>")),
        "nodeid-twobyte": Variant.scalar(.nodeId(NodeId(85))),
        "nodeid-fourbyte": Variant.scalar(.nodeId(NodeId(1025, namespace: 2))),
        "nodeid-numeric": Variant.scalar(.nodeId(NodeId(70000, namespace: 3))),
        "nodeid-string": Variant.scalar(.nodeId(NodeId(namespace: 2, .string("Dock.Reader")))),
        "nodeid-guid": Variant.scalar(.nodeId(NodeId(namespace: 4, .guid(guid)))),
        "nodeid-bytestring": Variant.scalar(.nodeId(NodeId(namespace: 5, .opaque([0xDE, 0xAD])))),
        "expandednodeid": Variant.scalar(
            .expandedNodeId(ExpandedNodeId(NodeId(1025), namespaceUri: "urn:vlogger:gateway", serverIndex: 2))),
        "statuscode": Variant.scalar(.statusCode(StatusCode(0x80AB_0000))),
        "qualifiedname": Variant.scalar(.qualifiedName(QualifiedName(namespace: 2, "Reader"))),
        "localizedtext": Variant.scalar(.localizedText(LocalizedText(locale: "de-DE", "Leser"))),
        "localizedtext-textonly": Variant.scalar(.localizedText(LocalizedText("only text"))),
        // An Argument (OPC 10000-3 §8.6: Name, DataType, ValueRank, ArrayDimensions, Description) in its
        // envelope, the NodeId of Argument_Encoding_DefaultBinary (ns=0;i=298) first.
        "extensionobject-argument": Variant.scalar(
            .extensionObject(
                ExtensionObject(
                    typeId: NodeId(298),
                    body: .binary(
                        {
                            var w = BinaryWriter()
                            w.write(string: "Block")
                            NodeId(3).encode(to: &w)
                            w.write(Int32(-1))
                            w.write(array: [UInt32]()) { w, n in w.write(n) }
                            LocalizedText("first block").encode(to: &w)
                            return w.bytes
                        }())))),
        "array-int32": Variant.array(.int32, [.int32(1), .int32(2), .int32(3)]),
        "matrix-int32": Variant.array(.int32, (1...6).map { .int32($0) }, dimensions: [2, 3]),
        "array-string": Variant.array(.string, [.string("a"), .string(nil), .string("ü")]),
        "array-variant": Variant.array(.variant, [.variant(.scalar(.int32(1))), .variant(.scalar(.string("a")))]),
        "null": Variant.null,
        "datavalue-full": dataValue,
        "datavalue-value": DataValue(value: .scalar(.uInt16(7))),
        "variant-datavalue": Variant.scalar(.dataValue(dataValue)),
        "diagnosticinfo": DiagnosticInfo(
            symbolicId: 1, namespaceUri: 2, additionalInfo: "dock door", innerStatusCode: StatusCode(0x80AB_0000)),
    ]

    static func decode(_ kind: String, _ bytes: [UInt8]) throws -> any BinaryCodable {
        switch kind {
        case "variant": return try Variant.decode(bytes)
        case "datavalue": return try DataValue.decode(bytes)
        case "diagnosticinfo": return try DiagnosticInfo.decode(bytes)
        default: throw DecodingError(.invalid, at: 0, "no kind \(kind)")
        }
    }

    @Test func everyCaseOfAsyncuaEncodesAndDecodesTheSame() throws {
        let all = try #require(Self.golden, "Fixtures/asyncua-golden.json")
        // The UA-TCP messages are TransportTests'.
        let golden = Golden(
            source: all.source,
            cases: all.cases.filter { ["variant", "datavalue", "diagnosticinfo"].contains($0.kind) })
        #expect(golden.source.hasPrefix("asyncua 2.1.0"))
        #expect(golden.cases.count == Self.values.count, "\(golden.cases.map(\.name))")
        // Every built-in type is among them, as a Variant's scalar.
        let types = Set(
            Self.values.values.compactMap { v -> BuiltInType? in
                if case .scalar(let s) = v as? Variant { return s.type }
                return nil
            })
        #expect(types.count == 23, "\(BuiltInType.allCases.filter { !types.contains($0) })")
        for c in golden.cases {
            let value = try #require(Self.values[c.name], "\(c.name)")
            let expected = Self.bytes(c.hex)
            #expect(value.encoded == expected, "\(c.name): \(value.encoded) vs \(expected)")
            let decoded = try Self.decode(c.kind, expected)
            #expect(decoded.encoded == expected, "\(c.name)")
            #expect(String(describing: decoded) == String(describing: value), "\(c.name)")
        }
    }

    /// A NodeId is read in any of its forms, whichever the sender chose (asyncua writes ns=3;i=5011 in the
    /// 6-byte form where the 4-byte one fits), and written in the shortest.
    @Test func aNodeIdIsReadInEveryFormAndWrittenInTheShortest() throws {
        let fourByte: [UInt8] = [0x01, 0x03, 0x93, 0x13]
        let numeric: [UInt8] = [0x02, 0x03, 0x00, 0x93, 0x13, 0x00, 0x00]
        #expect(try NodeId.decode(fourByte) == NodeId(5011, namespace: 3))
        #expect(try NodeId.decode(numeric) == NodeId(5011, namespace: 3))
        #expect(NodeId(5011, namespace: 3).encoded == fourByte)
        #expect(NodeId(255).encoded == [0x00, 0xFF] && NodeId(256).encoded == [0x01, 0x00, 0x00, 0x01])
        #expect(NodeId(70000, namespace: 0).encoded == [0x02, 0x00, 0x00, 0x70, 0x11, 0x01, 0x00])
        // The ExpandedNodeId flags belong to the ExpandedNodeId only.
        #expect(throws: DecodingError.self) { try NodeId.decode([0x80, 0x05]) }
        #expect(throws: DecodingError.self) { try NodeId.decode([0x06, 0x00]) }
    }

    /// OPC 10000-6 §5.2.2.17: each picoseconds field follows its own timestamp (mask 0x10 source, 0x20 server).
    @Test func aDataValuesPicosecondsFollowTheirTimestamps() throws {
        let v = DataValue(
            status: StatusCode(0x8034_0000), sourceTimestamp: DateTime(rawValue: 1), sourcePicoseconds: 5,
            serverTimestamp: DateTime(rawValue: 2), serverPicoseconds: 7)
        let expected: [UInt8] =
            [0x3E, 0x00, 0x00, 0x34, 0x80] + [1, 0, 0, 0, 0, 0, 0, 0] + [5, 0] + [2, 0, 0, 0, 0, 0, 0, 0] + [7, 0]
        #expect(v.encoded == expected)
        #expect(try DataValue.decode(expected) == v)
    }

    /// OPC 10000-6 §5.2.2.12: mask 0x04 is LocalizedText and 0x08 Locale, though Locale's field comes first; an
    /// inner DiagnosticInfo follows its InnerStatusCode.
    @Test func aDiagnosticInfosMaskIsTheSpecs() throws {
        let inner = DiagnosticInfo(symbolicId: 3)
        let v = DiagnosticInfo(locale: 7, localizedText: 9, innerDiagnosticInfo: inner)
        let expected: [UInt8] = [0x4C] + [7, 0, 0, 0] + [9, 0, 0, 0] + [0x01, 3, 0, 0, 0]
        #expect(v.encoded == expected)
        #expect(try DiagnosticInfo.decode(expected) == v)
        #expect(throws: DecodingError.self) { try DiagnosticInfo.decode([0x80]) }
    }

    /// 1970-01-01 is 11,644,473,600 s after 1601-01-01 (OPC 10000-6 §5.2.2.5 counts 100 ns ticks from 1601).
    @Test func dateTimesCountFrom1601() throws {
        #expect(DateTime(millisecondsSince1970: 0).rawValue == 116_444_736_000_000_000)
        #expect(Self.t0.millisecondsSince1970 == 1_795_854_600_250)
        #expect(DateTime(rawValue: 116_444_736_000_000_000 - 1).millisecondsSince1970 == -1)
        #expect(DateTime(millisecondsSince1970: .max).rawValue == .max)
        #expect(DateTime(millisecondsSince1970: .min).rawValue == 0)
    }
}
