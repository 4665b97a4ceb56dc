import Foundation
import Readers

#if canImport(Glibc)
    import Glibc
#endif

/// NXP PN5180 boards on a host's SPI bus (a Raspberry Pi's, typically): `--reader pn5180 --device
/// spi:/dev/spidev0.0,busy=gpiochip0:25,reset=gpiochip0:24,nss=gpiochip0:23`. docs/readers.md has the wiring.
public struct PN5180Driver: ReaderDriver {
    public init() {}
    public var name: String { "pn5180" }
    public var summary: String {
        "NXP PN5180 on SPI (Linux spidev and GPIO lines); 16-slot inventory with EOF slot markers"
    }
    public var capabilities: DriverCapabilities { [.iso15693, .slotMarkers] }
    public var deviceHelp: String? { PN5180Device.form }

    public func open(field: String?, device: String?, options: DriverOptions) throws -> OpenedReader {
        guard let device else { throw ReaderError.device("the pn5180 driver needs a device: \(PN5180Device.form)") }
        let d = try PN5180Device.parse(device)
        let pins = try LinuxPN5180Pins(d)
        let reader = PN5180Reader(link: PN5180Link(pins: pins), modulation: d.modulation, name: "PN5180 (\(d.spi))")
        do { try reader.fieldOn() } catch {
            pins.close()
            throw error
        }
        return OpenedReader(reader: reader)
    }

    public func checkDevice(_ device: String?) -> String? {
        guard let device else { return "the pn5180 driver needs a device: \(PN5180Device.form)" }
        do { _ = try PN5180Device.parse(device) } catch { return "\(error)" }
        return nil
    }

    /// The device nodes exist and this user may open them (the `spi` and `gpio` groups).
    public func preflight(field: String?, device: String?) -> String? {
        guard let device, let d = try? PN5180Device.parse(device) else { return nil }
        // The SPI bus first (enabling SPI is the first step of the wiring), then each GPIO chip once.
        var paths: [String] = []
        for p in [d.spi, d.busy.chipPath, d.reset.chipPath] + (d.nss.map { [$0.chipPath] } ?? [])
        where !paths.contains(p) {
            paths.append(p)
        }
        for p in paths {
            guard FileManager.default.fileExists(atPath: p) else {
                return "\(p) does not exist"
                    + (p.contains("spidev") ? " (enable SPI: dtparam=spi=on in config.txt, or raspi-config)" : "")
            }
            guard access(p, R_OK | W_OK) == 0 else {
                return "\(p) is not readable and writable by this user (add it to the group that owns it: spi or gpio)"
            }
        }
        return nil
    }

    public func devices(field: String?, configured: [String]) throws -> [DeviceListing] {
        // PN5180 boards do not announce themselves: the configured ones are opened and asked their version; the
        // SPI buses present are listed.
        var out: [DeviceListing] = []
        for c in configured {
            do {
                let d = try PN5180Device.parse(c)
                let pins = try LinuxPN5180Pins(d)
                defer { pins.close() }
                let reader = PN5180Reader(link: PN5180Link(pins: pins), modulation: d.modulation, name: c)
                try reader.fieldOn()
                try? reader.fieldOff()
                out.append(DeviceListing(name: c, detail: "PN5180 firmware \(reader.firmware ?? "?")  ISO 15693: yes"))
            } catch {
                out.append(DeviceListing(name: c, detail: "not answering: \(error)"))
            }
        }
        let buses = ((try? FileManager.default.contentsOfDirectory(atPath: "/dev")) ?? []).filter {
            $0.hasPrefix("spidev")
        }.sorted()
        if out.isEmpty {
            out.append(
                DeviceListing(
                    name: buses.isEmpty ? "-" : buses.map { "/dev/\($0)" }.joined(separator: ", "),
                    detail: buses.isEmpty
                        ? "no SPI bus (/dev/spidev*): enable SPI (dtparam=spi=on) to use a PN5180"
                        : "SPI buses; a PN5180 is not discoverable: configure its device (\(PN5180Device.form))"))
        }
        return out
    }

    public func openAdvice(device: String?) -> String {
        "check the device string (\(PN5180Device.form)), that SPI is enabled, the wiring (BUSY, RST, NSS), and that the user is in the spi and gpio groups (`vlogger doctor`)"
    }

    public var sampleReader: String? {
        """
        driver = "pn5180"
        device = "spi:/dev/spidev0.0,busy=gpiochip0:25,reset=gpiochip0:24,nss=gpiochip0:23"   # EDIT: your wiring
        """
    }
}
