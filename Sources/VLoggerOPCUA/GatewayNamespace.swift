import FieldState
import Foundation
import VLoggerOutbox
import ISO15693
import OPCUA
import OPCUAServer
import VLoggerModel
import VLoggerStore

/// The gateway's own namespace on the server (a small one; the AutoID model comes with issue 50): under Objects a
/// `Gateway` object with its readers (up, location, the tags in their field) and the tags in the fields now, each
/// with its latest decoded values; values are read from the field state when a client reads or samples them, and
/// tags come and go as they arrive and leave. Arrivals, departures and alarms are events of the Server object.
public final class GatewayNamespace: @unchecked Sendable {
    let space: AddressSpace
    let state: FieldState
    let ns: UInt16
    let post: @Sendable (ServerEvent) -> Void
    let version: String
    private let lock = NSLock()
    private var tagVariables: [UID: Set<String>] = [:]
    /// A value as the namespace last had it: when it was read (the reading's time on the tag, a sensor log's
    /// record time) and when it came here (staleness is judged by this one).
    struct Sample {
        var value: FieldState.Value
        var time: Millis
        var received: Date
        var reader: String?
    }
    /// Each tag's latest values (an asset's kept after its tag left, with a Bad status; another tag's forgotten).
    private var samples: [UID: [String: Sample]] = [:]
    /// The tags in a field now, and the reader that has each.
    private var present: [UID: String] = [:]
    /// Each reader's last value of each field, whichever tag it came from (the flat set a PLC reads).
    private var readerSamples: [String: [String: Sample]] = [:]
    private var readerVariables: [String: Set<String>] = [:]
    /// The register's assets by their tags' UIDs, and the value variables made under each.
    private let assets: [UID: AssetRow]
    private var assetVariables: [UID: Set<String>] = [:]
    /// A field's range (EURange) where a range rule gives both limits.
    private let ranges: [String: (low: Double, high: Double)]
    let clock: @Sendable () -> Date
    /// Where the field state's changes are applied, in order.
    private let queue = DispatchQueue(label: "vlogger.opcua.namespace")
    /// Each reader's last tag to arrive and when (its device's LastScanData and LastScanTimestamp).
    private var lastScan: [String: (uid: UID, time: Millis)] = [:]

    /// The register's assets shown at most (each is seven nodes and more).
    static let maxAssets = 20_000
    static let baseObjectType = NodeId(58)
    static let folderType = NodeId(61)
    static let baseDataVariableType = NodeId(63)
    static let propertyType = NodeId(68)

    /// The readers' methods (nil: the devices have none, as without a running service).
    let methods: ReaderMethods?
    /// The rules' violations as alarm conditions (nil without a method table: plain events then).
    let conditions: AlarmConditions?

    public init(
        space: AddressSpace, state: FieldState, gateway: String, site: String?, version: String = "",
        methods: MethodTable? = nil, access: (any FieldAccess)? = nil, rules: [AlarmRule] = [],
        acknowledge: (@Sendable (AlarmAcknowledgement) -> Bool)? = nil, assets: [AssetRow] = [],
        allowLock: Bool = false,
        clock: @escaping @Sendable () -> Date = { Date() },
        scanPause: @escaping @Sendable (Duration) async -> Void = { try? await Task.sleep(for: $0) },
        post: @escaping @Sendable (ServerEvent) -> Void
    ) {
        self.space = space
        self.state = state
        self.post = post
        self.version = version
        self.clock = clock
        self.assets = Dictionary(
            assets.prefix(Self.maxAssets).map { ($0.uid, $0) }, uniquingKeysWith: { a, _ in a })
        var ranges: [String: (low: Double, high: Double)] = [:]
        for r in rules {
            if let f = r.field, let low = r.low, let high = r.high, low <= high, ranges[f] == nil {
                ranges[f] = (low, high)
            }
        }
        self.ranges = ranges
        let ns = space.namespace("urn:vlogger:gateway:\(gateway)")
        self.ns = ns
        if let methods, let access {
            self.methods = ReaderMethods(
                space: space, methods: methods, access: access, ns: ns, post: post, pause: scanPause,
                allowLock: allowLock)
        } else {
            self.methods = nil
        }
        if let methods {
            conditions = AlarmConditions(
                space: space, methods: methods, ns: ns, rules: rules, record: acknowledge,
                id: { NodeId(namespace: ns, .string($0)) }, post: post)
        } else {
            conditions = nil
        }
        object(
            id("Gateway"), "Gateway", parent: NodeId(85), reference: ReferenceTypeIds.organizes,
            type: Self.baseObjectType)
        variable(
            id("Gateway/GatewayId"), "GatewayId", parent: id("Gateway"), type: 12, value: .scalar(.string(gateway)))
        variable(id("Gateway/Site"), "Site", parent: id("Gateway"), type: 12, value: .scalar(.string(site ?? "")))
        variable(id("Gateway/ActiveAlarms"), "ActiveAlarms", parent: id("Gateway"), type: 7) { [state] in
            DataValue(value: .scalar(.uInt32(UInt32(clamping: state.alarms.count))))
        }
        object(
            id("Readers"), "Readers", parent: id("Gateway"), reference: ReferenceTypeIds.organizes,
            type: Self.folderType)
        object(id("Tags"), "Tags", parent: id("Gateway"), reference: ReferenceTypeIds.organizes, type: Self.folderType)
        object(
            id("Alarms"), "Alarms", parent: id("Gateway"), reference: ReferenceTypeIds.organizes, type: Self.folderType)
        object(
            id("Assets"), "Assets", parent: id("Gateway"), reference: ReferenceTypeIds.organizes, type: Self.folderType)
        for a in self.assets.values.sorted(by: { $0.assetID < $1.assetID }) { addAsset(a) }
        // The observer runs on the polling job's thread with the state's lock held: the change is applied on a
        // queue of its own, so nothing here waits for a lock a reader of the state may hold. The readers and tags
        // there now go on that queue first, taken under the same lock as the observation's start: no arrival or
        // departure falls between them, and none is applied before them.
        let queue = self.queue
        state.observe(
            from: { snapshot in queue.async { [self] in self.build(snapshot) } },
            { [weak self] change in
                guard let me = self else { return }
                queue.async { me.apply(change) }
            })
        queue.sync {}
    }

    /// Returns when the changes made to the field state before the call are applied.
    public func settled() { queue.sync {} }

    /// The readers and the tags in their fields as the state has them.
    private func build(_ snapshot: FieldState.Snapshot) {
        for r in snapshot.readers { addReader(r.id) }
        for r in snapshot.readers {
            lock.withLock {
                for uid in r.tags { present[uid] = r.id }
                // The tags already there when the server began: the last the reader found is its last scan, at its
                // last good poll (its arrival's own time is not kept).
                if let uid = r.tags.last, lastScan[r.id] == nil {
                    lastScan[r.id] = (uid, r.lastGoodPollMs ?? Millis(Date().timeIntervalSince1970 * 1000))
                }
            }
        }
        for (uid, v) in snapshot.values where snapshot.readers.contains(where: { $0.tags.contains(uid) }) {
            addTag(uid)
            took(v)
        }
        for a in snapshot.alarms { conditions?.raised(a, source: id("Tags/\(a.uid)")) }
    }

    /// The node id of a path in the gateway's namespace (`Tags/UID/NAME`).
    public func id(_ path: String) -> NodeId { NodeId(namespace: ns, .string(path)) }

    // MARK: Nodes

    private func object(_ nodeId: NodeId, _ name: String, parent: NodeId, reference: NodeId, type: NodeId) {
        var n = Node(id: nodeId, nodeClass: .object, browseName: QualifiedName(namespace: ns, name))
        n.eventNotifier = 0
        n.references = [
            Reference(reference, parent, forward: false), Reference(ReferenceTypeIds.hasTypeDefinition, type),
        ]
        space.add(n)
    }

    /// A variable of built-in type `type` (its DataType node is i=type), held or read from `source`.
    private func variable(
        _ nodeId: NodeId, _ name: String, parent: NodeId, type: UInt32, rank: Int32 = -1, value: Variant? = nil,
        typeDefinition: NodeId = GatewayNamespace.baseDataVariableType, properties: [NodeId] = [],
        source: (@Sendable () -> DataValue)? = nil
    ) {
        var n = Node(id: nodeId, nodeClass: .variable, browseName: QualifiedName(namespace: ns, name))
        n.dataType = NodeId(type)
        n.valueRank = rank
        n.accessLevel = Node.readable
        n.minimumSamplingInterval = 0
        n.value = value.map { DataValue(value: $0) }
        n.references =
            [
                Reference(ReferenceTypeIds.hasComponent, parent, forward: false),
                Reference(ReferenceTypeIds.hasTypeDefinition, typeDefinition),
            ] + properties.map { Reference(ReferenceTypeIds.hasProperty, $0) }
        // Its source first: a client that finds the node reads its value.
        if let source { space.setSource(nodeId, source) }
        space.add(n)
    }

    private func addReader(_ reader: String) {
        let base = "Readers/\(reader)"
        let state = self.state
        @Sendable func find() -> FieldState.Reader? { state.readers.first { $0.id == reader } }
        object(
            id(base), reader, parent: id("Readers"), reference: ReferenceTypeIds.organizes, type: Self.baseObjectType)
        variable(id(base + "/Up"), "Up", parent: id(base), type: 1) {
            find().map { DataValue(value: .scalar(.boolean($0.up))) } ?? DataValue(status: .badNoData)
        }
        variable(id(base + "/Location"), "Location", parent: id(base), type: 12) {
            find().map { DataValue(value: .scalar(.string($0.location ?? ""))) } ?? DataValue(status: .badNoData)
        }
        variable(id(base + "/TagsInField"), "TagsInField", parent: id(base), type: 7) {
            find().map { DataValue(value: .scalar(.uInt32(UInt32(clamping: $0.tags.count)))) }
                ?? DataValue(status: .badNoData)
        }
        variable(id(base + "/Uids"), "Uids", parent: id(base), type: 12, rank: 1) {
            find().map { DataValue(value: .array(.string, $0.tags.map { .string($0.description) })) }
                ?? DataValue(status: .badNoData)
        }
        // The flat set a PLC reads without structures (an S7-1500 reads no DataTypeDefinition): the last tag to
        // arrive as text and as bytes, and when.
        variable(id(base + "/LastUid"), "LastUid", parent: id(base), type: 12) { [weak self] in
            DataValue(value: .scalar(.string(self?.last(reader)?.uid.description ?? "")))
        }
        variable(id(base + "/LastUidBytes"), "LastUidBytes", parent: id(base), type: 15) { [weak self] in
            DataValue(value: .scalar(.byteString(self?.last(reader)?.uid.displayBytes ?? [])))
        }
        object(
            id(base + "/Values"), "Values", parent: id(base), reference: ReferenceTypeIds.organizes,
            type: Self.folderType)
        variable(id(base + "/LastScanTime"), "LastScanTime", parent: id(base), type: 13) { [weak self] in
            guard let scan = self?.last(reader) else { return DataValue() }
            return DataValue(value: .scalar(.dateTime(DateTime(millisecondsSince1970: scan.time))))
        }
        addDevice(reader, find: find)
    }

    /// An asset of the register as an object (`Assets/ID`, displayed with its name): its id, name, registered
    /// location and tag (as text and as bytes), whether the tag is in a field now and at which reader, and its
    /// values as they come (kept with a Bad status while the tag is away).
    private func addAsset(_ a: AssetRow) {
        let base = "Assets/\(a.assetID)"
        var n = Node(
            id: id(base), nodeClass: .object, browseName: QualifiedName(namespace: ns, a.assetID),
            displayName: LocalizedText(a.label()))
        n.eventNotifier = 0
        n.references = [
            Reference(ReferenceTypeIds.organizes, id("Assets"), forward: false),
            Reference(ReferenceTypeIds.hasTypeDefinition, Self.baseObjectType),
        ]
        space.add(n)
        variable(id(base + "/AssetId"), "AssetId", parent: id(base), type: 12, value: .scalar(.string(a.assetID)))
        variable(id(base + "/Name"), "Name", parent: id(base), type: 12, value: .scalar(.string(a.name ?? "")))
        variable(
            id(base + "/Location"), "Location", parent: id(base), type: 12, value: .scalar(.string(a.location ?? "")))
        variable(id(base + "/Uid"), "Uid", parent: id(base), type: 12, value: .scalar(.string(a.uid.description)))
        variable(
            id(base + "/UidBytes"), "UidBytes", parent: id(base), type: 15,
            value: .scalar(.byteString(a.uid.displayBytes)))
        let uid = a.uid
        variable(id(base + "/Present"), "Present", parent: id(base), type: 1) { [weak self] in
            DataValue(value: .scalar(.boolean(self?.lock.withLock { self?.present[uid] != nil } ?? false)))
        }
        variable(id(base + "/Reader"), "Reader", parent: id(base), type: 12) { [weak self] in
            DataValue(value: .scalar(.string(self?.lock.withLock { self?.present[uid] } ?? "")))
        }
    }

    /// The reader's last tag to arrive and when.
    private func last(_ reader: String) -> (uid: UID, time: Millis)? { lock.withLock { lastScan[reader] } }

    // MARK: AutoID devices

    /// AutoID's RfidReaderDeviceType (OPC 30010 §6.3, ns=1;i=1003 in its NodeSet) and DI's DeviceSet (OPC 10000-100
    /// §4.9, DI i=5001), in the server's namespaces 3 and 2.
    static let rfidReaderDeviceType = NodeId(1003, namespace: 3)
    static let deviceSet = NodeId(5001, namespace: 2)

    /// The reader as an RfidReaderDeviceType under DeviceSet (`DeviceSet/ID`): DI's mandatory device properties,
    /// AutoID's DeviceName, AutoIdModelVersion and DeviceStatus (Idle while the reader answers, Error while it does
    /// not), and the optional DeviceLocationName, LastScanData (the UID of the last tag to arrive, as a ByteString,
    /// most significant byte first), LastScanTimestamp, ScanActive, Diagnostics/Presence (the tags in the field)
    /// and RuntimeParameters' TagTypes and CodeTypes; with a field access, the methods (`ReaderMethods`).
    private func addDevice(_ reader: String, find: @escaping @Sendable () -> FieldState.Reader?) {
        let base = "DeviceSet/\(reader)"
        let made = space.instantiate(
            type: Self.rfidReaderDeviceType, id: id(base), browseName: QualifiedName(namespace: ns, reader),
            parent: Self.deviceSet, reference: ReferenceTypeIds.hasComponent,
            optional: Set([
                "DeviceLocationName", "LastScanData", "LastScanTimestamp", "ScanActive", "Diagnostics",
                "Diagnostics/Presence", "RuntimeParameters", "RuntimeParameters/TagTypes",
                "RuntimeParameters/CodeTypes",
            ]).union(methods?.methodNames ?? []),
            childId: { self.id("\(base)/\($0)") })
        // The device reports its scans and accesses (AutoID's events): a client may subscribe to it.
        if var node = space.node(id(base)) {
            node.eventNotifier = 1
            space.add(node)
        }
        func held(_ path: String, _ v: Variant) {
            if let node = made[path] { space.setValue(node, DataValue(value: v)) }
        }
        func source(_ path: String, _ f: @escaping @Sendable () -> DataValue) {
            if let node = made[path] { space.setSource(node, f) }
        }
        // DI's DeviceType (OPC 10000-100 §5.5.2): what vlogger knows of the device; the rest empty, not invented.
        held("Manufacturer", .scalar(.localizedText(LocalizedText(""))))
        held("ManufacturerUri", .scalar(.string("")))
        held("SerialNumber", .scalar(.string("")))
        held("HardwareRevision", .scalar(.string("")))
        held("DeviceRevision", .scalar(.string("")))
        held("DeviceManual", .scalar(.string("")))
        held("RevisionCounter", .scalar(.int32(0)))
        held("SoftwareRevision", .scalar(.string(version)))
        source("Model") { DataValue(value: .scalar(.localizedText(LocalizedText(find()?.name ?? "")))) }
        // AutoID's AutoIdDeviceType (OPC 30010 §6.2).
        held("DeviceName", .scalar(.string(reader)))
        held("AutoIdModelVersion", .scalar(.string("1.01")))
        source("ScanActive") { [weak self] in
            DataValue(value: .scalar(.boolean(self?.methods?.isScanning(reader) ?? false)))
        }
        if let methods {
            methods.register(reader: reader, device: id(base), made: made, id: id)
            // What a client did last (SIMATIC Ident's LastAccess, its OPC UA manual 02/2022 §3.3), one value read
            // whole: a PLC that triggers on Timestamp reads the client, command, identifier and status of that access.
            object(
                id(base + "/LastAccess"), "LastAccess", parent: id(base), reference: ReferenceTypeIds.hasComponent,
                type: Self.baseObjectType)
            let last = "\(base)/LastAccess"
            variable(id(last + "/Client"), "Client", parent: id(last), type: 12) {
                DataValue(value: .scalar(.string(methods.lastAccess(reader).client)))
            }
            variable(id(last + "/Command"), "Command", parent: id(last), type: 12) {
                DataValue(value: .scalar(.string(methods.lastAccess(reader).command)))
            }
            variable(id(last + "/Identifier"), "Identifier", parent: id(last), type: 15) {
                DataValue(value: .scalar(.byteString(methods.lastAccess(reader).identifier)))
            }
            variable(id(last + "/Status"), "Status", parent: id(last), type: 6) {
                DataValue(value: .scalar(.int32(methods.lastAccess(reader).status)))
            }
            variable(id(last + "/Timestamp"), "Timestamp", parent: id(last), type: 13) {
                guard let t = methods.lastAccess(reader).time else { return DataValue() }
                return DataValue(value: .scalar(.dateTime(DateTime(t))))
            }
        }
        source("DeviceStatus") {
            // DeviceStatusEnumeration: Idle 0, Error 1, Scanning 2, Busy 3.
            let scanning = self.methods?.isScanning(reader) == true
            return DataValue(value: .scalar(.int32(find()?.up == false ? 1 : scanning ? 2 : 0)))
        }
        source("DeviceLocationName") { DataValue(value: .scalar(.string(find()?.location ?? ""))) }
        // Presence as SIMATIC Ident readers give it (their OPC UA manual, 02/2022 §3.3): the tags in the field now.
        source("Diagnostics/Presence") {
            DataValue(value: .scalar(.uInt16(UInt16(clamping: find()?.tags.count ?? 0))))
        }
        // MultiStateDiscrete values index their EnumStrings: the tag type "ISO 15693" (OPC 30010 §6.5.3) and the
        // code type "UID" (§9.1.3), the only ones a vlogger reader has.
        held(
            "RuntimeParameters/TagTypes/EnumStrings",
            .array(.localizedText, [.localizedText(LocalizedText("ISO 15693"))]))
        held("RuntimeParameters/TagTypes", .array(.uInt32, [.uInt32(0)]))
        held("RuntimeParameters/CodeTypes/EnumStrings", .array(.localizedText, [.localizedText(LocalizedText("UID"))]))
        held("RuntimeParameters/CodeTypes", .array(.uInt32, [.uInt32(0)]))
        source("LastScanData") { [weak self] in
            guard let scan = self?.last(reader) else { return DataValue() }
            return DataValue(
                value: .scalar(.byteString(scan.uid.displayBytes)),
                sourceTimestamp: DateTime(millisecondsSince1970: scan.time))
        }
        source("LastScanTimestamp") { [weak self] in
            guard let scan = self?.last(reader) else { return DataValue() }
            return DataValue(value: .scalar(.dateTime(DateTime(millisecondsSince1970: scan.time))))
        }
    }

    private func addTag(_ uid: UID) {
        let fresh = lock.withLock { () -> Bool in
            guard tagVariables[uid] == nil else { return false }
            tagVariables[uid] = []
            return true
        }
        guard fresh else { return }
        let base = "Tags/\(uid)"
        object(
            id(base), uid.description, parent: id("Tags"), reference: ReferenceTypeIds.organizes,
            type: Self.baseObjectType)
        variable(id(base + "/Uid"), "Uid", parent: id(base), type: 12, value: .scalar(.string(uid.description)))
        conditions?.attach(uid, source: id(base))
        let state = self.state
        variable(id(base + "/Reader"), "Reader", parent: id(base), type: 12) {
            DataValue(value: .scalar(.string(state.latestValues[uid]?.reader ?? "")))
        }
        variable(id(base + "/Asset"), "Asset", parent: id(base), type: 12) {
            DataValue(value: .scalar(.string(state.latestValues[uid]?.asset ?? "")))
        }
    }

    /// A reading's values: kept (for the tag, and as its reader's last of each field), and a variable made for each
    /// new one under the tag, its asset and its reader.
    private func took(_ v: FieldState.Values) {
        let now = clock()
        lock.withLock {
            for value in v.values {
                let sample = Sample(value: value, time: v.time, received: now, reader: v.reader)
                samples[v.uid, default: [:]][value.name] = sample
                if let r = v.reader { readerSamples[r, default: [:]][value.name] = sample }
            }
        }
        for value in v.values {
            let name = value.name
            let uid = v.uid
            if lock.withLock({ tagVariables[uid]?.insert(name).inserted ?? false }) {
                valueVariable(id("Tags/\(uid)/\(name)"), parent: id("Tags/\(uid)"), value) { [weak self] in
                    self?.tagValue(uid, $0) ?? DataValue(status: .badNoData)
                }
            }
            if let asset = assets[uid], lock.withLock({ assetVariables[uid, default: []].insert(name).inserted }) {
                valueVariable(id("Assets/\(asset.assetID)/\(name)"), parent: id("Assets/\(asset.assetID)"), value) {
                    [weak self] in self?.tagValue(uid, $0) ?? DataValue(status: .badNoData)
                }
            }
            if let reader = v.reader,
                lock.withLock({ readerVariables[reader, default: []].insert(name).inserted })
            {
                valueVariable(
                    id("Readers/\(reader)/Values/\(name)"), parent: id("Readers/\(reader)/Values"), value
                ) { [weak self] in
                    self?.readerValue(reader, $0) ?? DataValue(status: .badNoData)
                }
            }
        }
    }

    /// A tag's value `name` with its status: Good; Uncertain_LastUsableValue when it came longer ago than three of
    /// its reader's intervals (the plan's values are read once a cycle); Bad_NoCommunication while its reader fails;
    /// Bad_OutOfService once the tag left the field (the last value kept, an asset's only). The source timestamp
    /// is the reading's time on the tag (a sensor log's record time).
    private func tagValue(_ uid: UID, _ name: String) -> DataValue {
        let (sample, here) = lock.withLock { (samples[uid]?[name], present[uid] != nil) }
        return dataValue(sample, present: here)
    }

    private func readerValue(_ reader: String, _ name: String) -> DataValue {
        dataValue(lock.withLock { readerSamples[reader]?[name] }, present: true)
    }

    private func dataValue(_ sample: Sample?, present: Bool) -> DataValue {
        guard let sample else { return DataValue(status: .badWaitingForInitialData) }
        var status = StatusCode.good
        let reader = state.readers.first { $0.id == sample.reader }
        if reader?.up == false {
            status = .badNoCommunication
        } else if !present {
            status = .badOutOfService
        } else if clock().timeIntervalSince(sample.received) > 3 * Double(reader?.intervalMs ?? 1000) / 1000 {
            status = .uncertainLastUsableValue
        }
        return DataValue(
            value: .scalar(Self.scalar(sample.value.value)), status: status == .good ? nil : status,
            sourceTimestamp: DateTime(millisecondsSince1970: sample.time))
    }

    /// A value variable (its type from the value it had first: Int64, Double or String). A number with a unit the
    /// UNECE table knows is an AnalogUnitType (OPC 10000-8 §5.3.2.3) with its EngineeringUnits (§5.6.3), and its
    /// EURange (§5.6.2, a Range) where a range rule gives the field both limits: a SCADA shows °C and scales a bar,
    /// not a bare number. The properties are made first, so that the variable is whole when a client finds it.
    private func valueVariable(
        _ node: NodeId, parent: NodeId, _ first: FieldState.Value,
        source: @escaping @Sendable (String) -> DataValue
    ) {
        let name = first.name
        let type: UInt32
        switch first.value {
        case .integer: type = 8
        case .number: type = 11
        case .text, .json: type = 12
        }
        var properties: [NodeId] = []
        func property(_ browse: String, _ dataType: NodeId, _ value: ExtensionObject) {
            let pid = NodeId(namespace: ns, .string("\(Self.path(node))/\(browse)"))
            var p = Node(id: pid, nodeClass: .variable, browseName: QualifiedName(namespace: 0, browse))
            p.dataType = dataType
            p.valueRank = -1
            p.accessLevel = Node.readable
            p.minimumSamplingInterval = 0
            p.value = DataValue(value: .scalar(.extensionObject(value)))
            p.references = [
                Reference(ReferenceTypeIds.hasProperty, node, forward: false),
                Reference(ReferenceTypeIds.hasTypeDefinition, Self.propertyType),
            ]
            space.add(p)
            properties.append(pid)
        }
        if type != 12, let unit = first.unit.flatMap(EngineeringUnits.unit) {
            property("EngineeringUnits", EUInformation.dataTypeId, unit.information.extensionObject)
            if let r = ranges[name] {
                property("EURange", Self.rangeType, Range(low: r.low, high: r.high).extensionObject)
            }
        }
        variable(
            node, name, parent: parent, type: type,
            typeDefinition: properties.isEmpty ? Self.baseDataVariableType : Self.analogUnitType,
            properties: properties
        ) { source(name) }
    }

    /// Range (OPC 10000-8 §5.6.2, i=884).
    static let rangeType = NodeId(884)

    /// A node id's string path (`Tags/UID/NAME`).
    static func path(_ node: NodeId) -> String {
        if case .string(let s?) = node.identifier { return s }
        return "\(node)"
    }

    /// AnalogUnitType (OPC 10000-8 §5.3.2.3, i=17497).
    static let analogUnitType = NodeId(17497)

    static func scalar(_ v: FieldValue) -> Scalar {
        switch v {
        case .integer(let n): return .int64(n)
        case .number(let d): return .double(d)
        case .text(let s), .json(let s): return .string(s)
        }
    }

    private func removeTag(_ uid: UID) {
        guard let names = lock.withLock({ tagVariables.removeValue(forKey: uid) }) else { return }
        let base = "Tags/\(uid)"
        for n in names {
            space.remove(id("\(base)/\(n)/EngineeringUnits"))
            space.remove(id("\(base)/\(n)/EURange"))
            space.remove(id("\(base)/\(n)"))
        }
        for n in ["Uid", "Reader", "Asset"] { space.remove(id("\(base)/\(n)")) }
        space.remove(id(base))
    }

    // MARK: Changes

    private func apply(_ change: FieldState.Change) {
        switch change {
        case .arrived(let uid, let reader, let asset, let time):
            if let reader {
                lock.withLock { lastScan[reader] = (uid, time) }
                // AutoID's scan event from the reader's device too (OPC 30010 §5.3, option 3: the reader scans by
                // itself and reports what it finds): a client subscribed to the device hears every arrival.
                if methods != nil {
                    post(ReaderMethods.scanEvent(reader, id("DeviceSet/\(reader)"), uid, Self.date(time)))
                }
            }
            lock.withLock { present[uid] = reader ?? "" }
            addTag(uid)
            post(
                ServerEvent(
                    sourceNode: id("Tags/\(uid)"), sourceName: uid.description, time: Self.date(time),
                    message: "tag \(uid)\(asset.map { " (\($0))" } ?? "") arrived at reader \(reader ?? "?")",
                    severity: 100))
        case .departed(let uid, let reader, let time):
            lock.withLock {
                present[uid] = nil
                if assets[uid] == nil { samples[uid] = nil }
            }
            removeTag(uid)
            post(
                ServerEvent(
                    sourceNode: id("Tags/\(uid)"), sourceName: uid.description, time: Self.date(time),
                    message: "tag \(uid) left reader \(reader ?? "?")", severity: 100))
        case .values(let v):
            addTag(v.uid)
            took(v)
        case .alarm(let a) where conditions != nil:
            conditions?.raised(a, source: id("Tags/\(a.uid)"))
        case .alarmEnded(let rule, let uid, let time) where conditions != nil:
            conditions?.ended(rule: rule, uid: uid, time: time)
        case .alarmAcknowledged(let ack):
            conditions?.acknowledged(ack)
        case .alarm(let a):
            let severity: UInt16 = a.severity == .critical ? 900 : a.severity == .warning ? 600 : 300
            post(
                ServerEvent(
                    sourceNode: id("Tags/\(a.uid)"), sourceName: a.asset ?? a.uid.description, time: Self.date(a.since),
                    message: "alarm \(a.rule) on \(a.asset ?? a.uid.description): \(a.detail)", severity: severity))
        case .alarmEnded(let rule, let uid, let time):
            post(
                ServerEvent(
                    sourceNode: id("Tags/\(uid)"), sourceName: uid.description, time: Self.date(time),
                    message: "alarm \(rule) on \(uid) ended", severity: 300))
        case .reader, .overflow: break
        }
    }

    static func date(_ ms: Millis) -> Date { Date(timeIntervalSince1970: Double(ms) / 1000) }
}
