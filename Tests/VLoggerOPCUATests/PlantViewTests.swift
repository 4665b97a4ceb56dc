import FieldState
import Foundation
import ISO15693
import NIOConcurrencyHelpers
import OPCUA
import Testing
import VLoggerModel
import VLoggerOutbox
import VLoggerStore

@testable import OPCUAServer
@testable import VLoggerOPCUA

/// The plant's view in the gateway's namespace: an object per asset of the register with its values, which carry
/// their units, the range a range rule gives and a status that says how far to trust them (docs/reference/opcua.md,
/// "A value's status and range" and "Engineering units"), and each reader's last value of each field.
struct PlantViewTests {
    static let uid = try! UID(parsing: "E008010000004212")
    static let t0: Millis = 1_800_000_000_000

    final class Clock: @unchecked Sendable {
        private let box = NIOLockedValueBox(Date(timeIntervalSince1970: 1_800_000_001))
        var now: Date { box.withLockedValue { $0 } }
        func advance(_ s: Double) { box.withLockedValue { $0 = $0.addingTimeInterval(s) } }
    }

    @Test func anAssetsValuesCarryUnitsRangeAndStatus() throws {
        let state = FieldState(
            readers: [FieldState.Reader(id: "cage-room", location: "Cold room", intervalMs: 1000)],
            units: ["temperature": "°C"])
        let space = try AddressSpace.standard(applicationUri: "urn:vlogger:gw-7")
        let core = testCore(space)
        let clock = Clock()
        let ns = GatewayNamespace(
            space: space, state: state, gateway: "gw-7", site: nil, methods: core.methods,
            rules: [
                AlarmRule(name: "cold room temperature", severity: .critical, field: "temperature", low: 2, high: 24)
            ],
            assets: [AssetRow(uid: Self.uid, assetID: "CAGE-12", name: "Cold cage 12", location: "Cold room, cage 12")],
            clock: { clock.now }, post: { _ in })
        let now = DateTime(millisecondsSince1970: Self.t0)
        func read(_ path: String) -> DataValue { space.read(ns.id(path), 13, now: now) }
        // The asset is there before its tag is ever seen.
        #expect(read("Assets/CAGE-12/Name").value == .scalar(.string("Cold cage 12")))
        #expect(read("Assets/CAGE-12/UidBytes").value == .scalar(.byteString(Self.uid.displayBytes)))
        #expect(read("Assets/CAGE-12/Present").value == .scalar(.boolean(false)))
        #expect(space.node(ns.id("Assets/CAGE-12"))?.displayName.text == "CAGE-12 — Cold cage 12")

        state.eventRecorded(
            Event(
                time: Self.t0, gateway: "gw-7", reader: "cage-room", uid: Self.uid, kind: .arrival, name: "",
                severity: .info, detail: ""), asset: "CAGE-12")
        // A sensor log's record, read now, taken 40 s before: its source timestamp is the record's time.
        state.readingTaken(
            Reading(
                time: Self.t0 - 40_000, gateway: "gw-7", reader: "cage-room", uid: Self.uid, first: 0, count: 1,
                data: [0, 0, 0, 0], decoded: [("temperature", .number(4.5))]),
            asset: "CAGE-12")
        ns.settled()
        var value = read("Assets/CAGE-12/temperature")
        #expect(value.value == .scalar(.double(4.5)) && value.status == nil)
        #expect(value.sourceTimestamp == DateTime(millisecondsSince1970: Self.t0 - 40_000))
        #expect(read("Assets/CAGE-12/Present").value == .scalar(.boolean(true)))
        #expect(read("Assets/CAGE-12/Reader").value == .scalar(.string("cage-room")))
        // °C with UNECE's CEL, and the range rule's 2…24 as its EURange (a Range, i=884: Low, High).
        #expect(space.node(ns.id("Assets/CAGE-12/temperature"))?.typeDefinition == NodeId(17497))
        let euRange = read("Assets/CAGE-12/temperature/EURange").value
        let e = try #require(
            { () -> ExtensionObject? in
                if case .scalar(.extensionObject(let e))? = euRange { return e }
                return nil
            }(), "no EURange")
        let range = try OPCUA.Range(e)
        #expect(range.low == 2 && range.high == 24)
        #expect(space.node(ns.id("Assets/CAGE-12/temperature/EURange"))?.dataType == NodeId(884))
        // The reader's flat set: the last temperature read there, whichever tag.
        #expect(read("Readers/cage-room/Values/temperature").value == .scalar(.double(4.5)))

        // Three intervals (3 s) without a new value: Uncertain_LastUsableValue (0x40900000).
        clock.advance(3.5)
        value = read("Assets/CAGE-12/temperature")
        #expect(value.status == StatusCode(0x4090_0000) && value.value == .scalar(.double(4.5)))
        // The reader fails its cycles: Bad_NoCommunication (0x80310000).
        state.cycleDone(
            reader: "cage-room", tags: [Self.uid], up: false, lastGoodPollMs: nil, name: "sim", intervalMs: 1000,
            location: "Cold room")
        #expect(read("Assets/CAGE-12/temperature").status == StatusCode(0x8031_0000))
        #expect(read("Readers/cage-room/Values/temperature").status == StatusCode(0x8031_0000))
        state.cycleDone(
            reader: "cage-room", tags: [], up: true, lastGoodPollMs: Self.t0, name: "sim", intervalMs: 1000,
            location: "Cold room")
        // The tag leaves: the asset keeps its last value with Bad_OutOfService (0x808D0000); its Tags node goes.
        state.eventRecorded(
            Event(
                time: Self.t0 + 9_000, gateway: "gw-7", reader: "cage-room", uid: Self.uid, kind: .departure, name: "",
                severity: .info, detail: ""), asset: "CAGE-12")
        ns.settled()
        value = read("Assets/CAGE-12/temperature")
        #expect(value.status == StatusCode(0x808D_0000) && value.value == .scalar(.double(4.5)))
        #expect(read("Assets/CAGE-12/Present").value == .scalar(.boolean(false)))
        #expect(space.node(ns.id("Tags/\(Self.uid)")) == nil)
        #expect(space.node(ns.id("Tags/\(Self.uid)/temperature/EURange")) == nil)
    }

    /// A server begun while tags are already in a reader's field (the agent polls before the server starts): the
    /// device's LastScanData (OPC 30010 §6.2, the UID as a ByteString, E0 first) is the last tag the reader found, not
    /// empty until some other tag arrives; the tag is present under its asset.
    @Test func aServerBegunWithTagsInTheFieldHasTheirLastScan() throws {
        let state = FieldState(readers: [FieldState.Reader(id: "cage-room", location: nil, intervalMs: 1000)])
        state.cycleDone(
            reader: "cage-room", tags: [Self.uid], up: true, lastGoodPollMs: Self.t0, name: "sim", intervalMs: 1000,
            location: nil)
        let space = try AddressSpace.standard(applicationUri: "urn:vlogger:gw-7")
        let ns = GatewayNamespace(
            space: space, state: state, gateway: "gw-7", site: nil,
            assets: [AssetRow(uid: Self.uid, assetID: "CAGE-12")], post: { _ in })
        let now = DateTime(millisecondsSince1970: Self.t0)
        #expect(
            space.read(ns.id("DeviceSet/cage-room/LastScanData"), 13, now: now).value
                == .scalar(.byteString(Self.uid.displayBytes)))
        #expect(
            space.read(ns.id("DeviceSet/cage-room/LastScanTimestamp"), 13, now: now).value
                == .scalar(.dateTime(DateTime(millisecondsSince1970: Self.t0))))
        #expect(space.read(ns.id("Assets/CAGE-12/Present"), 13, now: now).value == .scalar(.boolean(true)))
    }
}
