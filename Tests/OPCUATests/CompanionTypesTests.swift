import Foundation
import Testing

@testable import OPCUA

/// A structure with optional fields (its EncodingMask: OPC 10000-6 §5.2.7) and unions (the SwitchField:
/// §5.2.8), generated from OPC 30010 AutoID's NodeSet2 by tools/opcua/companion.py, against the bytes asyncua
/// 2.1.0 encodes for the same values after importing the same NodeSet (Fixtures/companion-golden.json, made by
/// Fixtures/make_companion_golden.py): decoded to the values asyncua was given, encoded again to its bytes.
struct CompanionTypesTests {
    struct Golden: Decodable {
        struct Case: Decodable {
            let name: String
            let type: String
            let hex: String
        }
        let cases: [Case]
        let asyncuaRfidScanResultFields: [String]
    }

    static let golden: Golden? = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/companion-golden.json")
        return (try? Data(contentsOf: url)).flatMap { try? JSONDecoder().decode(Golden.self, from: $0) }
    }()

    static let uid: [UInt8] = [0xE0, 0x04, 0x01, 0x50, 0x12, 0x34, 0x56, 0x78]
    /// 2026-11-28T08:30:00.250Z.
    static let time = DateTime(millisecondsSince1970: 1_795_854_600_250)

    /// What each fixture was made from (make_companion_golden.py), as the generated types hold it.
    static let expected: [String: any Structure] = [
        "ScanSettings without its optional LocationType": ScanSettings(duration: 1500, cycles: 3, dataAvailable: true),
        "ScanSettings with LocationType NAME (3)": ScanSettings(
            duration: 0, cycles: 0, dataAvailable: false, locationType: .name),
        "ScanData, the ByteString field (SwitchField 1)": ScanData.byteString(uid),
        "ScanData, the String field (SwitchField 2)": ScanData.string("E004015012345678"),
        "ScanData, no field (SwitchField 0)": ScanData.null,
        "ScanData, the Epc field (SwitchField 3)": ScanData.epc(
            ScanDataEpc(pc: 0x3000, uId: uid, xpc_w1: 0, xpc_w2: 0)),
        "ScanResult (its optional Location absent)": ScanResult(
            codeType: "UID", scanData: .byteString(uid), timestamp: time),
        "ScanResult with its optional Location (a union: Name, SwitchField 4)": ScanResult(
            codeType: "UID", scanData: .string("E004015012345678"), timestamp: time, location: .name("Dock door 3")),
    ]

    @Test func optionalFieldsAndUnionsAreAsyncuasBytes() throws {
        let golden = try #require(Self.golden, "Fixtures/companion-golden.json")
        #expect(golden.cases.count == Self.expected.count)
        for c in golden.cases {
            let value = try #require(Self.expected[c.name], "\(c.name)")
            let bytes = try #require(HexText.bytes(c.hex), "\(c.name)")
            #expect(value.encoded == bytes, "\(c.name): \(HexText.string(value.encoded)) ≠ \(c.hex)")
            let decoded = try type(of: value).decode(bytes)
            #expect(decoded.encoded == bytes, "\(c.name)")
            #expect(String(describing: decoded) == String(describing: value), "\(c.name)")
        }
    }

    /// The subtype's encoding has its supertype's fields first (OPC 10000-3 §8.48: a derived structure's field
    /// list begins with its base type's fields), and one EncodingMask for all its optional fields; asyncua 2.1.0
    /// builds RfidScanResult from the NodeSet's Definition alone (its own field only), so no asyncua fixture
    /// exists for it.
    @Test func aSubtypeCarriesItsSupertypesFieldsFirst() throws {
        #expect(Self.golden?.asyncuaRfidScanResultFields == ["Sighting"])
        let sighting = RfidSighting(antenna: 1, strength: -40, timestamp: Self.time, currentPowerLevel: 20)
        let r = RfidScanResult(
            codeType: "UID", scanData: .byteString(Self.uid), timestamp: Self.time, sighting: [sighting])
        let base = ScanResult(codeType: "UID", scanData: .byteString(Self.uid), timestamp: Self.time).encoded
        let bytes = r.encoded
        #expect(Array(bytes.prefix(base.count)) == base)
        #expect(try RfidScanResult.decode(bytes) == r)
        // Truncated anywhere: a typed error, never a trap.
        for n in 0..<bytes.count {
            #expect(throws: DecodingError.self) { _ = try RfidScanResult.decode(Array(bytes.prefix(n))) }
        }
        // A SwitchField past the union's fields is refused.
        #expect(throws: DecodingError.self) { _ = try ScanData.decode([5, 0, 0, 0]) }
    }

    /// One RfidScanResult, worked out byte by byte in docs/reference/opcua.md ("One RfidScanResult"): an empty
    /// EncodingMask (no Location), CodeType "UID", ScanData's switch 1 with the ByteString E004010012345678,
    /// 2026-01-01T00:00:00Z as 0x01DC7AB192810000 ticks, one sighting (antenna 1, strength -40, the same time, power
    /// level 0): 59 bytes. asyncua 2.1.0's class built from the server's definition writes the same
    /// (ClientStackTests).
    @Test func oneRfidScanResultIsFiftyNineBytes() throws {
        let t = DateTime(millisecondsSince1970: 1_767_225_600_000)
        #expect(t.rawValue == 0x01DC_7AB1_9281_0000)
        let r = RfidScanResult(
            codeType: "UID", scanData: .byteString([0xE0, 0x04, 0x01, 0x00, 0x12, 0x34, 0x56, 0x78]), timestamp: t,
            sighting: [RfidSighting(antenna: 1, strength: -40, timestamp: t, currentPowerLevel: 0)])
        let hex =
            "00000000" + "03000000554944" + "01000000" + "08000000e004010012345678" + "00008192b17adc01"
            + "01000000" + "01000000" + "d8ffffff" + "00008192b17adc01" + "00000000"
        #expect(r.encoded.count == 59)
        #expect(HexText.string(r.encoded) == hex)
        #expect(try RfidScanResult.decode(r.encoded) == r)
    }
}
