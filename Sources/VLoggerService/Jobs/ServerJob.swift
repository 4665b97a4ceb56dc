import ServiceLifecycle
import VLoggerOutbox

/// A server of an output kind (OPC UA) as a service of the group: it serves until the group shuts down.
struct ServerJob: Service {
    let server: any OutputServer

    func run() async throws {
        try await cancelWhenGracefulShutdown { try await server.run() }
    }
}
