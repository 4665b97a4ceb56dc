import Foundation
import VLoggerModel
import VLoggerStore

/// Each tag's state as the MQTT output has seen it go by: where it was last read, its latest decoded values (merged:
/// a reading of one plan keeps the values of another), their units, whether it is in a field and its alarms (the
/// rules it violates now). Published retained on `vlogger/{gateway}/tag/{uid}` after each batch that changed it,
/// so a subscriber that comes later (a dashboard, Home Assistant's sensors) has every tag's last values at once.
///
/// The alarms are those whose `violation` event this output published and whose `violation_ended` it has not:
/// an output that does not publish events has none, and after a restart a violation still going on shows again
/// with its next event.
struct TagStates {
    struct State {
        var uid: String
        var asset: String?
        var time: Millis = 0
        var reader: String?
        var location: String?
        var present: Bool?
        var values: [(name: String, value: SparkplugValue)] = []
        /// When each value was taken: an older row (a sensor log's record, read later) never replaces a newer value.
        var valueTimes: [String: Millis] = [:]
        var alarms: [String] = []
    }

    let units: [String: String]
    private(set) var states: [String: State] = [:]
    private(set) var dirty: [String] = []

    init(units: [String: String]) { self.units = units }

    /// Takes a row of readings or events; returns the numeric fields of a reading (for the sensors' discovery).
    @discardableResult
    mutating func take(_ table: SyncTable, _ row: OutboxRow) -> [String] {
        guard let uid = row.value("uid", in: table).text else { return [] }
        var s = states[uid] ?? State(uid: uid)
        if let asset = row.value("asset_id", in: table).text { s.asset = asset }
        s.time = max(s.time, row.time)
        var numeric: [String] = []
        switch table {
        case .readings:
            s.reader = row.value("reader", in: table).text ?? s.reader
            s.location = row.value("location", in: table).text ?? s.location
            s.present = true
            for f in SparkplugPayloads.decodedFields(row.value("decoded", in: table).text) {
                if f.type == .double { numeric.append(f.name) }
                guard row.time >= s.valueTimes[f.name] ?? .min else { continue }
                s.valueTimes[f.name] = row.time
                if let i = s.values.firstIndex(where: { $0.name == f.name }) {
                    s.values[i].value = f.value
                } else {
                    s.values.append((f.name, f.value))
                }
            }
        default:
            let name = row.value("name", in: table).text ?? ""
            switch row.value("kind", in: table).text {
            case "arrival": s.present = true
            case "departure": s.present = false
            case "violation": if !s.alarms.contains(name) { s.alarms.append(name) }
            case "violation_ended": s.alarms.removeAll { $0 == name }
            default: break
            }
            if let r = row.value("reader", in: table).text { s.reader = r }
        }
        states[uid] = s
        if !dirty.contains(uid) { dirty.append(uid) }
        return numeric
    }

    /// The tags changed since the last call, each with its state message.
    mutating func changed(gateway: String) -> [(uid: String, payload: [UInt8])] {
        defer { dirty = [] }
        return dirty.compactMap { uid in states[uid].map { (uid, payload($0, gateway: gateway)) } }
    }

    /// `{"uid","asset_id","gateway","time","reader","location","present","values":{…},"units":{…},"alarms":[…]}`
    /// (docs/integrating.md, "Tag state"); members without a value are left out, as in every JSON of vlogger.
    func payload(_ s: State, gateway: String) -> [UInt8] {
        var out: [UInt8] = [0x7B]
        func key(_ k: String) {
            if out.count > 1 { out.append(0x2C) }
            JSONText.appendQuoted(k, to: &out)
            out.append(0x3A)
        }
        func text(_ k: String, _ v: String?) {
            guard let v else { return }
            key(k)
            JSONText.appendQuoted(v, to: &out)
        }
        text("uid", s.uid)
        text("asset_id", s.asset)
        text("gateway", gateway)
        key("time")
        out.append(0x22)
        ValueText.appendTime(s.time, to: &out)
        out.append(0x22)
        text("reader", s.reader)
        text("location", s.location)
        if let p = s.present {
            key("present")
            out.append(contentsOf: Array((p ? "true" : "false").utf8))
        }
        key("values")
        var values: [UInt8] = [0x7B]
        var unitBytes: [UInt8] = [0x7B]
        for (name, v) in s.values {
            if values.count > 1 { values.append(0x2C) }
            JSONText.appendQuoted(name, to: &values)
            values.append(0x3A)
            switch v {
            case .double(let d): values.append(contentsOf: Array(JSONText.number(d).utf8))
            case .int64(let n): values.append(contentsOf: Array(String(n).utf8))
            case .boolean(let b): values.append(contentsOf: Array((b ? "true" : "false").utf8))
            case .string(let t): JSONText.appendQuoted(t, to: &values)
            case .bytes(let b):
                values.append(0x22)
                ValueText.appendHex(b, to: &values)
                values.append(0x22)
            }
            if let u = units[name], !u.isEmpty {
                if unitBytes.count > 1 { unitBytes.append(0x2C) }
                JSONText.appendQuoted(name, to: &unitBytes)
                unitBytes.append(0x3A)
                JSONText.appendQuoted(u, to: &unitBytes)
            }
        }
        out.append(contentsOf: values)
        out.append(0x7D)
        if unitBytes.count > 1 {
            key("units")
            out.append(contentsOf: unitBytes)
            out.append(0x7D)
        }
        key("alarms")
        out.append(0x5B)
        for (i, a) in s.alarms.enumerated() {
            if i > 0 { out.append(0x2C) }
            JSONText.appendQuoted(a, to: &out)
        }
        out.append(0x5D)
        out.append(0x7D)
        return out
    }
}
