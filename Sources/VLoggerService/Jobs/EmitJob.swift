import Foundation
import ServiceLifecycle
import VLoggerStore

/// `vlogger run --emit jsonl`: the rows this run commits, also on stdout, one JSON line each (the same JSON as
/// the stream, MQTT and webhooks), for a program that reads the gateway's output (Telegraf's `inputs.execd`,
/// Node-RED's exec node). It stops after the store writer and prints what the last commit brought.
struct EmitJob: Service {
    let store: Store
    let gateway: String
    let wakeup: Wakeup
    let start: (Int64, Int64)

    func run() async {
        var follower = RowFollower(readings: true, events: true, after: start)
        func pass() async -> Bool {
            let batch = await follower.next(store)
            guard !batch.rows.isEmpty else { return false }
            var out: [UInt8] = []
            for (table, row, _) in batch.rows {
                OutboxJSON.append(table, row, gateway: gateway, jsonFields: TableDescription.jsonFields, to: &out)
                out.append(0x0A)
            }
            FileHandle.standardOutput.write(Data(out))
            return batch.full
        }
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let seen = wakeup.current
            if await pass() { continue }
            await cancelWhenGracefulShutdown { await wakeup.wait(after: seen, timeoutMs: 1000) }
        }
        while await pass() {}
    }
}
