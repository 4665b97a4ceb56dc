import ISO15693
import VLoggerModel

/// The store's objects as every surface writes them (the read API, `--json` of the commands): one `Codable` type
/// each, encoded by `WireJSON`. Rows go through `OutboxJSON`; these are the things that are not rows of one table.

/// A decoded field the store knows: `{"name","unit","kind"}` (`/api/v1/fields`; kind number, text, hex or json).
public struct FieldJSON: Encodable, Sendable, Equatable {
    public var name: String
    public var unit: String?
    public var kind: String

    public init(_ f: FieldInfo) {
        name = f.name
        unit = f.unit.flatMap { $0.isEmpty ? nil : $0 }
        kind = f.kind.rawValue
    }
}

/// An asset of the register: `{"uid","asset_id","name","location","expected":{…}}`.
public struct AssetJSON: Encodable, Sendable, Equatable {
    public var uid: String
    public var assetID: String
    public var name: String?
    public var location: String?
    /// The register's expected values (`model`, `block_0xF8`, …), when it has any.
    public var expected: [String: String]?

    enum CodingKeys: String, CodingKey { case uid, assetID = "asset_id", name, location, expected }

    public init(_ a: AssetRow) {
        uid = a.uid.description
        assetID = a.assetID
        name = a.name
        location = a.location
        expected = a.extra.isEmpty ? nil : a.extra
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(uid, forKey: .uid)
        try c.encode(assetID, forKey: .assetID)
        try c.encodeIfPresent(name, forKey: .name)
        try c.encodeIfPresent(location, forKey: .location)
        // Sorted, so the same register gives the same bytes.
        if let expected {
            var e = c.nestedContainer(keyedBy: WireKey.self, forKey: .expected)
            for k in expected.keys.sorted() { try e.encode(expected[k], forKey: WireKey(k)) }
        }
    }
}

/// The asset a tag is, in a tag's object: `{"asset_id","name","location"}`.
public struct TagAssetJSON: Encodable, Sendable, Equatable {
    public var assetID: String
    public var name: String?
    public var location: String?
    enum CodingKeys: String, CodingKey { case assetID = "asset_id", name, location }
    public init(_ a: AssetRow) {
        assetID = a.assetID
        name = a.name
        location = a.location
    }
}

/// A tag the store has seen: its manufacturer as code and name, model, first and last seen, where.
public struct TagJSON: Encodable, Sendable, Equatable {
    public var uid: String
    public var manufacturerCode: WireByte
    public var manufacturer: String?
    public var model: String?
    public var firstSeen: WireTime
    public var lastSeen: WireTime
    public var lastReader: String?
    public var lastLocation: String?
    public var asset: TagAssetJSON?
    public var originality: String?

    enum CodingKeys: String, CodingKey {
        case uid, manufacturerCode = "manufacturer_code", manufacturer, model, firstSeen = "first_seen"
        case lastSeen = "last_seen", lastReader = "last_reader", lastLocation = "last_location", asset, originality
    }

    public init(_ t: StoredTag, asset: AssetRow?) {
        uid = t.uid.description
        manufacturerCode = WireByte(t.uid.manufacturer.rawValue)
        manufacturer = t.uid.manufacturer.name
        model = t.model
        firstSeen = WireTime(t.firstSeen)
        lastSeen = WireTime(t.lastSeen)
        lastReader = t.lastReader
        lastLocation = t.lastLocation
        self.asset = asset.map(TagAssetJSON.init)
        originality = t.originality
    }
}

/// A tag in a reader's field now, in `/api/v1/tags`: its UID and asset (its last reading is added as a row).
public struct FieldTagJSON: Encodable, Sendable, Equatable {
    public var uid: String
    public var assetID: String?
    public var assetName: String?
    enum CodingKeys: String, CodingKey { case uid, assetID = "asset_id", assetName = "asset_name" }
    public init(uid: UID, asset: AssetRow?) {
        self.uid = uid.description
        assetID = asset?.assetID
        assetName = asset?.name
    }
}

/// A queued write and its outcome.
public struct QueuedWriteJSON: Encodable, Sendable, Equatable {
    public var id: Int64
    public var operation: String
    public var uid: String
    public var block: WireBlock
    public var data: WireHex
    public var flags: String?
    public var reader: String?
    public var created: WireTime
    public var expires: WireTime?
    public var state: String
    public var result: String?
    public var finished: WireTime?
    public var origin: String?

    enum CodingKeys: String, CodingKey {
        case id, operation, uid, block, data, flags, reader, created, expires, state, result, finished, origin
    }

    public init(_ w: QueuedWrite) {
        id = w.id
        operation = w.operation.rawValue
        uid = w.uid.description
        block = WireBlock(w.first.int)
        data = WireHex(w.data)
        flags = w.flags.map { f in
            var out: [UInt8] = []
            ValueText.appendFlags(Int64(f.rawValue), to: &out)
            return String(decoding: out, as: UTF8.self)
        }
        reader = w.reader
        created = WireTime(w.created)
        expires = WireTime(w.expires)
        state = w.state.rawValue
        result = w.result
        finished = WireTime(w.finished)
        origin = w.origin
    }
}

/// A list: `{"items":[…]}`.
public struct ItemsJSON<Item: Encodable & Sendable>: Encodable, Sendable {
    public var items: [Item]
    public init(_ items: [Item]) { self.items = items }
}

extension Store {
    /// One audit as the read API (`/api/v1/audits/{id}`) and `vlogger audit show --json` write it:
    /// `{"audit":{…row…},"results":[{…row…},…]}`, rows as every output has them (`OutboxJSON`). Nil: no such audit.
    public func auditJSON(_ id: Int64, gateway: String) throws(StoreError) -> [UInt8]? {
        guard let (audit, results) = try auditRows(id) else { return nil }
        var b: [UInt8] = Array("{\"audit\":".utf8)
        OutboxJSON.append(.audits, audit, gateway: gateway, to: &b)
        b += Array(",\"results\":[".utf8)
        for (i, r) in results.enumerated() {
            if i > 0 { b.append(0x2C) }
            OutboxJSON.append(.auditResults, r, gateway: gateway, to: &b)
        }
        b += Array("]}".utf8)
        return b
    }

    /// The audits, newest first, as `/api/v1/audits` and `vlogger audit list --json` write them: `{"items":[…]}`.
    public func auditsJSON(location: String?, limit: Int, gateway: String) throws(StoreError) -> [UInt8] {
        var b: [UInt8] = Array("{\"items\":[".utf8)
        for (i, r) in try auditRows(location: location, limit: limit).enumerated() {
            if i > 0 { b.append(0x2C) }
            OutboxJSON.append(.audits, r, gateway: gateway, to: &b)
        }
        b += Array("]}".utf8)
        return b
    }
}
