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
}
