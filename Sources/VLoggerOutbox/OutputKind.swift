import FieldState
import Foundation
import Logging
import VLoggerConfig
import VLoggerModel
import VLoggerStore

/// Where a kind of output is written in vlogger.toml.
public enum OutputSection: Sendable, Equatable {
    /// One table at the top level (`[sync]`).
    case table(String)
    /// Any number of `[[output.NAME]]` tables.
    case list(String)

    /// The key it has in its parent table: `sync`, `mqtt`.
    public var key: String {
        switch self {
        case let .table(k), let .list(k): return k
        }
    }

    /// As the documentation writes it: `[sync]`, `[[output.mqtt]]`.
    public var heading: String {
        switch self {
        case let .table(k): return "[\(k)]"
        case let .list(k): return "[[output.\(k)]]"
        }
    }
}

/// What reading an output's section may need besides the section: the gateway's reader ids (a filter naming no
/// reader is an error) and the paths relative to the configuration file.
public struct OutputReadContext {
    public let readerIDs: [String]
    /// A path of the file made absolute (relative to the configuration's folder).
    public let resolve: (String) -> String
    public init(readerIDs: [String], resolve: @escaping (String) -> String) {
        self.readerIDs = readerIDs
        self.resolve = resolve
    }
}

/// A file an output's settings name (a password, a CA): `config check`, `doctor` and `run` check that it can be
/// read, that a secret is long enough and that other users cannot read it.
public struct OutputFile: Sendable, Equatable {
    /// The setting as messages name it: `sync.password-file`, `output.mqtt mqtt-2 ca-file`.
    public var what: String
    public var path: String
    /// A secret (its first line is checked, and its mode); a CA or certificate is not.
    public var secret: Bool
    /// The shortest first line a secret may have.
    public var minLength: Int
    public init(what: String, path: String, secret: Bool = true, minLength: Int = 1) {
        self.what = what
        self.path = path
        self.secret = secret
        self.minLength = minLength
    }
}

/// A reader of the gateway as outputs name it (topics, Sparkplug's node metrics, Home Assistant's scanners).
public struct OutputReader: Sendable, Equatable {
    public var id: String
    public var location: String?
    public init(id: String, location: String?) {
        self.id = id
        self.location = location
    }
}

/// What an output is made with besides its own settings: the gateway's identity, its readers and decoded fields,
/// the store (nil where a command makes an output only to probe it) and the service's view of its readers.
public struct OutputContext: Sendable {
    public var gatewayID: String
    public var site: String?
    public var readers: [OutputReader]
    public var fields: [FieldInfo]
    public var store: Store?
    public var logger: Logger
    /// Which readers work now (a Sparkplug node's `Reader/<id>/Up`).
    public var readerUp: @Sendable () -> [String: Bool]
    /// Made to check its destination only (`outputs status`, `doctor`): nothing that outlives the check
    /// (a Will, a birth, a retained message) is sent.
    public var probe: Bool
    /// The field's live state (readers, tags present, latest values, alarms): what a server shows its clients.
    public var fieldState: FieldState?
    /// The readers, for a server whose clients scan, read and write tags (nil: none; a server then answers that).
    public var fieldAccess: (any FieldAccess)?
    /// The rules that judge tags' values (a server's alarm conditions).
    public var alarmRules: [AlarmRule] = []
    /// Records a client's acknowledgement of a violation (an `acknowledged` event, the field state's alarm marked);
    /// false when the store refused it. Nil: none is recorded (a server then keeps it to itself).
    public var acknowledgeAlarm: (@Sendable (AlarmAcknowledgement) -> Bool)?
    /// The service's version (a server's build information).
    public var version = "0"
    /// The store's path (a server keeps its certificates beside it), where the context has no open store.
    public var storePath: String?

    public init(
        gatewayID: String, site: String? = nil, readers: [OutputReader] = [], fields: [FieldInfo] = [],
        store: Store? = nil, logger: Logger = Logger(label: "vlogger.output"),
        readerUp: @escaping @Sendable () -> [String: Bool] = { [:] }, probe: Bool = false,
        fieldState: FieldState? = nil
    ) {
        self.fieldState = fieldState
        self.gatewayID = gatewayID
        self.site = site
        self.readers = readers
        self.fields = fields
        self.store = store
        self.logger = logger
        self.readerUp = readerUp
        self.probe = probe
    }

    /// The store, or an error for a kind that cannot work without one.
    public func requireStore(_ what: String) throws(VLoggerError) -> Store {
        guard let store else { throw VLoggerError("\(what) needs the gateway's store") }
        return store
    }
}

/// One output of the gateway: a consumer of the store's outbox and how often its job runs a round.
public struct Output: Sendable {
    public let consumer: any OutboxConsumer
    /// Between rounds when there is nothing new (or, without `wakesOnCommit`, always).
    public let intervalMs: Millis
    /// Whether a round starts as soon as the store writer committed (a connection kept open: MQTT), rather than
    /// every `intervalMs` (a connection per round: the fleet sync).
    public var wakesOnCommit = false
    /// What it was made from (its settings as text, secrets not read): a reload restarts an output whose
    /// signature changed.
    public var signature = ""

    public init(consumer: any OutboxConsumer, intervalMs: Millis, wakesOnCommit: Bool = false, signature: String = "") {
        self.consumer = consumer
        self.intervalMs = intervalMs
        self.wakesOnCommit = wakesOnCommit
        self.signature = signature
    }

    /// A secret file's stamp for a signature (no content): a SIGHUP restarts an output whose password or secret
    /// file changed, as it restarts one whose settings did.
    public static func stamp(_ file: String?) -> String { FileStamp.of(file).map { "secret \($0)" } ?? "" }
}

/// What `vlogger doctor` found when it asked an output's destination at the protocol level.
public struct OutputProbe: Sendable {
    /// The check's name in doctor's list (`broker mqtt`).
    public var check: String
    /// The destination as it may be shown (no password).
    public var destination: String
    /// Nil: it answered and took the login.
    public var failure: OutboxFailure?
    /// What to do about the failure.
    public var advice: String
    /// What a passed check found (empty: the destination took a probe connection).
    public var detail: String = ""
    public init(check: String, destination: String, failure: OutboxFailure?, advice: String = "", detail: String = "") {
        self.check = check
        self.destination = destination
        self.failure = failure
        self.advice = advice
        self.detail = detail
    }
}

/// One configured output: the settings its kind read from vlogger.toml. It says what it needs of the host (files,
/// remote hosts), and makes its consumer.
public protocol OutputSettings: Sendable {
    /// The output's name: its cursors, metrics and log lines carry it (unique in a configuration).
    var name: String { get }
    /// The files its settings name, for the checks of `config check`, `doctor` and `run`.
    var files: [OutputFile] { get }
    /// The hosts it connects to (the service's network allowance, `doctor`'s reachability check).
    var remotes: [Remote] { get }
    /// Warnings about settings that work but should not stay (a password sent in clear); `file` is the
    /// configuration's path, which each line begins with.
    func warnings(file: String) -> [String]
    /// Makes the output: its consumer, how often it runs, its signature.
    func makeOutput(_ context: OutputContext) throws -> Output
    /// `vlogger doctor`'s check of the destination at the protocol level (nil: the kind has none beyond
    /// `outputs status`).
    func doctorProbe(_ context: OutputContext) async -> OutputProbe?
}

extension OutputSettings {
    public var files: [OutputFile] { [] }
    public var remotes: [Remote] { [] }
    public func warnings(file: String) -> [String] { [] }
    public func doctorProbe(_ context: OutputContext) async -> OutputProbe? { nil }
}

/// The settings of a server that others connect to (OPC UA): it reads the field's live state rather than the
/// store's outbox, so it has no consumer and no cursor. The service runs each as a service of its group.
public protocol ServerSettings: OutputSettings {
    func makeServer(_ context: OutputContext) throws -> any OutputServer
}

extension ServerSettings {
    public func makeOutput(_ context: OutputContext) throws -> Output {
        throw VLoggerError("\(name) is a server, not a consumer of the outbox")
    }
}

/// A running server of an output kind.
public protocol OutputServer: Sendable {
    var name: String { get }
    /// Serves until the task is cancelled, then closes its connections.
    func run() async throws
    /// What it serves now, for `/metrics` and `/healthz` (nil: not listening yet, or stopped).
    func status() -> ServerStatus?
}

extension OutputServer {
    public func status() -> ServerStatus? { nil }
}

/// A server's state as `/metrics` and `/healthz` show it: where it listens and its counts. Each count becomes
/// the family `vlogger_output_NAME` (a counter's `vlogger_output_NAME_total`) with the label `output`, and the key
/// `NAME` of the server's object in /healthz.
public struct ServerStatus: Sendable, Equatable {
    public struct Count: Sendable, Equatable {
        /// snake_case, without `_total`.
        public var name: String
        /// The family's HELP text.
        public var help: String
        /// Only grows (a counter), or goes up and down (a gauge).
        public var isCounter: Bool
        public var value: Int

        public init(_ name: String, _ value: Int, counter: Bool = false, help: String) {
            self.name = name
            self.value = value
            self.isCounter = counter
            self.help = help
        }
    }
    /// The address it listens on (`opc.tcp://127.0.0.1:4840`).
    public var listening: String
    public var counts: [Count]

    public init(listening: String, counts: [Count]) {
        self.listening = listening
        self.counts = counts
    }
}

extension Collection where Element == any OutputSettings {
    /// The outputs that consume the store's outbox (every one but the servers).
    public var consumers: [any OutputSettings] { filter { !($0 is any ServerSettings) } }
    /// The servers.
    public var servers: [any ServerSettings] { compactMap { $0 as? any ServerSettings } }
}

/// A kind of output: a target of its own (the fleet sync, MQTT, webhooks, …) with one type conforming to this;
/// the executable registers the list once at start (`OutputKinds.bootstrap`), beside the drivers. The
/// configuration reads each kind's section through it; nothing below the executable names a kind.
public protocol OutputKind: Sendable {
    /// Where its settings are written.
    var section: OutputSection { get }
    /// The keys its section takes (any other is an error naming these).
    var keys: [String] { get }
    /// One line for help texts and `config sample --output`.
    var summary: String { get }
    /// A commented example section for `config sample --output KIND`.
    var sample: String { get }
    /// Reads one section (`index`: its place among sections of this kind, for default names), recording each
    /// problem in `reader` with its line; nil when the section cannot make an output.
    func read(_ section: Section, index: Int, _ reader: ConfigReader, _ context: OutputReadContext)
        -> (any OutputSettings)?
}

/// The output kinds this binary has: registered once at start by the executable (and by the test suites), read
/// by the configuration.
public enum OutputKinds {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var kinds: [any OutputKind] = []

    /// Registers the kinds (replacing any registered before). Two kinds with one key: the first stays.
    public static func bootstrap(_ list: [any OutputKind]) {
        var seen = Set<String>()
        let unique = list.filter { seen.insert($0.section.key).inserted }
        lock.withLock { kinds = unique }
    }

    public static var all: [any OutputKind] { lock.withLock { kinds } }

    /// The kind written as `key` in `[output]` (or at the top level).
    public static func kind(_ section: OutputSection) -> (any OutputKind)? {
        all.first { $0.section == section }
    }
}
