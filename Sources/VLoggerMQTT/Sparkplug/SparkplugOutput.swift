import Foundation
import Logging
import VLoggerConfig
import VLoggerOutbox
import VLoggerModel
import VLoggerStore

/// A Sparkplug B 3.0 edge node as an output (`[[output.mqtt]]` with `sparkplug = true`; docs/integrating.md): the
/// gateway is the edge node, each tag a device — named by its asset id where the register has one, else by its
/// UID — so that a device's `Field/temperature` is one sensor's, whichever reader read it (the reader and location
/// are the device's `Properties/Reader` and `Properties/Location`). The store's readings and events leave as DDATA
/// of their tag (NDATA for events of no tag), several per message, each metric stamped with the row's own time and
/// without its datatype (the birth says it); rows taken more than 10 s before this connection's NBIRTH (a backlog
/// while the broker or the primary host was away) are marked `is_historical`. Each reader's state is the node's
/// `Reader/<id>/Up`.
///
/// The session, after docs/reference/sparkplug-b.md: every CONNECT carries the Will NDEATH with `bdSeq` (one more
/// per connection, 255 then 0, kept in a file beside the store across restarts); on connect the node subscribes
/// to its NCMD topic, then (with a primary host: once its STATE says online) publishes NBIRTH (`seq` 0, `bdSeq`
/// as in the Will, `Node Control/Rebirth`, each reader's state) and a DBIRTH per tag it knows (those the store has
/// seen lately, and those seen since the start), each declaring every field the plans can give, null until read,
/// with its unit; a tag first seen later is born before its first data. A reader that fails or works again is an
/// NDATA of `Reader/<id>/Up`. An NCMD `Node Control/Rebirth = true` republishes the births. A STATE of the
/// primary host saying offline makes the node publish NDEATH, disconnect and start over; rows stay in the store
/// meanwhile. Data messages go at QoS 0, as the specification has them: a batch counts as delivered when
/// libmosquitto has written it to the connection.
public final class SparkplugOutput: OutboxConsumer, @unchecked Sendable {
    public let settings: MQTTSettings
    public let gateway: String
    let sparkplug: MQTTSettings.Sparkplug
    let topics: SparkplugTopics
    let client: MQTTClient
    let logger: Logger
    let readers: [(id: String, location: String?)]
    /// Which readers work now (by id); a reader it does not name counts as working.
    let readerUp: @Sendable () -> [String: Bool]
    /// The fields every device declares in its birth (the configuration's plans').
    let declared: [SparkplugField]
    /// The tags the store knows (seen lately), born with the node.
    let knownDevices: @Sendable () -> [SparkplugDevice]
    let now: @Sendable () -> Millis
    /// Where the last connection's `bdSeq` is kept (nil: not kept).
    let bdSeqFile: URL?
    let jsonFields = TableDescription.jsonFields
    /// A probe (`vlogger outputs status`): a client id of its own, no Will, no births: it connects and says
    /// nothing (the edge node the service runs is not disturbed).
    let probe: Bool

    private let lock = NSLock()
    /// The `bdSeq` of the last connection the broker accepted, and the one the Will of the next CONNECT carries.
    private var bdSeq: SparkplugBirthDeathSequence
    private var pendingBdSeq: UInt64 = 0
    private var seq = SparkplugSequence()
    /// NBIRTH is out on this connection.
    private var born = false
    /// When this connection's first NBIRTH went out: rows from before it are historical.
    private var bornAt: Millis = .max
    /// Devices with a DBIRTH out on this connection.
    private var alive: Set<String> = []
    /// The devices seen since the start (by id), with where each was last read, and when each was last seen: born
    /// again with every NBIRTH while seen within `deviceWindowMs` (at most `deviceLimit`, the latest).
    private var devices: [String: SparkplugDevice] = [:]
    private var deviceSeen: [String: Millis] = [:]
    /// Each tag's device id (by UID): a tag that gets an asset id in the register moves to a device of that name,
    /// and its old device dies.
    private var deviceOfUID: [String: String] = [:]
    static let deviceWindowMs: Millis = 30 * 86_400_000
    static let deviceLimit = 1000
    /// Fields a device's data carried that the plans do not declare (a reload added a plan): declared from then on,
    /// for every device (each born again before data that has one).
    private var extraFields: [SparkplugField] = []
    /// How many fields each device's last birth declared.
    private var fieldsAtBirth: [String: Int] = [:]
    /// Each reader's up state as the node last said it (NBIRTH or NDATA).
    private var saidUp: [String: Bool] = [:]
    /// The primary host's last STATE.
    private var host: (online: Bool, timestamp: Int64)?
    /// When the last rebirth an NCMD asked for was made (debounced to `rebirthIntervalMs`).
    private var lastRebirth: Millis?
    /// Messages ignored since the last line about them, by what was wrong, and when that line was written: logged
    /// at most once a minute with a count.
    private var ignored: [String: Int] = [:]
    private var ignoredLogged: [String: Millis] = [:]
    /// The primary host went offline: NDEATH is out; the next round connects afresh.
    private var startOver = false

    public var name: String { settings.name }
    public var title: String {
        "Sparkplug B to \(URLRedaction.redact(settings.url)) (group \(sparkplug.group), edge node \(topics.edgeNode))"
    }
    public var tables: [SyncTable] { settings.publish }
    public var batchSize: Int { settings.batchSize }
    public var tablesIndependent: Bool { true }
    public var isConnected: Bool? { client.isConnected }
    public var replayRowsPerSecond: Int? { settings.replayRate }

    public init(
        settings: MQTTSettings, gateway: String, readers: [(id: String, location: String?)] = [],
        readerUp: @escaping @Sendable () -> [String: Bool] = { [:] }, fields: [FieldInfo] = [],
        devices: @escaping @Sendable () -> [SparkplugDevice] = { [] }, bdSeqFile: URL? = nil, probe: Bool = false,
        now: @escaping @Sendable () -> Millis = { Millis.now() }, logger: Logger = Logger(label: "vlogger.sparkplug")
    ) throws {
        self.declared = SparkplugField.declared(fields)
        self.knownDevices = devices
        let sp = settings.sparkplug ?? MQTTSettings.Sparkplug()
        self.settings = settings
        self.gateway = gateway
        self.sparkplug = sp
        self.topics = SparkplugTopics(group: sp.group, edgeNode: sp.edgeNode ?? MQTTOutput.level(gateway))
        self.readers = readers
        self.readerUp = readerUp
        self.bdSeqFile = probe ? nil : bdSeqFile
        self.probe = probe
        self.now = now
        self.logger = logger
        bdSeq = SparkplugBirthDeathSequence(start: bdSeqFile.flatMap(Self.readBdSeq))
        let rotating: RotatingSecret
        do { rotating = try settings.rotatingPassword() } catch {
            throw MQTTError(kind: .auth, message: "\(error)")
        }
        // Sparkplug 3.0: a clean session (MQTT 3.1.1) or clean start (MQTT 5), whatever clean-session says.
        client = try MQTTClient(
            .init(
                host: settings.host, port: settings.port,
                clientID: (settings.clientID ?? "vlogger-\(gateway)-\(settings.name)")
                    + (probe ? "-check-\(getpid())" : ""), cleanSession: true,
                keepAliveSeconds: settings.keepAliveSeconds,
                protocolVersion: settings.protocolVersion == .v5 ? 5 : 4, username: settings.username,
                password: rotating.current, passwordSource: { rotating.current }, tls: settings.tls,
                caFile: settings.caFile, certFile: settings.certFile,
                keyFile: settings.keyFile, will: nil, inflight: max(20, settings.batchSize)))
        if probe { return }
        client.nextWill = { [weak self] in
            self?.will() ?? MQTTClient.Will(topic: "", payload: [])
        }
        client.onConnect = { [weak self] c in self?.connected(c) }
        client.onMessage = { [weak self] _, topic, payload, _ in self?.received(topic, payload) }
    }

    // MARK: Session

    /// The Will of the next CONNECT: NDEATH with the next `bdSeq` (taken when the broker accepts the connection).
    private func will() -> MQTTClient.Will {
        let n: UInt64 = lock.withLock {
            var next = bdSeq
            pendingBdSeq = next.advance()
            return pendingBdSeq
        }
        return MQTTClient.Will(
            topic: topics.topic(.ndeath), payload: SparkplugPayloads.death(bdSeq: n, at: now()), qos: 1, retain: false)
    }

    /// On the network thread, each time the broker accepts a connection: NCMD (and STATE) subscribed first, then
    /// the births unless a primary host must say it is online.
    private func connected(_ c: MQTTClient) {
        let n: UInt64 = lock.withLock {
            born = false
            alive = []
            bornAt = .max
            bdSeq = SparkplugBirthDeathSequence(start: pendingBdSeq)
            return pendingBdSeq
        }
        if let file = bdSeqFile { Self.writeBdSeq(n, to: file, logger: logger) }
        do {
            try c.subscribe(topics.topic(.ncmd), qos: 1)
            if let h = sparkplug.primaryHost {
                try c.subscribe(SparkplugTopics.state(host: h), qos: 1)
                return
            }
        } catch {
            logger.warning("Sparkplug: \(error)")
        }
        births(reason: nil)
    }

    /// NBIRTH (with each reader's state) and a DBIRTH per known tag (`seq` starts again at 0).
    private func births(reason: String?) {
        // The store's tags are read outside the lock (a query); those seen since the start know their reader.
        let known = knownDevices()
        lock.withLock {
            guard let n = bdSeq.current else { return }
            let t = now()
            do {
                let up = readerUp()
                let states = readers.map { r in (r.id, r.location, up[r.id] != false) }
                try sendLocked(
                    .nbirth, device: nil,
                    SparkplugPayloads.nodeBirth(bdSeq: n, gateway: gateway, readers: states, at: t), at: t)
                for (id, _, isUp) in states { saidUp[id] = isUp }
                if !born { bornAt = t }
                born = true
                alive = []
                for d in known where devices[d.id] == nil {
                    devices[d.id] = d
                    deviceSeen[d.id] = deviceSeen[d.id] ?? t
                }
                // Tags not seen for the window are born no more (a gate sees thousands of pallets a week); the rest
                // at most the latest `deviceLimit`.
                let kept = deviceSeen.filter { $0.value >= t - Self.deviceWindowMs }.sorted { $0.value > $1.value }
                    .prefix(Self.deviceLimit).map(\.key)
                let keep = Set(kept)
                for id in devices.keys where !keep.contains(id) {
                    devices[id] = nil
                    deviceSeen[id] = nil
                }
                deviceOfUID = deviceOfUID.filter { keep.contains($0.value) }
                for id in devices.keys.sorted() {
                    guard let d = devices[id] else { continue }
                    try birthLocked(d, at: t)
                }
            } catch {
                logger.warning("Sparkplug: the births did not go out: \(error)")
            }
        }
        if let reason { logger.notice("Sparkplug: births published again (\(reason))") }
    }

    private func birthLocked(_ device: SparkplugDevice, at t: Millis) throws(MQTTError) {
        try sendLocked(
            .dbirth, device: device.id,
            SparkplugPayloads.deviceBirth(device, fields: declared + extraFields, at: t), at: t)
        alive.insert(device.id)
        fieldsAtBirth[device.id] = declared.count + extraFields.count
    }

    /// Publishes one message of the node (not NDEATH, which has no `seq`); the `seq` it takes and the order it goes out in are one step (under
    /// the lock), so the numbers on the wire count up.
    private func sendLocked(
        _ type: SparkplugMessageType, device: String?, _ metrics: [SparkplugMetric], at t: Millis
    ) throws(MQTTError) {
        let s = type == .nbirth ? seq.birth() : seq.take()
        let payload = SparkplugPayloads.encode(
            timestamp: t, seq: s, birth: type == .nbirth || type == .dbirth, metrics)
        _ = try client.publish(topic: topics.topic(type, device: device), payload: payload, qos: 0, retain: false)
    }

    /// On the network thread: a rebirth request (NCMD), or the primary host's STATE.
    private func received(_ topic: String, _ payload: [UInt8]) {
        let t = now()
        if topic == topics.topic(.ncmd) {
            guard SparkplugPayloads.isRebirthRequest(payload) else {
                ignore("an NCMD that is not a rebirth request", at: t)
                return
            }
            let go: Bool = lock.withLock {
                let hostOffline = sparkplug.primaryHost != nil && host?.online != true
                // Debounced: one rebirth per interval, however many NCMD ask.
                if hostOffline { return false }
                if let last = lastRebirth, t - last < sparkplug.rebirthIntervalMs { return false }
                lastRebirth = t
                return true
            }
            if go {
                births(reason: "rebirth requested by NCMD")
            } else {
                ignore("a rebirth request within the rebirth interval", at: t)
            }
            return
        }
        guard let h = sparkplug.primaryHost, topic == SparkplugTopics.state(host: h) else { return }
        guard let state = SparkplugPayloads.hostState(payload) else {
            ignore("a STATE of \(h) that is not {\"online\": …, \"timestamp\": …}", at: t)
            return
        }
        // A STATE from the future (beyond the allowed skew) is not believed: taken, it would make the true host's
        // later STATE look older and silence the node until a restart.
        if state.timestamp > t + sparkplug.stateSkewMs {
            ignore(
                "a STATE of \(h) timestamped more than \(DurationText.format(sparkplug.stateSkewMs)) ahead of this gateway's clock",
                at: t)
            return
        }
        enum Step { case none, birth, death }
        let step: Step = lock.withLock {
            // An older STATE than the last one is stale (a retained copy of an earlier session).
            if let last = host, state.timestamp < last.timestamp { return .none }
            host = state
            if state.online { return born ? .none : .birth }
            guard born else { return .none }
            born = false
            startOver = true
            if let n = bdSeq.current {
                _ = try? client.publish(
                    topic: topics.topic(.ndeath), payload: SparkplugPayloads.death(bdSeq: n, at: now()), qos: 1,
                    retain: false)
            }
            return .death
        }
        switch step {
        case .none: break
        case .birth: births(reason: nil)
        case .death:
            client.disconnect()
            logger.warning("Sparkplug: primary host \(h) is offline; NDEATH published, starting over")
        }
    }

    /// Counts a message that was ignored; the first of a kind and then at most one line a minute for that kind say
    /// so, with the count since the last line.
    func ignore(_ what: String, at t: Millis) {
        let count: Int? = lock.withLock {
            ignored[what, default: 0] += 1
            if let last = ignoredLogged[what], t - last < 60_000 { return nil }
            if ignoredLogged.count > 100 { ignoredLogged.removeAll() }
            ignoredLogged[what] = t
            defer { ignored[what] = 0 }
            return ignored[what]
        }
        if let count { logger.warning("Sparkplug: ignored \(count) × \(what) (said at most once a minute)") }
    }

    public func withSession<T: Sendable>(_ body: (any OutboxSession) async throws -> T) async throws -> T {
        if lock.withLock({ startOver }) {
            // After NDEATH for an offline host: a fresh connection (the next bdSeq), then wait for it again.
            await client.reset()
            lock.withLock { startOver = false }
        }
        try await client.connect(within: .seconds(10))
        if probe { return try await body(Session(output: self)) }
        if let h = sparkplug.primaryHost {
            // Its retained STATE comes right after the subscription: give it a moment.
            var waited = 0
            while !lock.withLock({ born }) && waited < 2000 {
                try await Task.sleep(for: .milliseconds(20))
                waited += 20
            }
            guard lock.withLock({ born }) else {
                throw OutboxFailure(
                    kind: "host-offline",
                    message:
                        "the primary host \(h) has not said it is online (spBv1.0/STATE/\(h))")
            }
        }
        try reconcile()
        return try await body(Session(output: self))
    }

    func reconcile() throws(MQTTError) {
        lock.lock()
        defer { lock.unlock() }
        try reconcileLocked()
    }

    /// An NDATA of `Reader/<id>/Up` for each reader whose state changed since the node last said it.
    private func reconcileLocked() throws(MQTTError) {
        guard born else { return }
        let up = readerUp()
        let t = now()
        var changed: [SparkplugMetric] = []
        for r in readers {
            let works = up[r.id] != false
            if saidUp[r.id] != works {
                changed.append(SparkplugMetric(SparkplugPayloads.readerUp(r.id), .boolean, .boolean(works), at: t))
                saidUp[r.id] = works
            }
        }
        if !changed.isEmpty { try sendLocked(.ndata, device: nil, changed, at: t) }
    }

    public func describe(_ error: any Error) -> OutboxFailure { MQTTOutput.failure(error) }

    /// A clean leave: NDEATH published first (Sparkplug 3.0, intentional disconnect), then DISCONNECT.
    public func shutdown() async {
        if probe {
            await client.close(final: nil, timeout: .seconds(2))
            return
        }
        let death: [UInt8]? = lock.withLock {
            guard born, let n = bdSeq.current else { return nil }
            born = false
            return SparkplugPayloads.death(bdSeq: n, at: now())
        }
        await client.close(
            final: death.map { MQTTClient.Will(topic: topics.topic(.ndeath), payload: $0, qos: 1, retain: false) },
            timeout: .seconds(2))
    }

    // MARK: Data

    struct Session: OutboxSession {
        let output: SparkplugOutput

        func deliver(_ table: SyncTable, _ rows: [OutboxRow]) async throws -> Int {
            do {
                output.client.beginBatch()
                let n = try output.publishUnderLock(table, rows)
                try await output.client.awaitAcks(timeout: .seconds(30 + rows.count / 100))
                return n
            } catch {
                // Not all written: the next round sends the batch again from the cursor, on a fresh connection
                // (with new births).
                await output.client.reset()
                throw error
            }
        }
    }

    func publishUnderLock(_ table: SyncTable, _ rows: [OutboxRow]) throws(MQTTError) -> Int {
        lock.lock()
        defer { lock.unlock() }
        return try publishLocked(table, rows)
    }

    /// One message per device while its metrics stay distinct: a second row of the same tag at the same
    /// millisecond starts the next message, since a metric may appear twice in one message only with distinct
    /// timestamps. A tag not born on this connection is born first; a field no birth declared (a plan added by a
    /// reload) is declared from then on, and the devices with data that has it are born again before that data.
    private func publishLocked(_ table: SyncTable, _ rows: [OutboxRow]) throws(MQTTError) -> Int {
        guard born else {
            throw MQTTError(kind: .lost, message: "Sparkplug: no NBIRTH on this connection yet")
        }
        try reconcileLocked()
        var pending: [String?: (metrics: [SparkplugMetric], times: Set<Millis>)] = [:]
        var order: [String?] = []
        func flush(_ device: String?) throws(MQTTError) {
            guard let p = pending[device], !p.metrics.isEmpty else { return }
            pending[device] = nil
            order.removeAll { $0 == device }
            let t = now()
            if let device {
                try sendLocked(.ddata, device: device, p.metrics, at: t)
            } else {
                try sendLocked(.ndata, device: nil, p.metrics, at: t)
            }
        }
        let sent = now()
        let backlog = bornAt - Self.liveMs
        var batch: [(device: String?, time: Millis, metrics: [SparkplugMetric])] = []
        var known = Set((declared + extraFields).map(\.name))
        var types = Dictionary((declared + extraFields).map { ($0.name, $0.type) }, uniquingKeysWith: { a, _ in a })
        var grown = false
        // Devices whose tag moved to another device id in this batch: dead once their data is out.
        var moved = Set<String>()
        for row in rows where wanted(table, row) {
            var metrics = SparkplugPayloads.metrics(
                table, row, gateway: gateway, jsonFields: jsonFields, historical: row.time < backlog)
            guard let uid = row.value("uid", in: table).text else {
                batch.append((nil, row.time, metrics))
                continue
            }
            var device = SparkplugDevice(uid: uid, asset: row.value("asset_id", in: table).text)
            if let old = deviceOfUID[uid], old != device.id { moved.insert(old) }
            deviceOfUID[uid] = device.id
            deviceSeen[device.id] = max(deviceSeen[device.id] ?? row.time, row.time)
            let previous = devices[device.id]
            device.reader = row.value("reader", in: table).text ?? previous?.reader
            device.location = row.value("location", in: table).text ?? previous?.location
            if table != .readings, let previous {
                (device.reader, device.location) = (previous.reader, previous.location)
            }
            devices[device.id] = device
            // A field's value of another type than declared (text where the plan gives a number) stays in
            // Reading/JSON only: a host must never see a type other than the birth's.
            metrics.removeAll { m in
                guard m.name.hasPrefix("Field/") else { return false }
                let f = String(m.name.dropFirst(6))
                if !known.contains(f) {
                    known.insert(f)
                    types[f] = m.type
                    extraFields.append(SparkplugField(name: f, type: m.type, unit: nil))
                    grown = true
                    return false
                }
                return types[f] != m.type
            }
            batch.append((device.id, row.time, metrics))
        }
        if grown {
            logger.notice(
                "Sparkplug: fields no plan declared appeared (\(extraFields.map(\.name).joined(separator: ", "))); the devices with them are born again"
            )
        }
        // Born (again) where needed: not born on this connection, or born before a field was added.
        let count = declared.count + extraFields.count
        for id in Set(batch.compactMap(\.device)).sorted() where !alive.contains(id) || fieldsAtBirth[id] != count {
            guard let d = devices[id] else { continue }
            try birthLocked(d, at: sent)
        }
        var published = 0
        for (device, time, metrics) in batch {
            if pending[device]?.times.contains(time) == true || (pending[device]?.metrics.count ?? 0) >= 2000 {
                try flush(device)
            }
            if pending[device] == nil {
                pending[device] = ([], [])
                order.append(device)
            }
            pending[device]?.metrics += metrics
            pending[device]?.times.insert(time)
            published += 1
        }
        for device in order { try flush(device) }
        for old in moved.sorted() where !deviceOfUID.values.contains(old) {
            if alive.contains(old) { try sendLocked(.ddeath, device: old, [], at: now()) }
            alive.remove(old)
            devices[old] = nil
            deviceSeen[old] = nil
        }
        return published
    }

    func wanted(_ table: SyncTable, _ row: OutboxRow) -> Bool { MQTTOutput.wanted(settings, table, row) }

    /// How much older than this connection's NBIRTH a row must be to count as a backlog (`is_historical`): rows
    /// taken while the connection came up are live.
    static let liveMs: Millis = 10_000

    // MARK: bdSeq across restarts

    static func readBdSeq(_ file: URL) -> UInt64? {
        guard let data = try? Data(contentsOf: file), data.count <= 8,
            let n = UInt64(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)),
            n <= 255
        else { return nil }
        return n
    }

    static func writeBdSeq(_ n: UInt64, to file: URL, logger: Logger) {
        do {
            try Data("\(n)\n".utf8).write(to: file, options: .atomic)
        } catch {
            logger.warning("Sparkplug: cannot keep bdSeq in \(file.path): \(error)")
        }
    }
}
