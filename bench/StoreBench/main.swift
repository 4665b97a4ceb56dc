import Foundation
import GRDB
import ISO15693
import ExportOracle
import VLoggerStore
import VLoggerModel

// Store benchmark helper (not part of `swift test`; run by bench/store-bench.sh):
//   store-bench ingest N BATCH PATH   readings/s and commits into a new store, durable batches of BATCH (WAL, synchronous=FULL)
//   store-bench ingest-writer N BATCH PATH   the same through the writer's own thread (commits coalesce)
//   store-bench ingest-grdb N BATCH PATH     the same rows through GRDB's own statement API (cached statement,
//                                            StatementArguments), the alternative to binding by hand
//   store-bench schema PATH           create an empty store (the C program writes into it)
//   store-bench fill N PATH           N readings for the export benchmark
//   store-bench query PATH            the export's SQL for `--since 2000-01-01`, for sqlite3 -csv
//   store-bench fill-recent N PATH    N readings spread over the last hour, and their 64 tags (status page benchmark)

let args = CommandLine.arguments
func fail(_ m: String) -> Never {
    FileHandle.standardError.write(Data("store-bench: \(m)\n".utf8))
    exit(2)
}
guard args.count >= 3 else {
    fail("usage: store-bench ingest N BATCH PATH | schema PATH | fill N PATH | fill-recent N PATH | query PATH")
}

/// The readings the benchmark writes: 64 tags round-robin, block 0xF8, 8 bytes, security, two fields
/// (the shape of the demo's cage sensor), one millisecond apart.
func makeReading(_ i: Int, base: Millis) -> Reading {
    let uid = UID(manufacturer: .fujitsu, serial: UInt64(0x4200 + i % 64))
    let t = Int16(2150 + i % 300)
    return Reading(
        time: base + Millis(i), gateway: "gw-bench", reader: "dock-1", location: "dock-door-1", uid: uid, first: 0xF8,
        count: 1,
        data: [
            UInt8(truncatingIfNeeded: t), UInt8(truncatingIfNeeded: t >> 8), 0xC2, 0x01, 0x42, 0x37, 0x00,
            UInt8(i & 0xFF),
        ],
        security: [0], decoded: [("temperature", .number(Double(t) / 100)), ("humidity", .number(45))])
}

let base: Millis = 1_763_800_000_000
do {
    switch args[1] {
    case "schema":
        let s = try Store(path: args[2])
        try s.registerFields([FieldInfo(name: "temperature", unit: "°C"), FieldInfo(name: "humidity", unit: "%")])
        s.close()
    case "ingest", "ingest-writer", "fill":
        let n = Int(args[2]) ?? 0
        let fill = args[1] == "fill"
        let batch = fill ? 50_000 : (Int(args[3]) ?? 1000)
        let path = fill ? args[3] : args[4]
        // Readings made before the clock starts, as the agent has them in memory before a commit.
        let readings = (0..<n).map { makeReading($0, base: base) }
        let s = try Store(path: path)
        try s.registerFields([FieldInfo(name: "temperature", unit: "°C"), FieldInfo(name: "humidity", unit: "%")])
        // The store writer's write path in transactions of exactly BATCH readings (as the C baseline commits),
        // or ("ingest-writer") on its own thread as the service runs it, where a commit takes everything queued.
        let w = StoreWriter(store: s, batchSize: batch, flushIntervalMs: 3_600_000, queueLimit: max(n, 100))
        let start = DispatchTime.now().uptimeNanoseconds
        if args[1] == "ingest-writer" {
            w.start()
            for r in readings { w.add(r) }
            if !w.finish(timeoutMs: 0) { fail("commit failed: \(w.lastError?.description ?? "?")") }
        } else {
            for (i, r) in readings.enumerated() {
                w.add(r)
                if (i + 1) % batch == 0, !w.commitNow() { fail("commit failed: \(w.lastError?.description ?? "?")") }
            }
            if !w.commitNow() { fail("commit failed: \(w.lastError?.description ?? "?")") }
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        s.close()
        print(String(format: "%.0f %d", Double(n) / seconds, w.stats.commits))
    case "ingest-grdb":
        let n = Int(args[2]) ?? 0, batch = max(1, Int(args[3]) ?? 1000), path = args[4]
        let readings = (0..<n).map { makeReading($0, base: base) }
        let s = try Store(path: path)
        try s.registerFields([FieldInfo(name: "temperature", unit: "°C"), FieldInfo(name: "humidity", unit: "%")])
        s.close()
        let pool = try DatabasePool(path: path)
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous=FULL") }
        let start = DispatchTime.now().uptimeNanoseconds
        var i = 0
        while i < n {
            let chunk = readings[i..<min(n, i + batch)]
            try pool.write { db in
                let st = try db.cachedStatement(
                    sql:
                        "INSERT INTO readings(time, gateway, uid, block, count, data, security, decoded, reader, location) VALUES(?,?,?,?,?,?,?,?,?,?)"
                )
                for r in chunk {
                    // The same text the store writes: the printed UID and the decoded values as a JSON object.
                    var json = "{"
                    for (k, d) in r.decoded.enumerated() {
                        if k > 0 { json += "," }
                        if case let .number(v) = d.value {
                            json += "\"\(d.name)\":\(v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : "\(v)")"
                        }
                    }
                    json += "}"
                    try st.execute(arguments: [
                        r.time, r.gateway, r.uid.description, r.first.int, r.count, Data(r.data),
                        r.security.map { Data($0) }, json, r.reader, r.location,
                    ])
                }
            }
            i += batch
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        try pool.close()
        print(String(format: "%.0f %d", Double(n) / seconds, (n + batch - 1) / batch))
    case "fill-recent":
        let n = Int(args[2]) ?? 0
        let s = try Store(path: args[3])
        try s.registerFields([FieldInfo(name: "temperature", unit: "°C"), FieldInfo(name: "humidity", unit: "%")])
        let now = Millis.now(), start = now - 3_600_000
        var i = 0
        while i < n {
            var b = Batch()
            for j in i..<min(n, i + 50_000) {
                var r = makeReading(j, base: 0)
                r.time = start + Millis(Double(j) * 3_500_000 / Double(max(n, 1)))
                b.readings.append(r)
            }
            if i == 0 {
                b.tags = (0..<64).map {
                    TagRecord(
                        uid: UID(manufacturer: .fujitsu, serial: UInt64(0x4200 + $0)), seen: now,
                        manufacturer: "Fujitsu", model: "Fujitsu MB89R118")
                }
            }
            try s.write(b)
            i += 50_000
        }
        s.close()
    case "query":
        let s = try Store(path: args[2], readOnly: true)
        var q = Exporter.referenceSQL(ExportRequest(since: 946_684_800_000), fields: try s.fields()).sql
        q = q.replacingOccurrences(of: "?1", with: "946684800000")
        print(q + ";")
    default:
        fail("unknown mode \(args[1])")
    }
} catch {
    fail("\(error)")
}
