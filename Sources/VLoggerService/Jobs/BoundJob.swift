import Dispatch
import Foundation
import ServiceLifecycle

/// Returns when every polling job has done its cycles or duration (--cycles, --duration), which shuts the
/// group down.
struct BoundJob: Service {
    let jobs: [PollingJob]

    func run() async {
        await withTaskGroup(of: Void.self) { group in
            for j in jobs {
                group.addTask { for await _ in j.finished.stream.cancelOnGracefulShutdown() {} }
            }
        }
    }
}
