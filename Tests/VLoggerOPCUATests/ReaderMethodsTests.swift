import FieldState
import Foundation
import ISO15693
import NIOConcurrencyHelpers
import OPCUA
import Testing
import VLoggerOutbox

@testable import OPCUAServer
@testable import VLoggerOPCUA

/// A field access that answers what the test says and counts what it was asked.
final class FakeFieldAccess: FieldAccess, @unchecked Sendable {
    let calls = NIOLockedValueBox<[String]>([])
    let answer = NIOLockedValueBox<FieldAccessError?>(nil)
    let tags: [UID]

    init(tags: [UID]) { self.tags = tags }

    func scan(reader: String, origin: String?) async -> Result<[UID], FieldAccessError> {
        calls.withLockedValue { $0.append("scan \(origin == nil ? "-" : "recorded")") }
        if let e = answer.withLockedValue({ $0 }) { return .failure(e) }
        return .success(tags)
    }

    /// How a call's password reached the field access: its length, never its value (" password N").
    static func pw(_ p: TagPassword?) -> String { p.map { " password \($0.bytes.count)" } ?? "" }

    func read(reader: String, uid: UID, _ range: TagRange, origin: String, password: TagPassword?) async -> Result<
        [UInt8], FieldAccessError
    > {
        calls.withLockedValue { $0.append("read \(uid) \(range)\(Self.pw(password))") }
        if let e = answer.withLockedValue({ $0 }) { return .failure(e) }
        switch range {
        case .blocks(_, let count): return .success(Array(repeating: 0xAB, count: count * 4))
        case .bytes(_, let length): return .success(Array(repeating: 0xCD, count: length))
        }
    }

    func write(
        reader: String, uid: UID, at start: TagRange.Start, data: [UInt8], origin: String, password: TagPassword?
    )
        async -> Result<String, FieldAccessError>
    {
        calls.withLockedValue { $0.append("write \(uid) \(start) \(data.count) \(origin)\(Self.pw(password))") }
        if let e = answer.withLockedValue({ $0 }) { return .failure(e) }
        return .success("written and read back")
    }

    func queueWrite(reader: String, uid: UID, firstBlock: Int, data: [UInt8], origin: String) async
        -> Result<Int64, FieldAccessError>
    {
        calls.withLockedValue { $0.append("queue \(uid) \(firstBlock)") }
        return .success(42)
    }

    func lock(reader: String, uid: UID, _ range: TagRange, origin: String, password: TagPassword?) async -> Result<
        String, FieldAccessError
    > {
        calls.withLockedValue { $0.append("lock \(uid) \(range)\(Self.pw(password))") }
        if let e = answer.withLockedValue({ $0 }) { return .failure(e) }
        return .success("locked and read back locked")
    }
}

/// A server core on `space` (no listener: calls go straight to its method table), for this module's tests.
func testCore(_ space: AddressSpace, uri: String = "urn:vlogger:gw-7") -> ServerCore {
    ServerCore(
        configuration: ServerConfiguration(
            host: "127.0.0.1", port: 0, applicationUri: uri, applicationName: "t", identity: nil,
            security: [EndpointSecurity(.none, .none)]),
        addressSpace: space)
}

/// An activated-looking session of `core` named `name` (a call's origin: its ApplicationUri and user).
func testSession(_ core: ServerCore, name: String, uri: String? = nil, user: String? = nil) -> Session {
    let session = Session(
        id: NodeId(1), number: 1, authenticationToken: NodeId(2), name: name, timeoutMs: 60_000,
        clientCertificate: nil, serverNonce: [], channelId: 1, securityMode: .none, now: Date(),
        subscriptions: SubscriptionSet(server: core))
    session.clientApplicationUri = uri
    session.user = user
    return session
}

/// The readers' AutoID methods over a fake field access (OPC 30010 §6.3, §9.1.1; OPC 10000-4 §5.11.2.2; the facts in
/// docs/reference/opcua.md, "Methods"): what a
/// method hands the field access, what it answers for each failure, and what it refuses before any access.
@Suite(.serialized)
struct ReaderMethodsTests {
    static let uid = try! UID(parsing: "E004010812345601")

    struct Rig {
        let core: ServerCore
        let namespace: GatewayNamespace
        let access: FakeFieldAccess
        let session: Session
        let events: NIOLockedValueBox<[ServerEvent]>
        func id(_ path: String) -> NodeId { namespace.id(path) }

        func call(_ method: String, _ args: [Variant]) async -> CallMethodResult {
            await core.methods.call(
                CallMethodRequest(
                    objectId: id("DeviceSet/dock-3"), methodId: id("DeviceSet/dock-3/\(method)"), inputArguments: args),
                session: session, deadline: nil, space: core.addressSpace)
        }
    }

    func rig(allowLock: Bool = false) throws -> Rig {
        let space = try AddressSpace.standard(applicationUri: "urn:vlogger:gw-7")
        let core = testCore(space)
        let state = FieldState(readers: [FieldState.Reader(id: "dock-3", location: "Dock door 3", intervalMs: 1000)])
        let access = FakeFieldAccess(tags: [Self.uid])
        let events = NIOLockedValueBox<[ServerEvent]>([])
        let namespace = GatewayNamespace(
            space: space, state: state, gateway: "gw-7", site: nil, methods: core.methods, access: access,
            allowLock: allowLock, scanPause: { _ in await Task.yield() },
            post: { e in events.withLockedValue { $0.append(e) } })
        let session = testSession(core, name: "plc", uri: "urn:plc-7")
        return Rig(core: core, namespace: namespace, access: access, session: session, events: events)
    }

    static func u16(_ n: UInt16) -> Variant { .scalar(.uInt16(n)) }
    static func bytes(_ b: [UInt8]) -> Variant { .scalar(.byteString(b)) }

    /// A UID of 0 or 200 bytes, a block count of 0, too few or too many arguments, a value of another type: each its
    /// status, and the reader is never asked.
    @Test func wrongArgumentsNeverReachTheReader() async throws {
        let r = try rig()
        let uid = Self.bytes(Self.uid.displayBytes)
        var result = await r.call("ReadBlocks", [Self.bytes([]), Self.u16(0), Self.u16(1)])
        #expect(result.statusCode == .badInvalidArgument && result.inputArgumentResults?.first == .badInvalidArgument)
        result = await r.call("ReadBlocks", [Self.bytes(Array(repeating: 0xE0, count: 200)), Self.u16(0), Self.u16(1)])
        #expect(result.statusCode == .badInvalidArgument)
        result = await r.call("ReadBlocks", [uid, Self.u16(0), Self.u16(0)])
        #expect(result.statusCode == .badInvalidArgument && result.inputArgumentResults?[2] == .badInvalidArgument)
        result = await r.call("ReadBlocks", [uid, Self.u16(0)])
        #expect(result.statusCode == .badArgumentsMissing)
        result = await r.call("WriteBlocks", [uid, Self.u16(0), Self.bytes([1, 2, 3, 4]), Self.u16(9)])
        #expect(result.statusCode == .badTooManyArguments)
        result = await r.call("WriteBlocks", [uid, .scalar(.uInt32(0)), Self.bytes([1, 2, 3, 4])])
        #expect(result.inputArgumentResults == [.good, .badTypeMismatch, .good])
        result = await r.call("WriteBlocks", [uid, Self.u16(0), Self.bytes([])])
        #expect(result.statusCode == .badInvalidArgument)
        // ReadTag's Offset + Length past what any ISO 15693 tag holds: out_of_range_error (7) at once.
        let id = Variant.scalar(.extensionObject(ScanData.byteString(Self.uid.displayBytes).extensionObject))
        result = await r.call(
            "ReadTag",
            [id, .scalar(.string("UID")), Self.u16(0), .scalar(.uInt32(.max)), .scalar(.uInt32(.max)), Self.bytes([])])
        #expect(result.statusCode == .good && result.outputArguments?.last == .scalar(.int32(7)))
        // Region 1 (not the user memory): region_not_found_error (5); a password longer than any chip's (33 bytes;
        // an ST25DV's is 8): password_error (4); a code type other than UID: code_not_supported (13).
        result = await r.call(
            "ReadTag",
            [id, .scalar(.string("UID")), Self.u16(1), .scalar(.uInt32(0)), .scalar(.uInt32(4)), Self.bytes([])])
        #expect(result.outputArguments?.last == .scalar(.int32(5)))
        result = await r.call(
            "ReadTag",
            [
                id, .scalar(.string("UID")), Self.u16(0), .scalar(.uInt32(0)), .scalar(.uInt32(4)),
                Self.bytes(Array(repeating: 7, count: 33)),
            ])
        #expect(result.outputArguments?.last == .scalar(.int32(4)))
        result = await r.call(
            "ReadTag",
            [id, .scalar(.string("EPC")), Self.u16(0), .scalar(.uInt32(0)), .scalar(.uInt32(4)), Self.bytes([])])
        #expect(result.outputArguments?.last == .scalar(.int32(13)))
        // A ScanData that is no ScanData.
        result = await r.call(
            "ReadTag",
            [
                .scalar(.extensionObject(ScanSettings().extensionObject)), .scalar(.string("UID")), Self.u16(0),
                .scalar(.uInt32(0)), .scalar(.uInt32(4)), Self.bytes([]),
            ])
        #expect(result.statusCode == .badInvalidArgument && result.inputArgumentResults?.first == .badInvalidArgument)
        #expect(r.access.calls.withLockedValue { $0 }.isEmpty)
    }

    /// A call's Password (OPC 30010 §6.3.3–6.3.5: ReadTag, WriteTag, LockTag) reaches the field access as a
    /// `TagPassword`; an empty ByteString or a null is none; the scalar twins take none.
    @Test func aCallsPasswordGoesWithItsAccess() async throws {
        let r = try rig()
        let id = Variant.scalar(.extensionObject(ScanData.byteString(Self.uid.displayBytes).extensionObject))
        var result = await r.call(
            "ReadTag",
            [
                id, .scalar(.string("UID")), Self.u16(0), .scalar(.uInt32(4)), .scalar(.uInt32(4)),
                Self.bytes([1, 2, 3, 4]),
            ])
        #expect(result.outputArguments?.last == ReaderMethods.status(.success))
        result = await r.call(
            "WriteTag",
            [
                id, .scalar(.string("UID")), Self.u16(0), .scalar(.uInt32(4)), Self.bytes([9]),
                Self.bytes(Array(repeating: 1, count: 8)),
            ])
        #expect(result.outputArguments?.last == ReaderMethods.status(.success))
        result = await r.call(
            "ReadTag", [id, .scalar(.string("UID")), Self.u16(0), .scalar(.uInt32(0)), .scalar(.uInt32(4)), .null])
        #expect(result.outputArguments?.last == ReaderMethods.status(.success))
        #expect(
            r.access.calls.withLockedValue { $0 } == [
                "read E004010812345601 bytes(offset: 4, length: 4) password 4",
                "write E004010812345601 byte(4) 1 opcua:urn:plc-7 password 8",
                "read E004010812345601 bytes(offset: 0, length: 4)",
            ])
    }

    /// Each access failure is its AutoID status (OPC 30010 §9.1.1, AutoIdOperationStatusEnumeration): the method
    /// call itself is Good.
    @Test func accessFailuresAreTheirAutoIdStatus() async throws {
        let r = try rig()
        let expected: [(FieldAccessError.Kind, Int32, Int32)] = [
            // kind, its status for a read, for a write
            (.notInField, 8, 8), (.outOfRange, 7, 7), (.locked, 3, 3), (.password, 4, 4), (.noAnswer, 19, 19),
            (.tagError, 10, 14), (.readerDown, 17, 17), (.busy, 17, 17), (.invalid, 6, 6), (.failed, 14, 14),
        ]
        for (n, (kind, read, write)) in expected.enumerated() {
            r.access.answer.withLockedValue { $0 = FieldAccessError(kind, "\(kind)") }
            let uid = Self.bytes(Self.uid.displayBytes)
            let a = await r.call("ReadBlocks", [uid, Self.u16(UInt16(n)), Self.u16(1)])
            #expect(a.statusCode == .good && a.outputArguments?.last == .scalar(.int32(read)), "\(kind)")
            let b = await r.call("WriteBlocks", [uid, Self.u16(UInt16(n)), Self.bytes([1, 2, 3, 4])])
            #expect(b.outputArguments == [.scalar(.int32(write))], "\(kind)")
        }
        // Each access an RfidAccessEventType event from the device, with the client and the command.
        let access = r.events.withLockedValue { $0 }.filter { $0.eventType == NodeId(1016, namespace: 3) }
        #expect(access.count == 2 * expected.count)
        #expect(access.first?.fields["Client"] == .scalar(.string("opcua:urn:plc-7")))
        #expect(access.first?.fields["Command"] == .scalar(.string("ReadBlocks")))
    }

    /// The same write from the same client within a minute (a retry after its timeout) is answered from the first
    /// call: the reader is asked once. Other data is another write; the first data again after it (01, 00, 01) is a
    /// third; a write that failed (the tag not yet in the field) is tried again when called again.
    @Test func aRetriedWriteIsMadeOnce() async throws {
        let r = try rig()
        let one = [Self.bytes(Self.uid.displayBytes), Self.u16(3), Self.bytes([1, 2, 3, 4])]
        let zero = [Self.bytes(Self.uid.displayBytes), Self.u16(3), Self.bytes([0, 0, 0, 0])]
        let first = await r.call("WriteBlocks", one)
        let again = await r.call("WriteBlocks", one)
        #expect(first.outputArguments == [.scalar(.int32(0))] && again.outputArguments == first.outputArguments)
        var writes: [String] { r.access.calls.withLockedValue { $0 }.filter { $0.hasPrefix("write") } }
        #expect(writes.count == 1, "\(writes)")
        #expect(writes.first?.hasSuffix("opcua:urn:plc-7") == true)
        _ = await r.call("WriteBlocks", zero)
        _ = await r.call("WriteBlocks", one)
        #expect(writes.count == 3, "\(writes)")
        // Not in the field yet: status 8, and the same call a moment later is made.
        r.access.answer.withLockedValue { $0 = FieldAccessError(.notInField, "not yet") }
        let early = await r.call(
            "WriteBlocks", [Self.bytes(Self.uid.displayBytes), Self.u16(9), Self.bytes([7, 7, 7, 7])])
        #expect(early.outputArguments == [.scalar(.int32(8))])
        r.access.answer.withLockedValue { $0 = nil }
        let later = await r.call(
            "WriteBlocks", [Self.bytes(Self.uid.displayBytes), Self.u16(9), Self.bytes([7, 7, 7, 7])])
        #expect(later.outputArguments == [.scalar(.int32(0))])
        #expect(writes.count == 5, "\(writes)")
    }

    /// Scan's settings: `Cycles` inventories (the first recorded as the client's), or one when DataAvailable finds a
    /// tag; settings that never end are refused; ScanStart runs one scan at a time per reader until ScanStop, and
    /// ends with the session that started it.
    @Test func scanSettingsAndOneContinuousScanAtATime() async throws {
        let r = try rig()
        let settings = { (s: ScanSettings) in Variant.scalar(.extensionObject(s.extensionObject)) }
        var result = await r.call("Scan", [settings(ScanSettings(cycles: 3))])
        #expect(result.outputArguments?.last == .scalar(.int32(0)))
        #expect(r.access.calls.withLockedValue { $0 } == ["scan recorded", "scan -", "scan -"])
        if case .array(.extensionObject, let items?, _) = result.outputArguments?.first,
            case .extensionObject(let e) = items.first
        {
            let found = try RfidScanResult(e)
            #expect(found.codeType == "UID" && found.scanData == .byteString(Self.uid.displayBytes))
        } else {
            Issue.record("no RfidScanResult: \(result)")
        }
        // The type's Scan (RfidReaderDeviceType's, AutoID i=7013, here namespace 3) called on the device: the device's.
        let viaType = await r.core.methods.call(
            CallMethodRequest(
                objectId: r.id("DeviceSet/dock-3"), methodId: NodeId(7013, namespace: 3),
                inputArguments: [settings(ScanSettings(cycles: 1))]),
            session: r.session, deadline: nil, space: r.core.addressSpace)
        #expect(viaType.statusCode == .good && viaType.outputArguments?.last == .scalar(.int32(0)))
        // Settings that never end: Bad_InvalidArgument, the reader not asked.
        r.access.calls.withLockedValue { $0 = [] }
        result = await r.call("Scan", [settings(ScanSettings())])
        #expect(result.statusCode == .badInvalidArgument)
        #expect(r.access.calls.withLockedValue { $0 }.isEmpty)
        result = await r.call("Scan", [settings(ScanSettings(cycles: 5, dataAvailable: true))])
        #expect(r.access.calls.withLockedValue { $0 }.count == 1)
        result = await r.call("ScanStart", [settings(ScanSettings())])
        #expect(result.outputArguments == [.scalar(.int32(0))])
        #expect(r.namespace.methods?.isScanning("dock-3") == true)
        // A second ScanStart, and a Scan while one runs: Bad_InvalidState (OPC 30010 §6.1.3.4–6.1.3.5).
        result = await r.call("ScanStart", [settings(ScanSettings())])
        #expect(result.statusCode == .badInvalidState)
        result = await r.call("Scan", [settings(ScanSettings(cycles: 1))])
        #expect(result.statusCode == .badInvalidState)
        result = await r.call("ScanStop", [])
        #expect(result.statusCode == .good)
        #expect(r.namespace.methods?.isScanning("dock-3") == false)
        // Stopped and started again at once: the first scan's end does not take the second's place.
        result = await r.call("ScanStart", [settings(ScanSettings())])
        _ = await r.call("ScanStop", [])
        result = await r.call("ScanStart", [settings(ScanSettings())])
        #expect(result.outputArguments == [.scalar(.int32(0))])
        for _ in 0..<20 { await Task.yield() }
        #expect(r.namespace.methods?.isScanning("dock-3") == true)
        _ = await r.call("ScanStop", [])
        // Started again, then its session ends: the scan stops at its next round.
        result = await r.call("ScanStart", [settings(ScanSettings())])
        #expect(result.outputArguments == [.scalar(.int32(0))])
        r.session.isClosed = true
        for _ in 0..<200 where r.namespace.methods?.isScanning("dock-3") == true {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(r.namespace.methods?.isScanning("dock-3") == false)
    }

    /// LockTag (OPC 30010 §6.3.5) only where `[opcua] allow-lock` says so: without it the device has no LockTag. With
    /// it, the user memory (RfidLockRegionEnumeration User, 4) locked for ever (RfidLockOperationEnumeration
    /// PermanentLock, 2) is handed to the field access as a byte range; another region is region_not_found_error,
    /// a reversible lock or an unlock not_supported_by_device (an ISO 15693 lock is for ever), a password in the call
    /// not_supported_by_device, a Lock of another type Bad_InvalidArgument; each before any access.
    @Test func lockTagOnlyWhereAllowedAndOnlyForEver() async throws {
        let without = try rig()
        #expect(without.core.addressSpace.node(without.id("DeviceSet/dock-3/LockTag")) == nil)
        let r = try rig(allowLock: true)
        #expect(r.core.addressSpace.node(r.id("DeviceSet/dock-3/LockTag")) != nil)
        let id = Variant.scalar(.extensionObject(ScanData.byteString(Self.uid.displayBytes).extensionObject))
        func lockTag(region: Int32 = 4, lock: Int32 = 2, password: [UInt8] = [], _ lockArg: Variant? = nil) async
            -> CallMethodResult
        {
            await r.call(
                "LockTag",
                [
                    id, .scalar(.string("UID")), .scalar(.byteString(password)), .scalar(.int32(region)),
                    lockArg ?? .scalar(.int32(lock)), .scalar(.uInt32(8)), .scalar(.uInt32(8)),
                ])
        }
        var result = await lockTag()
        #expect(result.statusCode == .good && result.outputArguments == [.scalar(.int32(0))])
        #expect(r.access.calls.withLockedValue { $0 } == ["lock E004010812345601 bytes(offset: 8, length: 8)"])
        result = await lockTag(region: 1)
        #expect(result.outputArguments == [ReaderMethods.status(.region_not_found_error)])
        result = await lockTag(lock: 0)
        #expect(result.outputArguments == [ReaderMethods.status(.not_supported_by_device)])
        result = await lockTag(lock: 3)
        #expect(result.outputArguments == [ReaderMethods.status(.not_supported_by_device)])
        result = await lockTag(.scalar(.string("PermanentLock")))
        #expect(result.statusCode == .badInvalidArgument)
        #expect(r.access.calls.withLockedValue { $0 }.count == 1)
        // A password goes with the lock to the field access (the agent checks it: AccessPasswordTests).
        result = await lockTag(password: [1, 2, 3, 4])
        #expect(result.outputArguments == [ReaderMethods.status(.success)])
        #expect(
            r.access.calls.withLockedValue { $0 }.last == "lock E004010812345601 bytes(offset: 8, length: 8) password 4"
        )
        // A lock the tag refuses (a block past its end): its status.
        r.access.answer.withLockedValue { $0 = FieldAccessError(.outOfRange, "past the end") }
        result = await lockTag()
        #expect(result.outputArguments == [ReaderMethods.status(.out_of_range_error)])
    }
}
