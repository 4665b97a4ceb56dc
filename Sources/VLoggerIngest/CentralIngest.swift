import Foundation
import Logging
import PostgresNIO
import VLoggerModel
import VLoggerStore
import VLoggerSync

/// `vlogger central ingest`: the central end of the MQTT fan-in. Gateways publish their rows with their MQTT
/// output (QoS 1) to a broker (NATS with JetStream, mosquitto, any MQTT 3.1.1 broker); this takes them from a
/// persistent QoS 1 session and writes them into the central PostgreSQL, in batches, each batch one transaction,
/// and acknowledges a batch's messages only after its commit. A row is keyed as the direct sync keys it, by
/// (gateway, local id) (tags by gateway and uid, the newer change kept), so a message the broker sends again after
/// a crash or a lost acknowledgement is refused by the key: every row once.
///
/// Messages that are not rows (a gateway's status, a tag's retained state, its instance announcement) are
/// acknowledged and counted as ignored; a row that cannot be read (damaged, or a table this version does not know)
/// is logged with its topic, acknowledged and counted as refused: it can never be stored, and keeping it would
/// stop every message behind it.
public final class CentralIngest: @unchecked Sendable {
    public struct Broker: Sendable, Equatable, CustomStringConvertible {
        public var host: String
        public var port: Int
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
        public var description: String { "mqtt://" + HostPort.text(host, port) }

        /// `mqtt://HOST[:PORT]` (1883 by default). `mqtts://` is refused: this subscriber speaks plain TCP only (put
        /// it next to the broker, or behind a TLS tunnel).
        public init(url text: String) throws(IngestError) {
            let t = text.trimmingCharacters(in: .whitespaces)
            if t.hasPrefix("mqtts://") {
                throw IngestError(
                    .settings,
                    "--broker \(t): TLS is not supported by the ingest's subscriber yet; use mqtt:// on a trusted network or a TLS tunnel"
                )
            }
            guard t.hasPrefix("mqtt://") else { throw IngestError(.settings, "--broker \(t): not mqtt://HOST:PORT") }
            var rest = Substring(t.dropFirst(7))
            if rest.hasSuffix("/") { rest = rest.dropLast() }
            guard !rest.isEmpty, !rest.contains("@"), !rest.contains("/"), !rest.contains("?") else {
                throw IngestError(
                    .settings, "--broker \(t): only mqtt://HOST:PORT (a user and password have options of their own)")
            }
            do {
                let (host, port) = try HostPort.parse(rest, defaultPort: 1883, what: "--broker \(t)")
                self.init(host: host, port: port)
            } catch { throw IngestError(.settings, error.message) }
        }
    }

    public struct Settings: Sendable {
        /// Brokers tried in turn (the nodes of a cluster): the one that worked last first.
        public var brokers: [Broker]
        /// The client id of the persistent session: the same at every start, or the broker keeps (and grows) the
        /// old session's messages and starts an empty one.
        public var clientID = "vlogger-central-ingest"
        public var filters = ["vlogger/#"]
        public var username: String?
        public var password: [UInt8]?
        public var keepAliveSeconds = 30
        /// Messages per transaction at most, and about as many rows (a batch also closes at 512 bytes of payload per
        /// row of it).
        public var batchSize = 5000
        /// A batch closes this long after its first message at the latest.
        public var lingerMs = 200
        public var central: SyncSettings
        public init(brokers: [Broker], central: SyncSettings) {
            self.brokers = brokers
            self.central = central
        }
    }

    /// What the ingest did, since it started.
    public struct Tally: Sendable, Equatable {
        public var messages = 0
        public var rows = 0
        /// Rows the central did not have (the rest were sent again: a crash or a lost acknowledgement).
        public var inserted = 0
        public var ignored = 0
        public var refused = 0
        public var batches = 0
        /// Connections to a broker or the database made again after a failure.
        public var reconnects = 0
        /// From the first message received to the last batch acknowledged (the time the ingest was busy, not
        /// the time it waited for messages), in seconds.
        public var busySeconds = 0.0
        public init() {}
    }

    public let settings: Settings
    let centralPassword: String?
    let logger: Logger
    let hosts = Syncer.HostPicker()
    private let lock = NSLock()
    private var tallyValue = Tally()
    public var tally: Tally { lock.withLock { tallyValue } }
    /// The central's `answer-timeout` (a statement unanswered that long closes the connection; the batch's
    /// messages stay unacknowledged, and the broker sends them again).
    var answerLimit: Duration { .milliseconds(settings.central.answerTimeoutMs) }

    public init(settings: Settings, centralPassword: String?, logger: Logger = Logger(label: "vlogger.ingest")) {
        self.settings = settings
        self.centralPassword = centralPassword
        self.logger = logger
    }

    /// Runs until `stop` says so (checked between batches) or, with `untilIdleMs`, until no message came for that
    /// long. Failures of the broker or the database are retried (the messages stay with the broker); only a
    /// refusal that will not change (a wrong password, no central schema) ends it with the error.
    public func run(untilIdleMs: Int? = nil, stop: @escaping @Sendable () -> Bool = { false }) async throws -> Tally {
        var conn: PostgresConnection?
        var subscriber: MQTTSubscriber?
        var nextBroker = 0
        var months = Set<CentralSchema.Month>()
        var delay = 0.25
        var lastMessage = Date()
        var failures = 0
        var firstMessage: ContinuousClock.Instant?
        var inFlight: InFlight?
        var hadSession = false
        defer {
            subscriber?.close(graceful: true)
            if let conn { Task { await Syncer.close(conn) } }
        }
        while !stop() {
            do {
                if conn == nil || conn?.isClosed == true {
                    if conn != nil { bump(\.reconnects) }
                    let c = try await Syncer.connect(
                        settings.central, password: centralPassword, logger: logger, start: hosts)
                    do {
                        let logger = self.logger
                        try await Syncer.untilClosed(c, limit: answerLimit) {
                            try await Syncer.requireSchema(c, logger)
                        }
                    } catch {
                        await Syncer.close(c)
                        throw error
                    }
                    conn = c
                    months = []
                }
                if subscriber?.isConnected != true {
                    if subscriber != nil { bump(\.reconnects) }
                    let (s, index) = try await connectBroker(from: nextBroker)
                    nextBroker = index
                    if hadSession && !s.sessionPresent {
                        logger.warning(
                            "ingest: \(settings.brokers[index]) had no session for \(settings.clientID): what was published while the ingest was away is not kept for it (a broker without persistence, or its session store lost)"
                        )
                    }
                    hadSession = true
                    subscriber = s
                    // `untilIdle` counts from here too: after a reconnection the broker sends what was not
                    // acknowledged again, which can take it a moment.
                    lastMessage = Date()
                    logger.info(
                        "ingest: subscribed to \(settings.filters.joined(separator: ", ")) at \(settings.brokers[index]) as \(settings.clientID)\(s.sessionPresent ? " (the broker kept the session)" : "")"
                    )
                }
                guard let c = conn, let s = subscriber else { continue }
                let (max, linger) = (settings.batchSize, settings.lingerMs)
                // The next batch comes in while the one before is written (the subscriber's thread and the
                // database's connection work at once); a batch is acknowledged only after its own commit, in order.
                // With a batch in hand, the next is waited for only briefly: the one in hand is acknowledged soon.
                let wait = inFlight == nil ? 500 : 20
                // Rows, not messages, are what a batch-size bounds: a message of `messages = "batch"` holds many, so
                // the payloads' bytes close a batch too (a reading's message is about 500 bytes).
                let batch = try await Self.offThread { () throws(IngestError) in
                    try s.receive(max: max, waitMs: wait, lingerMs: linger, maxBytes: max * 512)
                }
                if let f = inFlight {
                    inFlight = nil
                    let (inserted, known) = try await Self.awaitTending(f.write, s)
                    months = known
                    try await Self.offThread { () throws(IngestError) in try s.acknowledge(f.batch) }
                    count(f, inserted: inserted, since: firstMessage)
                    delay = 0.25
                    failures = 0
                }
                if batch.isEmpty {
                    if let idle = untilIdleMs, Date().timeIntervalSince(lastMessage) * 1000 >= Double(idle) { break }
                    continue
                }
                lastMessage = Date()
                if firstMessage == nil { firstMessage = ContinuousClock.now }
                let (rows, ignored, refused) = decode(batch)
                let known = months
                let write = Task { () async throws -> (Int, Set<CentralSchema.Month>) in
                    guard !rows.isEmpty else { return (0, known) }
                    var months = known
                    let times = rows[.readings]?.map(\.time) ?? []
                    if !times.isEmpty {
                        months = try await Syncer.untilClosed(c, limit: self.answerLimit) {
                            try await Syncer.ensurePartitions(c, times: times, known: known, logger: self.logger)
                        }
                    }
                    do {
                        return (
                            try await Syncer.untilClosed(c, limit: self.answerLimit) { try await self.write(rows, c) },
                            months
                        )
                    } catch let e as PSQLError where Self.isDataError(e) {
                        // A row the server refuses (bad JSON, a NUL, a missing value, too many for one statement)
                        // must not hold back every gateway's rows behind it: each message alone, and the ones
                        // refused are logged and acknowledged.
                        return (try await self.writeEach(batch, c, first: e), months)
                    }
                }
                inFlight = InFlight(
                    batch: batch, rows: rows.values.reduce(0) { $0 + $1.count }, ignored: ignored, refused: refused,
                    write: write)
            } catch {
                // The batches in hand were not acknowledged: the broker sends them again to the next connection.
                if let f = inFlight {
                    inFlight = nil
                    _ = try? await f.write.value
                }
                subscriber?.close(graceful: false)
                let fatal: Bool
                let text: String
                if let e = error as? IngestError {
                    fatal = e.kind == .settings || e.kind == .refused && e.message.contains("user name or password")
                    text = e.message
                    if e.kind == .connection || e.kind == .protocolError || e.kind == .refused {
                        nextBroker = (nextBroker + 1) % settings.brokers.count
                    }
                } else {
                    let e = SyncError.from(error, url: settings.central.url)
                    text = "the central database: " + e.message
                    fatal = text.contains("no central schema") || text.contains("password authentication failed")
                    if let c = conn { await Syncer.close(c) }
                    conn = nil
                }
                if fatal { throw IngestError(.settings, text) }
                failures += 1
                if failures == 1 || failures % 20 == 0 {
                    logger.warning("ingest: \(text); the messages stay with the broker, trying again")
                }
                if let idle = untilIdleMs, Date().timeIntervalSince(lastMessage) * 1000 >= Double(max(idle, 60_000)) {
                    throw IngestError(.connection, text)
                }
                try? await Task.sleep(for: .milliseconds(Int(delay * 1000)))
                delay = min(delay * 2, 5)
            }
        }
        // Stopped with a batch being written: its commit and acknowledgement before leaving (a failure leaves it
        // with the broker, which sends it again).
        if let f = inFlight, let s = subscriber, s.isConnected, let (inserted, _) = try? await f.write.value,
            (try? await Self.offThread({ () throws(IngestError) in try s.acknowledge(f.batch) })) != nil
        {
            count(f, inserted: inserted, since: firstMessage)
        }
        return tally
    }

    /// A batch received and being written, not yet acknowledged.
    struct InFlight {
        let batch: [MQTTWire.Publish]
        let rows: Int
        let ignored: Int
        let refused: Int
        let write: Task<(Int, Set<CentralSchema.Month>), any Error>
    }

    func count(_ f: InFlight, inserted: Int, since first: ContinuousClock.Instant?) {
        lock.withLock {
            tallyValue.messages += f.batch.count
            tallyValue.rows += f.rows
            tallyValue.inserted += inserted
            tallyValue.ignored += f.ignored
            tallyValue.refused += f.refused
            tallyValue.batches += 1
            if let first {
                let d = ContinuousClock.now - first
                tallyValue.busySeconds = Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
            }
        }
    }

    func bump(_ field: WritableKeyPath<Tally, Int>) { lock.withLock { tallyValue[keyPath: field] += 1 } }

    /// The first broker, from `from` on, that takes the connection and the subscription.
    func connectBroker(from: Int) async throws -> (MQTTSubscriber, Int) {
        var errors: [String] = []
        for k in 0..<settings.brokers.count {
            let i = (from + k) % settings.brokers.count
            let b = settings.brokers[i]
            var o = MQTTSubscriber.Options(host: b.host, port: b.port, clientID: settings.clientID)
            o.username = settings.username
            o.password = settings.password
            o.keepAliveSeconds = settings.keepAliveSeconds
            o.filters = settings.filters
            // The broker's window of unacknowledged messages decides how many a batch can take at once.
            let s = MQTTSubscriber(o)
            do {
                try await Self.offThread { () throws(IngestError) in try s.connect() }
                return (s, i)
            } catch let e as IngestError {
                if e.kind == .settings || e.message.contains("user name or password") { throw e }
                errors.append(e.message)
            }
        }
        throw IngestError(.connection, "no broker took the subscription (\(errors.joined(separator: "; ")))")
    }

    /// The batch's rows by table (a tag's newest change only), and the counts of messages that were not rows and
    /// of rows that could not be read.
    func decode(_ batch: [MQTTWire.Publish]) -> (rows: [SyncTable: [OutboxRow]], ignored: Int, refused: Int) {
        var rows: [SyncTable: [OutboxRow]] = [:]
        var ignored = 0
        var refused = 0
        for m in batch {
            let first = m.payload.first { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }
            guard first == 0x7B || first == 0x5B else {
                ignored += 1
                continue
            }
            for r in OutboxJSON.rows(from: m.payload) {
                switch r {
                case .success(let (table, row)): rows[table, default: []].append(row)
                case .failure(let e) where e.reason.hasPrefix("no 'table'") || e.reason.hasPrefix("no 'key'"):
                    ignored += 1
                case .failure(let e):
                    refused += 1
                    logger.warning(
                        "ingest: a message on \(m.topic) is not a row that can be stored (\(e.reason)); skipped")
                }
            }
        }
        if var tags = rows[.tags], tags.count > 1 {
            // One statement may not update a row twice: the newest change of each tag in the batch.
            let uid = SyncTable.tags.columns.firstIndex { $0.name == "uid" } ?? 0
            // Keyed by the bytes, as the server compares them (Swift's String equality is canonical equivalence).
            var newest: [[UInt8]: Int] = [:]
            for (i, t) in tags.enumerated() {
                let key =
                    Array(t.gateway.utf8) + [0] + Array((uid < t.values.count ? t.values[uid].text ?? "" : "").utf8)
                if let j = newest[key], tags[j].id >= t.id { continue }
                newest[key] = i
            }
            tags = newest.values.sorted().map { tags[$0] }
            rows[.tags] = tags
        }
        return (rows, ignored, refused)
    }

    /// Whether the server refused the data itself (SQLSTATE class 22 data exception, 23 integrity other than a
    /// duplicate key, 54 program limit) or PostgresNIO refused the statement's size: sending it again cannot help.
    static func isDataError(_ e: PSQLError) -> Bool {
        if e.code == .tooManyParameters { return true }
        guard let state = e.serverInfo?[.sqlState] else { return false }
        return state.hasPrefix("22") || (state.hasPrefix("23") && state != "23505") || state.hasPrefix("54")
    }

    /// A batch the server refused as a whole, message by message: each in its own transaction; a message whose
    /// rows the server refuses is logged (topic, keys, the server's reason) and counted refused. Returns the rows
    /// that were new.
    func writeEach(_ batch: [MQTTWire.Publish], _ conn: PostgresConnection, first: PSQLError) async throws -> Int {
        logger.warning(
            "ingest: the central refused a batch (\(Syncer.brief(first))); writing its \(batch.count) messages one by one"
        )
        var inserted = 0
        var refused = 0
        for m in batch {
            let (rows, _, _) = decode([m])
            guard !rows.isEmpty else { continue }
            do {
                inserted += try await Syncer.untilClosed(conn, limit: answerLimit) { try await self.write(rows, conn) }
            } catch let e as PSQLError where Self.isDataError(e) {
                let n = rows.values.reduce(0) { $0 + $1.count }
                refused += n
                let keys = rows.flatMap { t, r in r.prefix(3).map { "\($0.gateway)/\(t.rawValue)/\($0.id)" } }
                logger.error(
                    "ingest: the central refused \(n) row(s) of a message on \(m.topic) (\(keys.joined(separator: ", "))): \(Syncer.brief(e)); skipped"
                )
            }
        }
        lock.withLock { tallyValue.refused += refused }
        return inserted
    }

    /// One transaction: the gateways named, then each table's rows (plain first; a batch with a key the central
    /// has goes again skipping those keys). Returns the rows that were new.
    func write(_ rows: [SyncTable: [OutboxRow]], _ conn: PostgresConnection) async throws -> Int {
        var seen = Set<[UInt8]>()
        let gateways = rows.values.flatMap { $0.map(\.gateway) }.filter { seen.insert(Array($0.utf8)).inserted }
        func attempt(skipExisting: Bool) async throws -> Int {
            try await Syncer.transaction(conn, logger) {
                try await conn.query(
                    "INSERT INTO gateways(id) SELECT unnest(\(gateways)::text[]) ON CONFLICT (id) DO UPDATE SET last_sync = now()",
                    logger: logger)
                var n = 0
                for table in SyncTable.allCases {
                    guard let batch = rows[table], !batch.isEmpty else { continue }
                    n +=
                        table.isUpserted
                        ? try await Syncer.insert(table, batch, gateway: "", conn, logger)
                        : try await Syncer.arrayInsert(
                            table, batch, gateway: "", conn, logger, skipExisting: skipExisting)
                }
                return n
            }
        }
        do { return try await attempt(skipExisting: false) } catch let e as PSQLError
            where e.serverInfo?[.sqlState] == "23505"
        {
            return try await attempt(skipExisting: true)
        }
    }

    /// Runs a blocking call on a thread of its own (the subscriber's socket waits in poll), off the cooperative
    /// pool.
    /// Waits for a batch's write while keeping the broker's connection alive: a commit that takes longer than one
    /// and a half keep-alives (a slow central; up to `answer-timeout`) would otherwise make the broker drop the
    /// connection, and send the batch again to a next one. Every `every` of waiting (5 s), the subscriber sends
    /// its PINGREQ when due (and reads what came meanwhile); nothing else touches it while the write runs.
    package static func awaitTending<T: Sendable>(
        _ write: Task<T, any Error>, _ s: MQTTSubscriber, every: Duration = .seconds(5)
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await write.value }
            // A lost connection ends the tending only: the write is still waited for (its connection to the
            // central must not get a second user), and the subscriber's next call finds the connection gone.
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: every)
                    if Task.isCancelled { break }
                    do { try await offThread { () throws(IngestError) in try s.tend() } } catch { break }
                }
                return nil
            }
            defer { group.cancelAll() }
            while let next = try await group.next() {
                if let value = next { return value }
            }
            throw CancellationError()
        }
    }

    static func offThread<T: Sendable>(_ body: @escaping @Sendable () throws(IngestError) -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (k: CheckedContinuation<T, any Error>) in
            let t = Thread {
                do { k.resume(returning: try body()) } catch { k.resume(throwing: error) }
            }
            t.stackSize = 1 << 20
            t.start()
        }
    }
}
