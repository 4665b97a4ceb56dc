import Foundation
import GRDB
import VLoggerModel
import ISO15693

/// One asset of the register: the tag it carries, and what an audit expects of it.
public struct AssetRow: Equatable, Sendable {
    public var uid: UID
    public var assetID: String
    public var name: String?
    public var location: String?
    /// The file's other columns (expected block values and fields an audit checks), by column name.
    public var extra: [String: String]

    /// How a person reads it: its id and, when the register gives one, its name after `separator`.
    public func label(separator: String = " — ") -> String { name.map { assetID + separator + $0 } ?? assetID }

    public init(uid: UID, assetID: String, name: String? = nil, location: String? = nil, extra: [String: String] = [:])
    {
        self.uid = uid
        self.assetID = assetID
        self.name = name
        self.location = location
        self.extra = extra
    }

    /// The extra columns as one JSON object, keys sorted (what the store keeps).
    var extraJSON: String? {
        guard !extra.isEmpty else { return nil }
        var o: [UInt8] = [0x7B]
        for (i, k) in extra.keys.sorted().enumerated() {
            if i > 0 { o.append(0x2C) }
            JSONText.appendQuoted(k, to: &o)
            o.append(0x3A)
            JSONText.appendQuoted(extra[k] ?? "", to: &o)
        }
        o.append(0x7D)
        return String(decoding: o, as: UTF8.self)
    }

    static func extra(fromJSON text: String?) -> [String: String] {
        guard let text, let o = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String] else {
            return [:]
        }
        return o
    }
}

/// What an import did (or, with a dry run, would do). The lists name at most `listed` UIDs each (a register of a
/// million rows is not repeated in memory); the totals count them all.
public struct AssetImportReport: Equatable, Sendable {
    public static let listed = 1000
    public var added: [UID] = []
    public var changed: [UID] = []
    public var unchanged = 0
    /// Assets in the store that the file does not list: kept (a register is amended, not replaced).
    public var notInFile: [UID] = []
    public var addedTotal = 0
    public var changedTotal = 0
    public var notInFileTotal = 0
}

extension Store {
    /// Imports the register's rows: a new UID is added, a known one updated where anything differs, nothing
    /// is duplicated. With `dryRun` nothing is written; the report says what would change.
    @discardableResult
    public func importAssets(_ rows: [AssetRow], source: String, dryRun: Bool = false, now: Millis = Millis.now())
        throws(StoreError) -> AssetImportReport
    {
        try importAssets(source: source, dryRun: dryRun, now: now) { add throws(StoreError) in
            for (i, r) in rows.enumerated() { try add(r, i + 2) }
        }
    }

    /// Imports rows as `produce` hands them over (with the line each came from), in one transaction: all or none.
    /// Memory does not grow with the number of rows: each is compared with the stored one by a lookup, and the
    /// UIDs and asset ids seen so far are kept in a temporary table that refuses a UID or an asset id twice.
    public func importAssets(
        source: String, dryRun: Bool = false, now: Millis = Millis.now(),
        _ produce: (_ add: (AssetRow, Int) throws(StoreError) -> Void) throws(StoreError) -> Void
    ) throws(StoreError) -> AssetImportReport {
        try withWriter { db throws(StoreError) in
            var report = AssetImportReport()
            try db.execute(
                "DROP TABLE IF EXISTS temp.import_seen; CREATE TEMP TABLE import_seen(uid TEXT PRIMARY KEY, asset_id TEXT NOT NULL UNIQUE, line INTEGER NOT NULL)"
            )
            defer { try? db.execute("DROP TABLE IF EXISTS temp.import_seen") }
            try Self.transaction(db) { () throws(StoreError) in
                let seen = try db.prepare("INSERT INTO temp.import_seen(uid, asset_id, line) VALUES(?, ?, ?)")
                let which = try db.prepare(
                    "SELECT uid, asset_id, line FROM temp.import_seen WHERE uid = ? OR asset_id = ?")
                let old = try db.prepare("SELECT uid, asset_id, name, location, extra FROM assets WHERE uid = ?")
                let upsert = try db.prepare(
                    """
                    INSERT INTO assets(uid, asset_id, name, location, extra, source, updated_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)
                    ON CONFLICT(uid) DO UPDATE SET asset_id = excluded.asset_id, name = excluded.name, location = excluded.location,
                        extra = excluded.extra, source = excluded.source, updated_at = excluded.updated_at
                    """)
                try produce { (row: AssetRow, line: Int) throws(StoreError) in
                    let uid = row.uid.description
                    seen.reset()
                    try seen.bind([.text(uid), .text(row.assetID), .integer(Int64(line))])
                    do throws(StoreError) { try seen.step() } catch {
                        which.reset()
                        try which.bind([.text(uid), .text(row.assetID)])
                        guard try which.step() else { throw error }
                        if which.text(0) == uid {
                            throw StoreError(
                                "\(source):\(line): UID \(uid) is listed twice (first on line \(which.int64(2)))")
                        }
                        throw StoreError(
                            "\(source):\(line): asset id \(row.assetID) is already on line \(which.int64(2)) for \(which.text(0) ?? "another tag"); an asset id names one tag"
                        )
                    }
                    old.reset()
                    try old.bind([.text(uid)])
                    if try old.step() {
                        let stored = AssetRow(
                            uid: row.uid, assetID: old.text(1) ?? "", name: old.text(2), location: old.text(3),
                            extra: AssetRow.extra(fromJSON: old.text(4)))
                        if stored == row { report.unchanged += 1; return }
                        report.changedTotal += 1
                        if report.changed.count < AssetImportReport.listed { report.changed.append(row.uid) }
                    } else {
                        report.addedTotal += 1
                        if report.added.count < AssetImportReport.listed { report.added.append(row.uid) }
                    }
                    guard !dryRun else { return }
                    upsert.reset()
                    try upsert.bind([
                        .text(uid), .text(row.assetID), row.name.map(SQLValue.text) ?? .null,
                        row.location.map(SQLValue.text) ?? .null, row.extraJSON.map(SQLValue.text) ?? .null,
                        .text(source), .integer(now),
                    ])
                    try upsert.step()
                }
                // An asset id the store gives a tag the file does not list names one tag only too.
                let clash = try db.prepare(
                    "SELECT s.line, s.asset_id, a.uid FROM assets a JOIN temp.import_seen s ON s.asset_id = a.asset_id "
                        + "WHERE a.uid NOT IN (SELECT uid FROM temp.import_seen) LIMIT 1")
                if try clash.step() {
                    throw StoreError(
                        "\(source):\(clash.int64(0)): asset id \(clash.text(1) ?? "") is the store's asset id of \(clash.text(2) ?? "another tag"), which this file does not list; an asset id names one tag"
                    )
                }
                let missing = try db.prepare(
                    "SELECT uid FROM assets WHERE uid NOT IN (SELECT uid FROM temp.import_seen) ORDER BY uid")
                while try missing.step() {
                    report.notInFileTotal += 1
                    if report.notInFile.count < AssetImportReport.listed,
                        let u = try? UID(parsing: missing.text(0) ?? "")
                    {
                        report.notInFile.append(u)
                    }
                }
            }
            return report
        }
    }

    /// The register as stored, by UID.
    public func assets(location: String? = nil) throws(StoreError) -> [AssetRow] {
        try read { db in
            var q = StoredAsset.order(Column("uid"))
            if let location { q = q.filter(Column("location") == location) }
            return try q.fetchAll(db).compactMap(\.row)
        }
    }
}
