import CLibNFC
import Readers
import ISO15693

/// libnfc devices. libnfc (Debian libnfc-dev 1.8) has no ISO 15693 modulation (`nfc_modulation_type` ends
/// at NMT_ISO14443BICLASS) and its PN53x-based readers have no ISO 15693 radio, so a libnfc device can be
/// listed and opened but never used as an ISO 15693 reader: `open` says so and names what works instead.
/// See `docs/reference/reader-paths.md` §1.
public enum LibNFC {
    public static let unsupportedMessage = """
        libnfc cannot carry ISO 15693: its API has no ISO 15693 modulation and PN53x readers (ACR122U, PN532) \
        have no ISO 15693 radio. Use a PC/SC reader with transparent exchange (ACS ACR1552U, HID OMNIKEY 5022) \
        (--reader pcsc), a FEIG reader (--reader feig), or --reader sim for the simulator.
        """

    /// The libnfc version string.
    public static var version: String { String(cString: nfc_version()) }

    /// Connection strings of the devices libnfc finds (scanning USB and any configured devices).
    public static func listDevices(max: Int = 16) throws(ReaderError) -> [String] {
        var context: OpaquePointer?
        nfc_init(&context)
        guard let context else {
            throw ReaderError.device("libnfc failed to initialise (nfc_init); check libnfc's configuration in /etc/nfc")
        }
        defer { nfc_exit(context) }
        let size = vlogger_nfc_connstring_size()
        var buffer = [CChar](repeating: 0, count: size * max)
        let found = buffer.withUnsafeMutableBufferPointer { vlogger_nfc_list_devices(context, $0.baseAddress, max) }
        guard found > 0 else { return [] }
        return (0..<Int(found)).map { i in
            let bytes = buffer[(i * size)..<((i + 1) * size)].prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// Opens a libnfc device by connection string to report what it is, then refuses to use it for ISO
    /// 15693 with the reason. Throws `ReaderError.device` when the device cannot be opened at all.
    public static func openAsISO15693Reader(connstring: String?) throws(ReaderError) -> Never {
        var context: OpaquePointer?
        nfc_init(&context)
        guard let context else { throw ReaderError.device("libnfc failed to initialise (nfc_init)") }
        defer { nfc_exit(context) }
        let device: OpaquePointer? = connstring.map { vlogger_nfc_open(context, $0) } ?? vlogger_nfc_open(context, nil)
        guard let device else {
            throw ReaderError.device(
                "libnfc could not open \(connstring.map { "device '\($0)'" } ?? "any device"): no such device or no permission. "
                    + unsupportedMessage)
        }
        let deviceName = String(cString: nfc_device_get_name(device))
        nfc_close(device)
        throw ReaderError.notSupported("libnfc opened '\(deviceName)', but " + unsupportedMessage)
    }
}

/// libnfc: devices are listed, but none can carry ISO 15693 (see LibNFC).
public struct LibNFCDriver: ReaderDriver {
    public init() {}
    public var name: String { "libnfc" }
    public var summary: String { "libnfc devices: listed only; libnfc cannot carry ISO 15693" }
    public var deviceHelp: String? { "a libnfc connection string" }
    public var capabilities: DriverCapabilities { [] }

    public func open(field: String?, device: String?, options: DriverOptions) throws -> OpenedReader {
        try LibNFC.openAsISO15693Reader(connstring: device)
    }

    public func devices(field: String?, configured: [String]) throws -> [DeviceListing] {
        let found = try LibNFC.listDevices()
        if found.isEmpty { return [DeviceListing(name: "-", detail: "no devices found (libnfc \(LibNFC.version))")] }
        return found.map { DeviceListing(name: $0, detail: "ISO 15693: no (libnfc has no ISO 15693 modulation)") }
    }
}
