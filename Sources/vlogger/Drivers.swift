import LinkedDrivers
import Readers

extension VLogger {
    /// Registers the linked reader drivers before the arguments are parsed (help texts list them), the way
    /// swift-log's backend is chosen once at start.
    static func main() async {
        ReaderDrivers.bootstrap(LinkedDrivers.all)
        await main(nil)
    }
}
