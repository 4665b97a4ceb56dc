import FEIG
import ISO15693
import Readers

/// FEIG OBID ID ISC readers over serial or TCP (`device`: see `FEIGDevice`).
public struct FEIGDriver: ReaderDriver {
    public init() {}
    public var name: String { "feig" }
    public var summary: String {
        "FEIG OBID ID ISC readers (ID ISC.MR101/MR102, LR1002, LRU…): host protocol over a serial port (/dev/ttyUSB0,baud=38400,parity=even) or tcp://HOST[:10001]"
    }
    public var deviceHelp: String? {
        "a serial port (/dev/ttyUSB0,baud=38400,parity=even,address=0) or tcp://HOST[:10001]"
    }
    public var capabilities: DriverCapabilities { [.iso15693, .readerSideInventory, .bufferedRead, .hostProtocol] }

    public func open(field: String?, device: String?, options: DriverOptions) throws -> OpenedReader {
        guard let device else {
            throw ReaderError.device(
                "the feig driver needs a device: a serial port (/dev/ttyUSB0) or tcp://HOST[:PORT]")
        }
        let parsed: FEIGDevice
        do { parsed = try FEIGDevice.parse(device) } catch { throw ReaderError.device("\(error)") }
        return OpenedReader(reader: try FEIGReader.open(parsed))
    }

    /// FEIG readers announce themselves nowhere: each configured device is asked ([0x66] Get Reader Info).
    public func devices(field: String?, configured: [String]) throws -> [DeviceListing] {
        if !configured.isEmpty { return configured.map(Self.describe(device:)) }
        return [
            DeviceListing(
                name: "-",
                detail:
                    "FEIG readers are not discovered; configure one ([[reader]] driver = \"feig\", device = \"/dev/ttyUSB0\" or \"tcp://HOST\") or name it (`vlogger devices --reader feig --device tcp://HOST`) and it is asked"
            )
        ]
    }

    /// What the reader at `device` says about itself.
    public static func describe(device: String) -> DeviceListing {
        do {
            let parsed = try FEIGDevice.parse(device)
            let reader = FEIGReader(device: parsed)
            defer { reader.close() }
            let info = try reader.identify()
            return DeviceListing(name: "\(parsed)", detail: "\(info.summary)  ISO 15693: through [0xB0] host commands")
        } catch {
            return DeviceListing(name: device, detail: "not answering: \(error)", unanswered: true)
        }
    }

    public func checkDevice(_ device: String?) -> String? {
        guard let device else {
            return
                "a feig reader needs device = \"/dev/ttyUSB0\" (a serial port, options after commas: baud=38400,parity=even,address=0) or \"tcp://HOST[:10001]\""
        }
        do { _ = try FEIGDevice.parse(device) } catch { return "\(error)" }
        return nil
    }

    public func remote(device: String) -> (host: String, port: Int)? {
        guard let d = try? FEIGDevice.parse(device), case let .tcp(host, port) = d.port else { return nil }
        return (host, port)
    }

    public var sampleReader: String? {
        """
        driver = "feig"
        device = "tcp://192.0.2.21"       # EDIT: tcp://HOST[:10001], or a serial port /dev/ttyUSB0,baud=38400
        """
    }

    /// A host-protocol frame, explained field by field (`reply`: the reader's answer, which has a STATUS byte).
    public func explainHostFrame(_ bytes: [UInt8], reply: Bool) throws -> [String] {
        try FEIGFrame.decode(bytes, direction: reply ? .reply : .request).explanation
    }
}
