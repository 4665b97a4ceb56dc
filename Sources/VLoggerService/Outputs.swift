import Logging
import VLoggerCore
import VLoggerOutbox
import VLoggerStore

extension Gateway {
    /// Every output the configuration enables, each made by its own kind (`OutputKinds`): the service knows
    /// no kind of output.
    /// `readerUp` says which readers work (a Sparkplug node's `Reader/<id>/Up`).
    public static func outputs(
        _ config: AgentConfig, store: Store, logger: Logger,
        readerUp: @escaping @Sendable () -> [String: Bool] = { [:] }, probe: Bool = false
    ) throws -> [Output] {
        let context = OutputContext(
            gatewayID: config.gatewayID, site: config.site,
            readers: config.readers.map { OutputReader(id: $0.id, location: $0.location) }, fields: config.fieldInfos,
            store: store, logger: logger, readerUp: readerUp, probe: probe)
        return try config.outputs.consumers.map { try $0.makeOutput(context) }
    }
}

extension Gateway {
    /// `vlogger doctor`'s check of each output's destination at the protocol level (the kinds that have one: MQTT
    /// brokers log in with the configured TLS files and credentials). Nothing is written to the store.
    public static func probeOutputs(_ config: AgentConfig) async -> [OutputProbe] {
        var context = OutputContext(gatewayID: config.gatewayID, site: config.site, probe: true)
        context.storePath = config.storePath
        var out: [OutputProbe] = []
        for o in config.outputs {
            if let p = await o.doctorProbe(context) { out.append(p) }
        }
        return out
    }
}
