import Foundation
import ISO15693
import VLoggerModel
import VLoggerStore
import VLoggerConfig

/// An asset register: one row per tag, keyed by UID (CSV with a header row; a `uid` column is required).
/// The rules keep only the columns they compare with (`register-column`), so a register of a million assets
/// costs the service what those columns need, not the whole file.
public struct AssetRegister: Sendable {
    public var file: String
    public var columns: [String]
    /// By UID: the kept columns of each row (every column, or only those the rules read).
    public var rows: [String: [String: String]]
    /// How many assets the file lists.
    public var count: Int

    public init(file: String, columns: [String], rows: [String: [String: String]], count: Int? = nil) {
        self.file = file
        self.columns = columns
        self.rows = rows
        self.count = count ?? rows.count
    }

    /// The register at `path`, every column.
    public static func load(_ path: String) throws(ConfigError) -> AssetRegister {
        try load(path, keeping: nil)
    }

    /// The register at `path`, read record by record; `keeping`: the columns kept in `rows` (nil: all; empty:
    /// none, every row still checked). Each row's UID is checked, and a UID listed twice is an error.
    public static func load(_ path: String, keeping: Set<String>?) throws(ConfigError) -> AssetRegister {
        let records: CSVRecords
        do { records = try CSVRecords.file(path) } catch {
            throw ConfigError(issues: [ConfigIssue(file: path, line: 0, message: "cannot read the file")])
        }
        return try read(records, file: path, keeping: keeping)
    }

    /// The register in `text` (the content of `path`, named in every issue).
    public static func parse(_ text: String, file path: String) throws(ConfigError) -> AssetRegister {
        try read(CSVRecords(text: text), file: path, keeping: nil)
    }

    /// The header's column names, checked: lower case, unique, with a uid column.
    static func header(_ records: inout CSVRecords, file path: String) throws(ConfigError) -> [String] {
        let first: (line: Int, cells: [String])?
        do { first = try records.next() } catch {
            throw ConfigError(issues: [ConfigIssue(file: path, line: error.line, message: error.message)])
        }
        guard let header = first else {
            throw ConfigError(issues: [
                ConfigIssue(file: path, line: 1, message: "empty register; expected a header row with a uid column")
            ])
        }
        let cols = header.cells.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        var seen = Set<String>()
        if let twice = cols.first(where: { !seen.insert($0).inserted }) {
            throw ConfigError(issues: [
                ConfigIssue(
                    file: path, line: 1,
                    message: "column '\(twice)' appears twice in the header; each column needs its own name")
            ])
        }
        guard cols.contains("uid") else {
            throw ConfigError(issues: [
                ConfigIssue(
                    file: path, line: 1, message: "no 'uid' column in the header (\(cols.joined(separator: ", ")))")
            ])
        }
        return cols
    }

    static func read(_ input: CSVRecords, file path: String, keeping: Set<String>?) throws(ConfigError) -> AssetRegister
    {
        var records = input
        let cols = try header(&records, file: path)
        let u = cols.firstIndex(of: "uid") ?? 0
        let kept = cols.enumerated().filter { keeping?.contains($0.element) ?? true }
        var rows: [String: [String: String]] = [:]
        var seen = Set<UID>()
        var issues: [ConfigIssue] = []
        while true {
            let rec: (line: Int, cells: [String])?
            do { rec = try records.next() } catch {
                issues.append(ConfigIssue(file: path, line: error.line, message: error.message)); break
            }
            guard let rec else { break }
            if rec.cells.count == 1 && rec.cells[0].isEmpty { continue }
            guard rec.cells.count == cols.count else {
                issues.append(
                    ConfigIssue(
                        file: path, line: rec.line, message: "\(rec.cells.count) cells; the header has \(cols.count)"))
                if issues.count >= 50 { break }
                continue
            }
            for (i, c) in cols.enumerated() where c == "asset_id" || c == "location" {
                if let why = PlainText.problem(rec.cells[i].trimmingCharacters(in: .whitespaces)) {
                    issues.append(ConfigIssue(file: path, line: rec.line, message: "column \(c): \(why)"))
                }
            }
            do {
                let uid = try UID(parsing: rec.cells[u])
                if !seen.insert(uid).inserted {
                    issues.append(ConfigIssue(file: path, line: rec.line, message: "UID \(uid) is listed twice"))
                }
                if !kept.isEmpty {
                    rows[uid.description] = Dictionary(
                        uniqueKeysWithValues: kept.map { ($0.element, rec.cells[$0.offset]) })
                }
            } catch {
                issues.append(ConfigIssue(file: path, line: rec.line, message: "uid: \(error)"))
            }
            if issues.count >= 50 { break }
        }
        if !issues.isEmpty { throw ConfigError(issues: issues) }
        return AssetRegister(file: path, columns: cols, rows: rows, count: seen.count)
    }
}

extension AssetRegister {
    /// `[rules] register` into the store's asset register, when it has an `asset_id` column (a register kept
    /// only for the rules is left to them: nil). At start, on SIGHUP and before an audit. Read record by record
    /// and written in one transaction: memory does not grow with the file.
    public static func importConfigured(_ config: AgentConfig, into store: Store) throws -> AssetImportReport? {
        guard let file = config.registerFile else { return nil }
        var records: CSVRecords
        do { records = try CSVRecords.file(file) } catch {
            throw ConfigError(issues: [ConfigIssue(file: file, line: 0, message: "cannot read the file")])
        }
        guard try header(&records, file: file).contains("asset_id") else { return nil }
        return try importFile(file, into: store)
    }

    /// Imports the register file into the store: `uid` and `asset_id` are required (an asset id on one tag
    /// only); `name` (or `description`) and `location` are taken when present; every other column is kept as an
    /// expected value for audits, and the columns audits read are checked here (`block_0xNN` a block number and
    /// hex bytes, `locked_0xNN` yes or no, `manufacturer` a known manufacturer), so that a typo is an error with
    /// its line, not a failed check at the next audit. All or nothing; errors name the file, the line and the
    /// column.
    public static func importFile(_ path: String, into store: Store, dryRun: Bool = false) throws -> AssetImportReport {
        let records: CSVRecords
        do { records = try CSVRecords.file(path) } catch {
            throw ConfigError(issues: [ConfigIssue(file: path, line: 0, message: "cannot read the file")])
        }
        return try importRecords(records, file: path, into: store, dryRun: dryRun)
    }

    /// `importFile` for a register in memory.
    public static func importText(_ text: String, file path: String, into store: Store, dryRun: Bool = false) throws
        -> AssetImportReport
    {
        try importRecords(CSVRecords(text: text), file: path, into: store, dryRun: dryRun)
    }

    static func importRecords(_ given: CSVRecords, file path: String, into store: Store, dryRun: Bool) throws
        -> AssetImportReport
    {
        var input = given
        let cols = try header(&input, file: path)
        guard cols.contains("asset_id") else {
            throw ConfigError(issues: [
                ConfigIssue(
                    file: path, line: 1,
                    message:
                        "no 'asset_id' column in the header (\(cols.joined(separator: ", "))); an asset register needs uid and asset_id"
                )
            ])
        }
        for c in cols where c.hasPrefix("block_") || c.hasPrefix("locked_") {
            let number = c.hasPrefix("block_") ? String(c.dropFirst(6)) : String(c.dropFirst(7))
            if (try? BlockNumber(parsing: number)) == nil {
                throw ConfigError(issues: [
                    ConfigIssue(
                        file: path, line: 1,
                        message:
                            "column \(c): '\(number)' is not a block number (0x00…0xFFFF), e.g. \(c.hasPrefix("block_") ? "block_0xF8" : "locked_0x00")"
                    )
                ])
            }
        }
        let nameColumn = cols.contains("name") ? "name" : (cols.contains("description") ? "description" : nil)
        let fixed = Set(["uid", "asset_id", "location", nameColumn].compactMap { $0 })
        do throws(StoreError) {
            return try store.importAssets(source: path, dryRun: dryRun) { add throws(StoreError) in
                while true {
                    let rec: (line: Int, cells: [String])?
                    do throws(CSVRecords.Failure) { rec = try input.next() } catch {
                        throw StoreError("\(path):\(error.line): \(error.message)")
                    }
                    guard let rec else { return }
                    if rec.cells.count == 1 && rec.cells[0].isEmpty { continue }
                    func fail(_ m: String) -> StoreError { StoreError("\(path):\(rec.line): \(m)") }
                    guard rec.cells.count == cols.count else {
                        throw fail("\(rec.cells.count) cells; the header has \(cols.count)")
                    }
                    var cells: [String: String] = [:]
                    for (c, v) in zip(cols, rec.cells) {
                        let t = v.trimmingCharacters(in: .whitespaces)
                        if t.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" }) {
                            throw fail("column \(c): a control character in the cell")
                        }
                        cells[c] = t
                    }
                    guard let uid = try? UID(parsing: cells["uid"] ?? "") else {
                        throw fail("uid: '\(cells["uid"] ?? "")' is not a UID, E0 first (E008010000004212)")
                    }
                    guard let asset = cells["asset_id"], !asset.isEmpty else {
                        throw fail("column asset_id: empty; every asset needs its id")
                    }
                    for c in ["asset_id", "location"] {
                        if let v = cells[c], let why = PlainText.problem(v) { throw fail("column \(c): \(why)") }
                    }
                    var extra: [String: String] = [:]
                    for (c, v) in cells where !fixed.contains(c) && !v.isEmpty {
                        if c.hasPrefix("block_"), (try? Hex.parse(v)).map({ $0.isEmpty || $0.count > 256 }) ?? true {
                            throw fail("column \(c): '\(v)' is not hex bytes (1 to 256, e.g. 6608C2)")
                        }
                        if c.hasPrefix("locked_"),
                            !["yes", "no", "true", "false", "locked", "unlocked", "1", "0"].contains(v.lowercased())
                        {
                            throw fail("column \(c): '\(v)' is not yes or no")
                        }
                        if c == "sensor_log", v.lowercased() != "complete" {
                            throw fail("column sensor_log: '\(v)' is not complete (or empty: no check)")
                        }
                        if c == "manufacturer", ManufacturerCode.lookup(v) == nil {
                            throw fail(
                                "column manufacturer: '\(v)' is neither a code (0x04) nor a name in the ISO/IEC 7816-6 register"
                            )
                        }
                        extra[c] = v
                    }
                    func value(_ c: String?) -> String? { c.flatMap { cells[$0] }.flatMap { $0.isEmpty ? nil : $0 } }
                    try add(
                        AssetRow(
                            uid: uid, assetID: asset, name: value(nameColumn), location: value("location"), extra: extra
                        ), rec.line)
                }
            }
        } catch {
            // "path:line: message" from a row; any other store error as it is.
            if error.message.hasPrefix(path + ":") {
                let rest = error.message.dropFirst(path.count + 1)
                if let colon = rest.firstIndex(of: ":"), let line = Int(rest[..<colon]) {
                    throw ConfigError(issues: [
                        ConfigIssue(
                            file: path, line: line,
                            message: rest[rest.index(after: colon)...].trimmingCharacters(in: .whitespaces))
                    ])
                }
            }
            throw ConfigError(issues: [ConfigIssue(file: path, line: 0, message: error.message)])
        }
    }

    /// The register as rows for the store (checked as `importFile` checks them).
    public static func assetRows(_ text: String, file path: String) throws(ConfigError) -> [AssetRow] {
        let register = try parse(text, file: path)
        guard register.columns.contains("asset_id") else {
            throw ConfigError(issues: [
                ConfigIssue(
                    file: path, line: 1,
                    message:
                        "no 'asset_id' column in the header (\(register.columns.joined(separator: ", "))); an asset register needs uid and asset_id"
                )
            ])
        }
        let records: [[String]]
        do { records = try CSVRecords.parse(text) } catch {
            throw ConfigError(issues: [ConfigIssue(file: path, line: error.line, message: error.message)])
        }
        let cols = register.columns
        let nameColumn = cols.contains("name") ? "name" : (cols.contains("description") ? "description" : nil)
        var out: [AssetRow] = [], issues: [ConfigIssue] = []
        for (i, rec) in records.dropFirst().enumerated() where !(rec.count == 1 && rec[0].isEmpty) {
            var cells: [String: String] = [:]
            for (c, v) in zip(cols, rec) { cells[c] = v.trimmingCharacters(in: .whitespaces) }
            guard let uid = try? UID(parsing: cells["uid"] ?? "") else { continue }  // parse() has checked every uid
            guard let asset = cells["asset_id"], !asset.isEmpty else {
                issues.append(
                    ConfigIssue(file: path, line: i + 2, message: "column asset_id: empty; every asset needs its id"))
                continue
            }
            func value(_ c: String?) -> String? { c.flatMap { cells[$0] }.flatMap { $0.isEmpty ? nil : $0 } }
            var extra = cells
            for c in ["uid", "asset_id", "location", nameColumn].compactMap({ $0 }) { extra[c] = nil }
            out.append(
                AssetRow(
                    uid: uid, assetID: asset, name: value(nameColumn), location: value("location"),
                    extra: extra.filter { !$0.value.isEmpty }))
        }
        if !issues.isEmpty { throw ConfigError(issues: issues) }
        return out
    }
}
