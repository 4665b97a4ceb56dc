import Foundation
import ISO15693

/// One asset of the register: the tag it carries, and what an audit expects of it.
public struct AssetRow: Equatable, Sendable {
    public var uid: UID
    public var assetID: String
    public var name: String?
    public var location: String?
    /// The file's other columns (expected block values and fields an audit checks), by column name.
    public var extra: [String: String]

    public init(uid: UID, assetID: String, name: String? = nil, location: String? = nil, extra: [String: String] = [:]) {
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
        guard let text, let o = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String] else { return [:] }
        return o
    }
}

/// What an import did (or, with a dry run, would do).
public struct AssetImportReport: Equatable, Sendable {
    public var added: [UID] = []
    public var changed: [UID] = []
    public var unchanged = 0
    /// Assets in the store that the file does not list: kept (a register is amended, not replaced).
    public var notInFile: [UID] = []
}

extension Store {
    /// Imports the register's rows: a new UID is added, a known one updated where anything differs, nothing
    /// is duplicated. With `dryRun` nothing is written; the report says what would change.
    @discardableResult
    public func importAssets(_ rows: [AssetRow], source: String, dryRun: Bool = false, now: Millis = Millis.now()) throws(StoreError) -> AssetImportReport {
        try withWriter { db throws(StoreError) in
            var report = AssetImportReport()
            try Self.transaction(db) { () throws(StoreError) in
                let existing = Dictionary(try Self.assets(db).map { ($0.uid, $0) }, uniquingKeysWith: { a, _ in a })
                let upsert = try db.prepare("""
                    INSERT INTO assets(uid, asset_id, name, location, extra, source, updated_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)
                    ON CONFLICT(uid) DO UPDATE SET asset_id = excluded.asset_id, name = excluded.name, location = excluded.location,
                        extra = excluded.extra, source = excluded.source, updated_at = excluded.updated_at
                    """)
                for row in rows {
                    if let old = existing[row.uid] {
                        if old == row { report.unchanged += 1; continue }
                        report.changed.append(row.uid)
                    } else {
                        report.added.append(row.uid)
                    }
                    guard !dryRun else { continue }
                    upsert.reset()
                    try upsert.bind([.text(row.uid.description), .text(row.assetID), row.name.map(SQLValue.text) ?? .null,
                                     row.location.map(SQLValue.text) ?? .null, row.extraJSON.map(SQLValue.text) ?? .null,
                                     .text(source), .integer(now)])
                    try upsert.step()
                }
                let listed = Set(rows.map(\.uid))
                report.notInFile = existing.keys.filter { !listed.contains($0) }.sorted { $0.description < $1.description }
            }
            return report
        }
    }

    /// The register as stored, by UID.
    public func assets(location: String? = nil) throws(StoreError) -> [AssetRow] {
        try withReader { db throws(StoreError) in try Self.assets(db).filter { location == nil || $0.location == location } }
    }

    static func assets(_ db: SQLiteConnection) throws(StoreError) -> [AssetRow] {
        let s = try db.prepare("SELECT uid, asset_id, name, location, extra FROM assets ORDER BY uid")
        var out: [AssetRow] = []
        while try s.step() {
            guard let uid = try? UID(parsing: s.text(0) ?? "") else { continue }
            out.append(AssetRow(uid: uid, assetID: s.text(1) ?? "", name: s.text(2), location: s.text(3), extra: AssetRow.extra(fromJSON: s.text(4))))
        }
        return out
    }
}
