import Foundation
import ISO15693
import OPCUA
import OPCUAServer
import VLoggerOutbox

/// The methods of each reader's AutoID device (OPC 30010 §6.3): `Scan`, `ReadTag` and `WriteTag` with the spec's
/// arguments, and the scalar twins a PLC can call without structures (an S7-1500's `UA_MethodCall` builds no
/// `ScanData` union): `ReadBlocks(Uid, FirstBlock, Count) → (Data, Status)`, `WriteBlocks(Uid, FirstBlock, Data) →
/// (Status)` and `QueueBlocks(Uid, FirstBlock, Data) → (WriteId, Status)`. Every one goes through the gateway's
/// `FieldAccess` (the reader's polling thread, between its cycles). A method answers Good with its AutoID status
/// (`AutoIdOperationStatusEnumeration`, §9.1.1) in `Status`; a wrong argument is Bad_InvalidArgument.
///
/// A client that calls a write again with the same arguments within a minute (a retry after its timeout) gets the
/// first call's answer: the tag is not written twice and one write event is recorded.
final class ReaderMethods: @unchecked Sendable {
    let space: AddressSpace
    let methods: MethodTable
    let access: any FieldAccess
    let ns: UInt16
    let clock: @Sendable () -> Date
    let post: @Sendable (ServerEvent) -> Void
    /// The wait between two rounds of a scan (a fuzzer or a test waits not at all).
    let pause: @Sendable (Duration) async -> Void
    private let lock = NSLock()
    private var recent: [RecentKey: (time: Date, answer: Task<Result<[Variant], MethodTable.MethodFailure>, Never>)] =
        [:]
    static let retryWindow: TimeInterval = 60

    /// A write call as a retry names it: the client, the reader, the method, the tag and its arguments (by their
    /// hash: the data is not kept).
    struct RecentKey: Hashable {
        let origin: String
        let reader: String
        let method: String
        let uid: UID
        let arguments: Int
    }

    init(
        space: AddressSpace, methods: MethodTable, access: any FieldAccess, ns: UInt16,
        clock: @escaping @Sendable () -> Date = { Date() }, post: @escaping @Sendable (ServerEvent) -> Void = { _ in },
        pause: @escaping @Sendable (Duration) async -> Void = { try? await Task.sleep(for: $0) },
        allowLock: Bool = false
    ) {
        self.allowLock = allowLock
        self.pause = pause
        self.post = post
        self.space = space
        self.methods = methods
        self.access = access
        self.ns = ns
        self.clock = clock
    }

    typealias Status = AutoIdOperationStatusEnumeration

    /// The AutoID methods a reader's device has (the optional paths `instantiate` makes).
    static let autoIdMethods = ["Scan", "ScanStart", "ScanStop", "ReadTag", "WriteTag"]
    /// Whether clients may lock tags' blocks (`[opcua] allow-lock`): only then has a device LockTag.
    let allowLock: Bool
    /// The AutoID methods each device is made with.
    var methodNames: Set<String> { Set(Self.autoIdMethods + (allowLock ? ["LockTag"] : [])) }

    /// Registers a reader's methods: AutoID's (instantiated with the device, in `made`), and adds the scalar twins
    /// under the device.
    func register(reader: String, device: NodeId, made: [String: NodeId], id: (String) -> NodeId) {
        let access = self.access
        if let scan = made["Scan"] {
            methods.add(object: device, method: scan) { [self] call in
                // Scan(Settings ScanSettings) → (Results RfidScanResult[], Status): the tags in the field now.
                guard case .scalar(.extensionObject(let e)) = call.arguments[0],
                    let settings: ScanSettings = self.structure(e)
                else { return .failure(.argument(0, of: 1)) }
                // Settings that never end (no Duration, no Cycles, not until data) are Bad_InvalidArgument, and a Scan
                // while a ScanStart runs Bad_InvalidState (OPC 30010 §6.1.3.4–6.1.3.5).
                if !(settings.duration.isFinite && settings.duration > 0), settings.cycles <= 0,
                    !settings.dataAvailable
                {
                    return .failure(.argument(0, of: 1))
                }
                guard beginScan(reader) else { return .failure(MethodTable.MethodFailure(.badInvalidState)) }
                let result = await self.scan(access, reader, settings, origin: Self.origin(call.session))
                endScan(reader)
                switch result {
                case .success(let found):
                    let results = found.map { Self.scanResult($0.0, $0.1) }
                    return .success([
                        .array(.extensionObject, results.map { .extensionObject($0.extensionObject) }),
                        Self.status(found.isEmpty && settings.dataAvailable ? .no_identifier : .success),
                    ])
                case .failure(let e):
                    return .success([.array(.extensionObject, []), Self.status(Self.code(e, write: false))])
                }
            }
        }
        if let start = made["ScanStart"] {
            methods.add(object: device, method: start) { [self] call in
                // ScanStart(Settings ScanSettings) → (Status): scans until ScanStop or the settings' end.
                guard case .scalar(.extensionObject(let e)) = call.arguments[0],
                    let settings: ScanSettings = self.structure(e)
                else { return .failure(.argument(0, of: 1)) }
                // One at a time per reader: a second is Bad_InvalidState (OPC 30010 §6.1.3.5).
                guard startScan(reader, device, settings, session: call.session) else {
                    return .failure(MethodTable.MethodFailure(.badInvalidState))
                }
                return .success([Self.status(.success)])
            }
        }
        if let stop = made["ScanStop"] {
            methods.add(object: device, method: stop) { [self] _ in
                let scan = lock.withLock { scanning.removeValue(forKey: reader) }
                scan?.task.cancel()
                return .success([])
            }
        }
        if let read = made["ReadTag"] {
            methods.add(object: device, method: read) { [self] call in
                // ReadTag(Identifier ScanData, CodeType, Region UInt16, Offset UInt32, Length UInt32, Password) →
                // (ResultData ByteString, Status).
                let a = call.arguments
                let (uid, region, offset): (UID, UInt16, UInt32)
                switch self.tagArguments(a) {
                case .failure(let f): return .failure(f)
                case .success(.some(let t)): (uid, region, offset) = t
                case .success(.none): return .success([.scalar(.byteString([])), Self.status(.code_not_supported)])
                }
                guard case .scalar(.uInt32(let length)) = a[4] else { return .failure(.argument(4, of: 6)) }
                let password: TagPassword?
                switch Self.password(a[5], argument: 5, of: 6) {
                case .failure(let f): return .failure(f)
                case .status(let s): return .success([.scalar(.byteString([])), Self.status(s)])
                case .password(let p): password = p
                }
                if region != 0 { return .success([.scalar(.byteString([])), Self.status(.region_not_found_error)]) }
                guard length > 0, length <= 65_536, offset <= 1 << 24 else {
                    return .success([.scalar(.byteString([])), Self.status(.out_of_range_error)])
                }
                let origin = Self.origin(call.session)
                let (data, status) = Self.outcome(
                    await access.read(
                        reader: reader, uid: uid, .bytes(offset: Int(offset), length: Int(length)), origin: origin,
                        password: password),
                    write: false)
                self.accessed(reader, device, "ReadTag", uid, origin, status)
                return .success([.scalar(.byteString(data ?? [])), Self.status(status)])
            }
        }
        if let write = made["WriteTag"] {
            methods.add(object: device, method: write) { [self] call in
                // WriteTag(Identifier ScanData, CodeType, Region UInt16, Offset UInt32, Data ByteString, Password)
                // → (Status).
                let a = call.arguments
                let (uid, region, offset): (UID, UInt16, UInt32)
                switch self.tagArguments(a) {
                case .failure(let f): return .failure(f)
                case .success(.some(let t)): (uid, region, offset) = t
                case .success(.none): return .success([Self.status(.code_not_supported)])
                }
                guard case .scalar(.byteString(let data)) = a[4], let data, !data.isEmpty, data.count <= 65_536 else {
                    return .failure(.argument(4, of: 6))
                }
                let password: TagPassword?
                switch Self.password(a[5], argument: 5, of: 6) {
                case .failure(let f): return .failure(f)
                case .status(let s): return .success([Self.status(s)])
                case .password(let p): password = p
                }
                if region != 0 { return .success([Self.status(.region_not_found_error)]) }
                guard offset <= 1 << 24 else { return .success([Self.status(.out_of_range_error)]) }
                let origin = Self.origin(call.session)
                return await once(origin, reader, "WriteTag", uid, a) {
                    let (_, status) = Self.outcome(
                        await access.write(
                            reader: reader, uid: uid, at: .byte(Int(offset)), data: data, origin: origin,
                            password: password),
                        write: true)
                    self.accessed(reader, device, "WriteTag", uid, origin, status)
                    return .success([Self.status(status)])
                }
            }
        }
        if allowLock, let lockTag = made["LockTag"] {
            methods.add(object: device, method: lockTag) { [self] call in
                // LockTag(Identifier ScanData, CodeType, Password ByteString, Region RfidLockRegionEnumeration,
                // Lock RfidLockOperationEnumeration, Offset UInt32, Length UInt32) → (Status) (OPC 30010 §6.3.5).
                let a = call.arguments
                let uid: UID
                switch self.identifier(a, count: 7) {
                case .failure(let f): return .failure(f)
                case .success(.none): return .success([Self.status(.code_not_supported)])
                case .success(.some(let u)): uid = u
                }
                guard case .scalar(.int32(let region)) = a[3] else { return .failure(.argument(3, of: 7)) }
                guard case .scalar(.int32(let operation)) = a[4] else { return .failure(.argument(4, of: 7)) }
                guard case .scalar(.uInt32(let offset)) = a[5] else { return .failure(.argument(5, of: 7)) }
                guard case .scalar(.uInt32(let length)) = a[6], length > 0 else { return .failure(.argument(6, of: 7)) }
                // The user memory (RfidLockRegionEnumeration User, 4) only; an ISO 15693 lock is for ever, so only
                // PermanentLock (2): Lock and Unlock (reversible) and PermanentUnlock cannot be done.
                if region != 4 { return .success([Self.status(.region_not_found_error)]) }
                if operation != 2 { return .success([Self.status(.not_supported_by_device)]) }
                let password: TagPassword?
                switch Self.password(a[2], argument: 2, of: 7) {
                case .failure(let f): return .failure(f)
                case .status(let s): return .success([Self.status(s)])
                case .password(let p): password = p
                }
                guard offset <= 1 << 24, length <= 1 << 24 else { return .success([Self.status(.out_of_range_error)]) }
                let origin = Self.origin(call.session)
                let (_, status) = Self.outcome(
                    await access.lock(
                        reader: reader, uid: uid, .bytes(offset: Int(offset), length: Int(length)), origin: origin,
                        password: password),
                    write: true)
                self.accessed(reader, device, "LockTag", uid, origin, status)
                return .success([Self.status(status)])
            }
        }
        // The scalar twins, in the gateway's namespace under the device.
        let byteString = NodeId(15)
        let uint16 = NodeId(5)
        let int32 = NodeId(6)
        let uint64 = NodeId(9)
        func arg(_ name: String, _ type: NodeId, _ text: String) -> Argument {
            Argument(name: name, dataType: type, valueRank: -1, description: LocalizedText(text))
        }
        let uidArg = arg("Uid", byteString, "The tag's UID, 8 bytes, most significant (E0) first")
        let firstArg = arg("FirstBlock", uint16, "The first block")
        let statusArg = arg("Status", int32, "AutoIdOperationStatusEnumeration: 0 success, 8 no tag, 7 out of range …")
        let readBlocks = id("DeviceSet/\(reader)/ReadBlocks")
        addMethod(
            readBlocks, "ReadBlocks", parent: device,
            inputs: [uidArg, firstArg, arg("Count", uint16, "How many blocks")],
            outputs: [arg("Data", byteString, "The blocks' bytes"), statusArg])
        methods.add(object: device, method: readBlocks) { [self] call in
            let a = call.arguments
            guard let uid = Self.uid(a[0]) else { return .failure(.argument(0, of: 3)) }
            guard case .scalar(.uInt16(let first)) = a[1] else { return .failure(.argument(1, of: 3)) }
            guard case .scalar(.uInt16(let count)) = a[2], count > 0 else { return .failure(.argument(2, of: 3)) }
            let origin = Self.origin(call.session)
            let (data, status) = Self.outcome(
                await access.read(
                    reader: reader, uid: uid, .blocks(first: Int(first), count: Int(count)), origin: origin,
                    password: nil),
                write: false)
            self.accessed(reader, device, "ReadBlocks", uid, origin, status)
            return .success([.scalar(.byteString(data ?? [])), Self.status(status)])
        }
        let writeBlocks = id("DeviceSet/\(reader)/WriteBlocks")
        addMethod(
            writeBlocks, "WriteBlocks", parent: device,
            inputs: [uidArg, firstArg, arg("Data", byteString, "Whole blocks")], outputs: [statusArg])
        methods.add(object: device, method: writeBlocks) { [self] call in
            let a = call.arguments
            guard let uid = Self.uid(a[0]) else { return .failure(.argument(0, of: 3)) }
            guard case .scalar(.uInt16(let first)) = a[1] else { return .failure(.argument(1, of: 3)) }
            guard case .scalar(.byteString(let data)) = a[2], let data, !data.isEmpty, data.count <= 65_536 else {
                return .failure(.argument(2, of: 3))
            }
            let origin = Self.origin(call.session)
            return await once(origin, reader, "WriteBlocks", uid, a) {
                let (_, status) = Self.outcome(
                    await access.write(
                        reader: reader, uid: uid, at: .block(Int(first)), data: data, origin: origin, password: nil),
                    write: true)
                self.accessed(reader, device, "WriteBlocks", uid, origin, status)
                return .success([Self.status(status)])
            }
        }
        let queueBlocks = id("DeviceSet/\(reader)/QueueBlocks")
        addMethod(
            queueBlocks, "QueueBlocks", parent: device,
            inputs: [uidArg, firstArg, arg("Data", byteString, "Whole blocks")],
            outputs: [arg("WriteId", uint64, "The queued write's id (vlogger writes show ID)"), statusArg])
        methods.add(object: device, method: queueBlocks) { [self] call in
            let a = call.arguments
            guard let uid = Self.uid(a[0]) else { return .failure(.argument(0, of: 3)) }
            guard case .scalar(.uInt16(let first)) = a[1] else { return .failure(.argument(1, of: 3)) }
            guard case .scalar(.byteString(let data)) = a[2], let data, !data.isEmpty, data.count <= 65_536 else {
                return .failure(.argument(2, of: 3))
            }
            let origin = Self.origin(call.session)
            return await once(origin, reader, "QueueBlocks", uid, a) {
                switch await access.queueWrite(
                    reader: reader, uid: uid, firstBlock: Int(first), data: data, origin: origin)
                {
                case .success(let id): return .success([.scalar(.uInt64(UInt64(id))), Self.status(.success)])
                case .failure(let e): return .success([.scalar(.uInt64(0)), Self.status(Self.code(e, write: true))])
                }
            }
        }
    }

    /// A write's answer, or the answer of the same call made by the same client to the same reader within the retry
    /// window (awaited while it is still running). Only a write that was made answers a retry: a failed one is tried
    /// again when called again. A write made to a tag forgets the other writes to it, so that the same arguments
    /// called again after another write (01, then 00, then 01) are a new write.
    private func once(
        _ origin: String, _ reader: String, _ method: String, _ uid: UID, _ arguments: [Variant],
        _ body: @escaping @Sendable () async -> Result<[Variant], MethodTable.MethodFailure>
    ) async -> Result<[Variant], MethodTable.MethodFailure> {
        var hasher = Hasher()
        hasher.combine(arguments)
        let key = RecentKey(origin: origin, reader: reader, method: method, uid: uid, arguments: hasher.finalize())
        let now = clock()
        let task = lock.withLock { () -> Task<Result<[Variant], MethodTable.MethodFailure>, Never> in
            recent = recent.filter { now.timeIntervalSince($0.value.time) < Self.retryWindow }
            if let r = recent[key] { return r.answer }
            // On the server's method executor, as the call itself (a task made here would not inherit it).
            let t = Task(executorPreference: ServerCore.methodExecutor) { await body() }
            if recent.count < 1_000 { recent[key] = (now, t) }
            return t
        }
        let result = await task.value
        lock.withLock {
            if Self.made(result) {
                recent = recent.filter { $0.key == key || $0.key.reader != reader || $0.key.uid != uid }
            } else if recent[key]?.answer == task {
                recent[key] = nil
            }
        }
        return result
    }

    /// Whether a write's answer says it was made (its Status, the last output, is success).
    static func made(_ r: Result<[Variant], MethodTable.MethodFailure>) -> Bool {
        guard case .success(let out) = r else { return false }
        return out.last == status(.success)
    }

    /// A method node with its argument properties (OPC 10000-3 §5.7: InputArguments and OutputArguments, Argument
    /// arrays), a component of `parent`.
    private func addMethod(_ id: NodeId, _ name: String, parent: NodeId, inputs: [Argument], outputs: [Argument]) {
        var m = Node(id: id, nodeClass: .method, browseName: QualifiedName(namespace: ns, name))
        m.executable = true
        m.references = [Reference(ReferenceTypeIds.hasComponent, parent, forward: false)]
        space.add(m)
        for (property, list) in [("InputArguments", inputs), ("OutputArguments", outputs)] where !list.isEmpty {
            guard case .string(let path) = id.identifier else { continue }
            var p = Node(
                id: NodeId(namespace: ns, .string("\(path ?? "")/\(property)")), nodeClass: .variable,
                browseName: QualifiedName(namespace: 0, property))
            p.dataType = Argument.dataTypeId
            p.valueRank = 1
            p.arrayDimensions = [0]
            p.accessLevel = Node.readable
            p.minimumSamplingInterval = 0
            p.value = DataValue(value: .array(.extensionObject, list.map { .extensionObject($0.extensionObject) }))
            p.references = [
                Reference(ReferenceTypeIds.hasProperty, id, forward: false),
                Reference(ReferenceTypeIds.hasTypeDefinition, NodeId(68)),
            ]
            space.add(p)
        }
    }

    // MARK: Continuous scans

    /// Each reader's ScanStart (its token, so that a scan that ends removes only itself) and the readers a Scan runs
    /// on now: one of either at a time (OPC 30010 §6.1.3.5).
    private var scanning: [String: (token: UInt64, task: Task<Void, Never>)] = [:]
    private var scanningOnce: Set<String> = []
    private var nextToken: UInt64 = 0

    /// Ends every ScanStart (the server stops).
    func stop() {
        let tasks = lock.withLock { () -> [Task<Void, Never>] in
            defer { scanning = [:] }
            return scanning.values.map(\.task)
        }
        for t in tasks { t.cancel() }
    }

    /// Takes the reader for a Scan (false: a scan runs on it); `endScan` gives it back.
    func beginScan(_ reader: String) -> Bool {
        lock.withLock {
            guard scanning[reader] == nil, !scanningOnce.contains(reader) else { return false }
            scanningOnce.insert(reader)
            return true
        }
    }

    func endScan(_ reader: String) { _ = lock.withLock { scanningOnce.remove(reader) } }

    /// Whether a ScanStart runs on the reader (its device's ScanActive, DeviceStatus Scanning).
    func isScanning(_ reader: String) -> Bool { lock.withLock { scanning[reader] != nil } }

    /// ScanStart: inventories 250 ms apart through the field access (the reader's thread, between its cycles), each
    /// tag an RfidScanEventType event from the device when it is seen first in this scan and when it is seen again
    /// after a round without it; until ScanStop, `Duration` (ms) or `Cycles` rounds, the first tag when
    /// `DataAvailable`, or the end of the session that started it. The first round is recorded as the client's Scan;
    /// one scan at a time per reader (false: one runs).
    func startScan(_ reader: String, _ device: NodeId, _ settings: ScanSettings, session: Session) -> Bool {
        let access = self.access
        let origin = Self.origin(session)
        let duration = settings.duration.isFinite && settings.duration > 0 ? settings.duration / 1000 : nil
        let rounds = settings.cycles > 0 ? Int(settings.cycles) : nil
        return lock.withLock { () -> Bool in
            guard scanning[reader] == nil, !scanningOnce.contains(reader) else { return false }
            nextToken &+= 1
            let token = nextToken
            let task = Task(executorPreference: ServerCore.methodExecutor) { [self] in
                let start = clock()
                var round = 0
                var present = Set<UID>()
                // It ends with the session that started it too (OPC 30010 §6.1.3.5).
                while !Task.isCancelled, !session.isClosed {
                    if let rounds, round >= rounds { break }
                    if let duration, clock().timeIntervalSince(start) >= duration { break }
                    let result = await access.scan(reader: reader, origin: round == 0 ? origin : nil)
                    round += 1
                    guard case .success(let uids) = result else { break }
                    let now = clock()
                    for uid in uids where !present.contains(uid) {
                        post(Self.scanEvent(reader, device, uid, now))
                    }
                    present = Set(uids)
                    if settings.dataAvailable, !uids.isEmpty { break }
                    await pause(.milliseconds(250))
                }
                lock.withLock {
                    if scanning[reader]?.token == token { scanning[reader] = nil }
                }
            }
            scanning[reader] = (token, task)
            return true
        }
    }

    /// A tag seen: CodeType `UID`, its UID as a ByteString most significant byte first, the reader as antenna 1 (an
    /// HF reader reports no strength).
    static func scanResult(_ uid: UID, _ time: Date) -> RfidScanResult {
        RfidScanResult(
            codeType: "UID", scanData: .byteString(uid.displayBytes), timestamp: DateTime(time),
            sighting: [RfidSighting(antenna: 1, strength: 0, timestamp: DateTime(time))])
    }

    /// An RfidScanEventType event (OPC 30010 §7.3): the device's name and the tag as one RfidScanResult.
    static func scanEvent(_ reader: String, _ device: NodeId, _ uid: UID, _ time: Date) -> ServerEvent {
        let result = scanResult(uid, time)
        return ServerEvent(
            eventType: rfidScanEventType, sourceNode: device, sourceName: reader, time: time,
            message: "\(uid) seen by \(reader)", severity: 100,
            fields: [
                "DeviceName": .scalar(.string(reader)),
                "ScanResult": .array(.extensionObject, [.extensionObject(result.extensionObject)]),
            ])
    }

    // MARK: Accesses

    /// What a client did last with a reader (LastAccess), one value under one lock: a PLC that triggers on the
    /// timestamp reads the other members of the same access.
    struct LastAccess {
        var client = ""
        var command = ""
        var identifier: [UInt8] = []
        var status: Int32 = 0
        var time: Date?
    }
    private var last: [String: LastAccess] = [:]

    func lastAccess(_ reader: String) -> LastAccess { lock.withLock { last[reader] ?? LastAccess() } }

    /// An access done: LastAccess, and an RfidAccessEventType event from the device (OPC 30010 §7.6: Client,
    /// Command, AccessResult).
    func accessed(_ reader: String, _ device: NodeId, _ command: String, _ uid: UID, _ origin: String, _ status: Status)
    {
        let now = clock()
        lock.withLock {
            last[reader] = LastAccess(
                client: origin, command: command, identifier: uid.displayBytes, status: status.rawValue, time: now)
        }
        let result = RfidAccessResult(
            codeType: "UID", identifier: .byteString(uid.displayBytes), timestamp: DateTime(now), antenna: 1)
        post(
            ServerEvent(
                eventType: Self.rfidAccessEventType, sourceNode: device, sourceName: reader, time: now,
                message: "\(command) \(uid) from \(origin): \(status)", severity: status == .success ? 100 : 500,
                fields: [
                    "Client": .scalar(.string(origin)), "Command": .scalar(.string(command)),
                    "AccessResult": .array(.extensionObject, [.extensionObject(result.extensionObject)]),
                ]))
    }

    /// AutoID's event types (OPC 30010 §7, i=1006 and i=1016 in its NodeSet), in the server's namespace 3.
    static let rfidScanEventType = NodeId(1006, namespace: 3)
    static let rfidAccessEventType = NodeId(1016, namespace: 3)

    // MARK: Arguments and answers

    /// An access's data (empty when it failed) and AutoID status.
    static func outcome<T>(_ r: Result<T, FieldAccessError>, write: Bool) -> (T?, Status) {
        switch r {
        case .success(let v): return (v, .success)
        case .failure(let e): return (nil, code(e, write: write))
        }
    }

    /// Who called, as the store's origin: `opcua:` and the client's ApplicationUri (else its session's name), with
    /// the user where it logged in as one.
    static func origin(_ s: Session) -> String {
        var o = "opcua:" + (s.clientApplicationUri.flatMap { $0.isEmpty ? nil : $0 } ?? s.name)
        if let user = s.user { o += " (\(user))" }
        return String(o.prefix(200))
    }

    static func status(_ s: Status) -> Variant { .scalar(.int32(s.rawValue)) }

    /// A UID as a ByteString of 8 bytes, most significant first (as LastScanData gives it), or 16 hex digits.
    static func uid(_ v: Variant) -> UID? {
        switch v {
        case .scalar(.byteString(let b?)) where b.count == 8: return try? UID(displayBytes: b)
        case .scalar(.string(let s?)) where s.utf8.count <= 64: return try? UID(parsing: s)
        default: return nil
        }
    }

    /// A structure argument of an AutoID type. Its type id names the type's encoding in the server's AutoID
    /// namespace; one whose namespace index is not in the server's table at all (so it names nothing else here) but
    /// whose number is the encoding's is taken as it too: o6 2.2.0 (open62541) sends its own index of the AutoID
    /// model there (65525) instead of the server's (docs/opcua.md, "Tested against").
    func structure<T: Structure>(_ e: ExtensionObject) -> T? {
        if let v = try? T(e) { return v }
        guard e.typeId.namespace >= space.namespaces.count, e.typeId.identifier == T.binaryEncodingId.identifier,
            case .binary(let body) = e.body
        else { return nil }
        return try? T.decode(body, limits: .server)
    }

    /// ReadTag's and WriteTag's first four arguments (of six): the UID, Region and Offset (nil: a code type other than
    /// UID).
    func tagArguments(_ a: [Variant]) -> Result<(UID, UInt16, UInt32)?, MethodTable.MethodFailure> {
        let uid: UID
        switch identifier(a, count: 6) {
        case .failure(let f): return .failure(f)
        case .success(.none): return .success(nil)
        case .success(.some(let u)): uid = u
        }
        guard case .scalar(.uInt16(let region)) = a[2] else { return .failure(.argument(2, of: 6)) }
        guard case .scalar(.uInt32(let offset)) = a[3] else { return .failure(.argument(3, of: 6)) }
        return .success((uid, region, offset))
    }

    /// ReadTag's and WriteTag's Identifier and CodeType: the UID (nil: a code type other than UID).
    func identifier(_ a: [Variant], count: Int) -> Result<UID?, MethodTable.MethodFailure> {
        guard case .scalar(.extensionObject(let e)) = a[0], let data: ScanData = structure(e) else {
            return .failure(.argument(0, of: count))
        }
        guard case .scalar(.string(let code)) = a[1] else { return .failure(.argument(1, of: count)) }
        guard (code ?? "UID").uppercased() == "UID" else { return .success(nil) }
        let uid: UID?
        switch data {
        case .byteString(let b): uid = Self.uid(.scalar(.byteString(b)))
        case .string(let s): uid = Self.uid(.scalar(.string(s)))
        default: uid = nil
        }
        guard let uid else { return .failure(.argument(0, of: count)) }
        return .success(uid)
    }

    /// A call's `Password` (docs/opcua.md, "Passwords"): none (null, or an empty ByteString), or a password for the
    /// blocks a tag's password protects (`TagPassword`: checked against the secrets file, never shown). Longer than
    /// any chip's (an ST25DV's is 8 bytes) is a password error before the air; another type is a wrong argument.
    static func password(_ v: Variant, argument: Int, of count: Int) -> PasswordArgument {
        switch v {
        case .null, .scalar(.byteString(nil)): return .password(nil)
        case .scalar(.byteString(let p?)):
            if p.isEmpty { return .password(nil) }
            return p.count <= 32 ? .password(TagPassword(p)) : .status(.password_error)
        default: return .failure(.argument(argument, of: count))
        }
    }

    /// What a call's `Password` argument comes to.
    enum PasswordArgument {
        case password(TagPassword?)
        /// Answered with this status, before the air.
        case status(Status)
        case failure(MethodTable.MethodFailure)
    }

    /// An access error's AutoID status (OPC 30010 §9.1.1).
    static func code(_ e: FieldAccessError, write: Bool) -> Status {
        switch e.kind {
        case .noReader: return .device_fault
        case .readerDown, .busy: return .device_not_ready
        case .notInField: return .no_identifier
        case .outOfRange: return .out_of_range_error
        case .locked: return .permisson_error
        case .password: return .password_error
        case .noAnswer: return .rf_communication_error
        case .tagError: return write ? .write_error : .read_error
        case .invalid: return .op_not_possible_error
        case .failed: return .write_error
        }
    }

    /// Scan's settings: an inventory, repeated for `Cycles` rounds or until `Duration` (ms) passes, stopping at the
    /// first round that finds a tag when `DataAvailable`; at most 10 s and 1,000 rounds in all. Each UID once, with
    /// when it was first seen.
    func scan(_ access: any FieldAccess, _ reader: String, _ s: ScanSettings, origin: String) async -> Result<
        [(UID, Date)], FieldAccessError
    > {
        let start = Date()
        let duration = s.duration.isFinite && s.duration > 0 ? min(s.duration, 10_000) / 1000 : 0
        let rounds = s.cycles > 0 ? min(Int(s.cycles), 1_000) : 1_000
        var found: [(UID, Date)] = []
        var seen = Set<UID>()
        for round in 0..<rounds {
            // Rounds 50 ms apart: the reader's own cycles go on between them.
            if round > 0 { await pause(.milliseconds(50)) }
            // The first round is the client's Scan in the store; the rest are its rounds.
            switch await access.scan(reader: reader, origin: round == 0 ? origin : nil) {
            case .success(let uids):
                let now = Date()
                for u in uids where seen.insert(u).inserted { found.append((u, now)) }
            case .failure(let e): if found.isEmpty { return .failure(e) } else { return .success(found) }
            }
            if s.dataAvailable, !found.isEmpty { break }
            if Date().timeIntervalSince(start) >= (duration > 0 ? duration : 10) { break }
        }
        return .success(found)
    }
}
