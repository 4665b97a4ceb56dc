import Foundation
import Readers

#if canImport(Glibc)
    import Glibc
#endif

/// PC/SC readers through pcscd: the transparent exchange, HID OMNIKEY's or Identiv's envelope (found by probing), or
/// the storage-card commands; a device string's prefix (`storage:`, `omnikey:`, `identiv:`, `transparent:`) forces one.
public struct PCSCDriver: ReaderDriver {
    public init() {}
    public var name: String { "pcsc" }
    public var summary: String {
        "PC/SC readers through pcscd (transparent exchange, HID OMNIKEY FF 68 or Identiv FF FD, probed; 'storage:', 'omnikey:', 'identiv:' or 'transparent:' before the device forces one)"
    }
    public var deviceHelp: String? {
        "a reader name, part of one, or its index in `vlogger devices` (prefix storage:, omnikey:, identiv: or transparent: to force how ISO 15693 is carried)"
    }
    public var capabilities: DriverCapabilities { [.iso15693] }

    public func open(field: String?, device: String?, options: DriverOptions) throws -> OpenedReader {
        var want = device
        var forced: PCSC.Codec?
        if let d = want, let colon = d.firstIndex(of: ":"), let codec = PCSC.Codec(rawValue: String(d[..<colon])) {
            forced = codec
            want = String(d[d.index(after: colon)...])
            if want?.isEmpty == true { want = nil }
        }
        let reader = PCSCReader(reader: want)
        reader.forcedCodec = forced
        do { try reader.fieldOn() } catch { throw ReaderError.device("PC/SC: \(error)") }
        return OpenedReader(reader: reader)
    }

    public func devices(field: String?, configured: [String]) throws -> [DeviceListing] {
        let names = try PCSCReader.listReaders()
        if names.isEmpty { return [DeviceListing(name: "-", detail: "no PC/SC readers (pcscd lists none)")] }
        return names.enumerated().map { i, name in
            let r = PCSCReader(reader: name)
            r.shareExclusive = true
            defer { try? r.fieldOff() }
            let card = (try? r.cardPresent()) ?? false
            // With a tag presented, the codec the reader answers (probed as a poll would, on an exclusive connection:
            // a reader the service uses is not disturbed); without one, what would be tried first.
            let first = "would try \(PCSC.Codec.probeOrder(readerName: name).first?.label ?? "-") first"
            let codec: String
            if card {
                do { codec = try r.codec().map { "ISO 15693 through \($0.label)" } ?? "ISO 15693: \(first)" } catch {
                    codec = "ISO 15693: not probed (\(error)); \(first)"
                }
            } else {
                codec = "ISO 15693: \(first)"
            }
            return DeviceListing(
                name: "\(i): \(name)", detail: "\(card ? "card present (a tag in the field)" : "no card")  \(codec)")
        }
    }

    /// pcscd must run: its socket (`$PCSCLITE_CSOCK_NAME`, else Debian's /run/pcscd/pcscd.comm) accepts connections.
    public func hostChecks(environment: [String: String]) -> [DriverCheck] {
        let path = environment["PCSCLITE_CSOCK_NAME"] ?? "/run/pcscd/pcscd.comm"
        guard FileManager.default.fileExists(atPath: path) else {
            return [
                DriverCheck(
                    name: "pcscd", passed: false, detail: "no socket at \(path): pcscd is not running",
                    advice: "install and start it: `apt install pcscd && systemctl enable --now pcscd.socket`")
            ]
        }
        if let e = Self.connectUnix(path) {
            return [
                DriverCheck(
                    name: "pcscd", passed: false,
                    detail: "\(path) exists but refuses connections (\(e)): a stale socket or a stopped daemon",
                    advice: "restart it: `systemctl restart pcscd.socket pcscd.service`")
            ]
        }
        return [DriverCheck(name: "pcscd", passed: true, detail: "\(path) accepts connections")]
    }

    public func openAdvice(device: String?) -> String {
        "check the reader is plugged in and listed by `vlogger devices --reader pcsc`, that pcscd runs, and that no other program (the vlogger service: `systemctl stop vlogger`, or use --no-readers) holds it"
    }

    public var sampleReader: String? {
        """
        driver = "pcsc"
        device = "0"                      # EDIT: the reader's name, part of it, or its index (vlogger devices)
        """
    }

    /// nil when a stream connection to the Unix socket succeeds, else why not.
    static func connectUnix(_ path: String) -> String? {
        #if canImport(Glibc)
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { return String(cString: strerror(errno)) }
            defer { close(fd) }
            var addr = sockaddr_un()
            addr.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(path.utf8)
            guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return "path too long" }
            withUnsafeMutableBytes(of: &addr.sun_path) { p in
                for (i, b) in bytes.enumerated() { p[i] = b }
                p[bytes.count] = 0
            }
            let rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            return rc == 0 ? nil : String(cString: strerror(errno))
        #else
            return "not on Linux"
        #endif
    }
}
