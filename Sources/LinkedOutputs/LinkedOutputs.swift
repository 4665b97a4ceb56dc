import VLoggerMQTT
import VLoggerOPCUA
import VLoggerOutbox
import VLoggerSync
import VLoggerWebhook

/// The one list of the output kinds this binary has: the executable registers it at start
/// (`OutputKinds.bootstrap(LinkedOutputs.all)`), the test suites and the fuzzer do too. A new kind of output is a
/// target of its own and one line here.
public enum LinkedOutputs {
    public static var all: [any OutputKind] {
        [SyncOutputKind(), MQTTOutputKind(), WebhookOutputKind(), OPCUAOutputKind()]
    }
}
