import Foundation
import Testing

@testable import OPCUA

/// The structures and status codes generated from the OPC Foundation's schema files (tools/opcua/generate.py, from
/// OPCFoundation/UA-Nodeset a2d4ae8) against asyncua 2.1.0's bytes for the same service messages and structures
/// (Fixtures/asyncua-golden.json).
@Suite struct GeneratedTypesTests {
    static func cases(_ kind: String) throws -> [BinaryEncodingTests.Golden.Case] {
        try #require(BinaryEncodingTests.golden).cases.filter { $0.kind == kind }
    }

    /// A service message's body: its type's encoding NodeId, then its fields. Each is found by that NodeId,
    /// decoded, and written back to the same bytes.
    @Test func serviceMessagesOfAsyncuaDecodeAndEncodeTheSame() throws {
        let services = try Self.cases("service")
        #expect(services.count == 4)
        for c in services {
            let bytes = BinaryEncodingTests.bytes(c.hex)
            var r = BinaryReader(bytes)
            let id = try NodeId(from: &r)
            let type = try #require(structuresByEncoding[id], "\(c.name): \(id)")
            let rest = Array(bytes[r.offset...])
            let value = try type.decode(rest)
            #expect(id.encoded + value.encoded == bytes, "\(c.name)")
        }
    }

    /// A Read request built here is asyncua's to the byte (OPC 10000-4 §5.11.2: the header, maxAge,
    /// timestampsToReturn, nodesToRead).
    @Test func aReadRequestIsAsyncuasToTheByte() throws {
        let golden = BinaryEncodingTests.bytes(
            try #require(try Self.cases("service").first { $0.name == "readrequest" }).hex)
        let header = RequestHeader(
            authenticationToken: NodeId(namespace: 0, .opaque([1, 2])), timestamp: BinaryEncodingTests.t0,
            requestHandle: 7, returnDiagnostics: 0, auditEntryId: nil, timeoutHint: 10_000)
        let read = ReadRequest(
            requestHeader: header, maxAge: 0, timestampsToReturn: .both,
            nodesToRead: [
                ReadValueId(nodeId: NodeId(2259), attributeId: 13, dataEncoding: QualifiedName(nil)),
                ReadValueId(
                    nodeId: NodeId(namespace: 2, .string("Dock.Reader")), attributeId: 4,
                    dataEncoding: QualifiedName(nil)),
            ])
        #expect(ReadRequest.binaryEncodingId == NodeId(631) && ReadRequest.dataTypeId == NodeId(629))
        #expect(ReadRequest.binaryEncodingId.encoded + read.encoded == golden)
    }

    /// A structure in its ExtensionObject envelope: EUInformation (OPC 10000-8 §5.6.3) of degrees Celsius, UNECE
    /// code CEL as the unit id 4408652 (0x43454C).
    @Test func aStructureInItsEnvelope() throws {
        let bytes = BinaryEncodingTests.bytes(try #require(try Self.cases("structure").first).hex)
        let object = try ExtensionObject.decode(bytes)
        let eu = try EUInformation(object)
        #expect(eu.unitId == 0x43_45_4C && eu.displayName.text == "°C" && eu.description.text == "degree Celsius")
        #expect(eu.extensionObject.encoded == bytes)
        #expect(throws: DecodingError.self) { try ReadRequest(object) }
    }

    /// StatusCode.csv: the codes the transport and the decoder answer with, and a code's name.
    @Test func statusCodesAreTheCSVs() {
        #expect(StatusCode.badDecodingError.rawValue == 0x8007_0000)
        #expect(StatusCode.badEncodingLimitsExceeded.rawValue == 0x8008_0000)
        #expect(StatusCode.badTcpMessageTooLarge.rawValue == 0x8080_0000)
        #expect(StatusCode.badServiceUnsupported.rawValue == 0x800B_0000)
        #expect(StatusCode(0x8088_0000).name == "BadSequenceNumberInvalid")
        #expect(StatusCode(0x0000_0400).name == "Good")  // Good with the InfoType bits of a DataValue
        #expect(StatusCode.names.count > 250)
    }
}
