import DriverFEIG
import DriverLibNFC
import DriverPCSC
import DriverSim
import Readers

/// The reader drivers this program links, registered once at start (before the arguments are parsed: help texts
/// list them), the way swift-log's backend is chosen. The first is the default driver. A new driver is a target
/// under Sources/Drivers and one entry here.
let linkedDrivers: [any ReaderDriver] = [SimulatorDriver(), PCSCDriver(), LibNFCDriver(), FEIGDriver()]

extension VLogger {
    static func main() async {
        ReaderDrivers.bootstrap(linkedDrivers)
        await main(nil)
    }
}
