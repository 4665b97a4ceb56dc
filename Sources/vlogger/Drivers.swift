import LinkedDrivers
import LinkedOutputs
import Readers
import VLoggerOutbox

extension VLogger {
    /// Registers the linked reader drivers and output kinds before the arguments are parsed (help texts list
    /// them), the way swift-log's backend is chosen once at start.
    static func main() async {
        ReaderDrivers.bootstrap(LinkedDrivers.all)
        OutputKinds.bootstrap(LinkedOutputs.all)
        await main(nil)
    }
}
