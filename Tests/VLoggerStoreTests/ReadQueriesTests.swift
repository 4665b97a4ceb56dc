import Foundation
import ISO15693
import Testing
import VLoggerModel

@testable import VLoggerStore

/// The read API's queries on the store: pages in id order with their filters and cursor, the newest row of a
/// tag, and the time limit that ends a query running too long (SQLite's progress handler, `SQLITE_INTERRUPT`).
@Suite struct ReadQueriesTests {
    static func store(_ n: Int) throws -> Store {
        let store = try Store(path: scratchPath("read.db"))
        var b = Batch()
        let uids = [try UID(parsing: "E008010000004212"), try UID(parsing: "E004010812345602")]
        for i in 0..<n {
            b.readings.append(
                Reading(
                    time: 1_763_800_000_000 + Millis(i), gateway: "gw", reader: i % 3 == 0 ? "dock-1" : "dock-2",
                    location: nil, uid: uids[i % 2], first: 0xF8, count: 1, data: [UInt8(i & 0xFF), 0, 0, 0]))
        }
        _ = try store.write(b)
        return store
    }

    @Test func pagesFollowTheCursorAndTheFilters() throws {
        let store = try Self.store(100)
        defer { store.close() }
        let uid = try UID(parsing: "E008010000004212")
        var seen: [Int64] = []
        var after: Int64 = 0
        while true {
            let page = try store.page(.readings, RowFilter(uid: uid, reader: "dock-1"), afterID: after, limit: 7)
            seen += page.map(\.id)
            guard page.count == 7, let last = page.last?.id else { break }
            after = last
        }
        // Even rows are the first UID; of those, the reader dock-1 has every third: ids 1, 7, 13, … (id = i + 1).
        #expect(seen == stride(from: 0, to: 100, by: 6).map { Int64($0 + 1) })
        let window = try store.page(
            .readings, RowFilter(since: 1_763_800_000_010, until: 1_763_800_000_020), afterID: 0, limit: 100)
        #expect(window.map(\.id) == Array(11...20))
        #expect(try store.newest(.readings, uid: uid)?.id == 99)
    }

    /// A query past its time limit ends with SQLITE_INTERRUPT (9) and says so; without a limit it completes.
    @Test func aQueryPastItsTimeLimitIsInterrupted() throws {
        let store = try Self.store(20_000)
        defer { store.close() }
        // No index on reader: the whole table is scanned, well over the 1,000 steps between two checks.
        let f = RowFilter(reader: "nobody")
        #expect(throws: StoreError.self) { try store.page(.readings, f, afterID: 0, limit: 10, within: .zero) }
        do { _ = try store.page(.readings, f, afterID: 0, limit: 10, within: .zero) } catch {
            #expect(error.isInterrupted && error.code.map { $0 & 0xFF } == 9, "\(error)")
        }
        #expect(try store.page(.readings, f, afterID: 0, limit: 10, within: .seconds(30)).isEmpty)
        // The connection goes back without the handler: a later query without a limit is not interrupted.
        #expect(try store.page(.readings, RowFilter(), afterID: 0, limit: 5).count == 5)
    }

    /// The page of the read API (ids from the `(uid, id, time)` index, each row's JSON kept by id) has the same rows
    /// as the page query, and the same JSON as `OutboxJSON` writes for them; asked again, it writes none of them
    /// again. The cache is bounded: past its capacity the oldest entries go.
    @Test func pagesOfCachedJSONAreThePagesRows() throws {
        let store = try Self.store(300)
        defer { store.close() }
        let uid = try UID(parsing: "E004010812345602")
        let filter = RowFilter(uid: uid, since: 1_763_800_000_050)
        func render(_ row: OutboxRow) -> [UInt8] {
            var b: [UInt8] = []
            OutboxJSON.append(.readings, row, gateway: "gw", to: &b)
            return b
        }
        let cache = RowJSONCache(capacity: 60)
        let rows = try store.page(.readings, filter, afterID: 0, limit: 50)
        let first = try store.pageJSON(.readings, filter, afterID: 0, limit: 50, cache: cache, render: render)
        #expect(first.map(\.id) == rows.map(\.id) && first.map(\.json) == rows.map(render))
        #expect(cache.misses == 50 && cache.hits == 0)
        let again = try store.pageJSON(.readings, filter, afterID: 0, limit: 50, cache: cache, render: render)
        #expect(again.map(\.json) == first.map(\.json) && cache.hits == 50)
        // 50 more rows: 40 past the capacity of 60, so the 40 oldest entries went; the page is still right.
        let next = try store.pageJSON(
            .readings, filter, afterID: first.last?.id ?? 0, limit: 50, cache: cache, render: render)
        #expect(next.count == 50 && next.first.map(\.id) == rows.last.map { $0.id + 2 })
        let third = try store.pageJSON(.readings, filter, afterID: 0, limit: 50, cache: cache, render: render)
        #expect(third.map(\.json) == first.map(\.json))
        // Written again: its first 40 rows were gone, and putting them back pushed out the 10 still kept (the
        // oldest entries go first), so all 50 were written again.
        #expect(cache.hits == 50 && cache.misses == 150, "\(cache.hits) hits, \(cache.misses) misses")
        // The migrated store has the covering index and not the one it replaces.
        let indexes = try store.withReader { db throws(StoreError) in
            let s = try db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'readings'")
            var names: [String] = []
            while try s.step() { names.append(s.text(0) ?? "") }
            return names
        }
        #expect(indexes.contains("readings_by_uid_time") && !indexes.contains("readings_by_uid"))
    }
}
