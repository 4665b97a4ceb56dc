/// At most `limit` holders at once; the others wait their turn in the order they came. The pages and the live
/// stream take turns for the work that reads the store and encodes rows, so that a flood of requests cannot take
/// every worker thread from `/healthz`, `/metrics` and the read API.
actor Turns {
    private let limit: Int
    private var holding = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(_ limit: Int) { self.limit = max(1, limit) }

    /// Waits for a turn (returns at once when fewer than `limit` hold one).
    func take() async {
        if holding < limit {
            holding += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Gives the turn back: to the first waiting, or free.
    func give() {
        if waiting.isEmpty { holding -= 1 } else { waiting.removeFirst().resume() }
    }

    /// `body` in a turn.
    func during<T: Sendable>(_ body: @Sendable () async -> T) async -> T {
        await take()
        let value = await body()
        give()
        return value
    }
}
