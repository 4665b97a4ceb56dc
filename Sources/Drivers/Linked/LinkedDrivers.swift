import DriverFEIG
import DriverLibNFC
import DriverPCSC
import DriverPN5180
import DriverSim
import Readers

/// The reader drivers the program links, in the order help texts list them (the first is the default driver): the
/// one list the executable registers at start, and the tests and the fuzzers register too. A new driver is a target
/// under Sources/Drivers and one entry here.
public enum LinkedDrivers {
    public static let all: [any ReaderDriver] = [
        SimulatorDriver(), PCSCDriver(), LibNFCDriver(), FEIGDriver(), PN5180Driver(),
    ]
}
