import CHost
import FEIG
import Foundation
import ISO15693
import TestDrivers
import Testing
#if canImport(Glibc)
    import Glibc
#endif

/// The host side of the FEIG protocol over a real pseudo-terminal (the kernel's pty: the host opens the slave
/// as a serial port with termios, a thread here plays the reader on the master) and over loopback TCP. The
/// reader's behaviours are the faults a real line shows: a reply, a damaged CRC, silence, a reply cut short, a
/// reply in single bytes, a reply to another command.
@Suite(.serialized, .drivers) struct FEIGLinkTests {
    enum Behaviour { case answer, badCRC, silence, truncate, trickle, otherCommand }

    static let reply = FEIGFrame(
        reply: FEIGCommand.isoHost, status: 0x00,
        data: [0x01, 0x03, 0x00, 0x01, 0x56, 0x34, 0x12, 0x08, 0x01, 0x04, 0xE0], address: 0x01)

    /// Reads one request frame from `fd` (as a reader does), then acts out `behaviour`; returns the request.
    static func play(_ fd: Int32, _ behaviour: Behaviour) -> [UInt8] {
        var got: [UInt8] = []
        var byte: UInt8 = 0
        while FEIGFrame.expectedLength(got[...]).map({ got.count < $0 }) ?? true {
            guard read(fd, &byte, 1) == 1 else { break }
            got.append(byte)
        }
        var out = reply.encoded()
        switch behaviour {
        case .answer: _ = write(fd, out, out.count)
        case .badCRC:
            out[out.count - 1] ^= 0x01
            _ = write(fd, out, out.count)
        case .silence: break
        case .truncate: _ = write(fd, out, out.count - 4)
        case .trickle:
            for b in out {
                var b = b
                _ = write(fd, &b, 1)
                usleep(2000)
            }
        case .otherCommand:
            let other = FEIGFrame(reply: 0x65, status: 0x00, address: 0x01).encoded()
            _ = write(fd, other, other.count)
        }
        return got
    }

    static let request = FEIGFrame(request: FEIGCommand.isoHost, data: [0x01, 0x00], address: 0x01)

    /// Runs every behaviour against a host over the link `open` makes, the reader played on `readerFD()`.
    static func check(open: () throws -> FDLink, readerFD: () throws -> Int32) throws {
        for behaviour in [Behaviour.answer, .badCRC, .silence, .truncate, .trickle, .otherCommand] {
            let link = try open()
            defer { link.close() }
            let fd = try readerFD()
            let host = FEIGHost(link: link, responseTimeoutMs: 300, interCharacterTimeoutMs: 150)
            nonisolated(unsafe) var seen: [UInt8] = []
            let done = DispatchSemaphore(value: 0)
            Thread {
                seen = play(fd, behaviour); done.signal()
            }.start()
            let result = Result { () throws(FEIGLinkError) in try host.transact(request) }
            done.wait()
            #expect(seen == request.encoded(), "\(behaviour): the reader got \(Hex.format(seen))")
            switch (behaviour, result) {
            case (.answer, .success(let r)), (.trickle, .success(let r)):
                #expect(r == reply, "\(behaviour)")
            case (.badCRC, .failure(.frame(.badCRC))), (.silence, .failure(.noAnswer(300))),
                (.truncate, .failure(.incomplete(got: _, expected: reply.encoded().count))),
                (.otherCommand, .failure(.unexpectedReply)):
                break
            default:
                Issue.record("\(behaviour): \(result)")
            }
            if case .failure(let e) = result { #expect(!e.description.isEmpty) }
        }
    }

    @Test func overAPseudoTerminal() throws {
        var master: Int32 = -1
        try Self.check(
            open: {
                if master >= 0 { close(master) }
                var name = [CChar](repeating: 0, count: 128)
                master = vlogger_open_pty(&name, name.count)
                guard master >= 0 else {
                    throw FEIGLinkError.open("no pseudo-terminal: \(String(cString: strerror(errno)))")
                }
                return try FDLink.serial(
                    path: String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                    baud: 38400, parity: .even)
            }, readerFD: { master })
        close(master)
    }

    @Test func overLoopbackTCP() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, len) }
        }
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &len) }
        }
        listen(listener, 4)
        // Closed once only (below, or here when a check throws): a second close would close whatever another test
        // opened meanwhile under the same number.
        var listening = true
        defer { if listening { close(listener) } }
        let port = Int(UInt16(bigEndian: addr.sin_port))
        var accepted: Int32 = -1
        try Self.check(
            open: {
                if accepted >= 0 { close(accepted) }
                let link = try FDLink.tcp(host: "127.0.0.1", port: port)
                accepted = accept(listener, nil, nil)
                if accepted >= 0 { _ = fcntl(accepted, F_SETFD, FD_CLOEXEC) }
                return link
            }, readerFD: { accepted })
        close(accepted)
        // Nothing listening: an open error that names the address.
        close(listener)
        listening = false
        #expect(throws: FEIGLinkError.self) { try FDLink.tcp(host: "127.0.0.1", port: port, timeoutMs: 500) }
    }

    @Test func aFileThatIsNotASerialPortIsRefused() {
        do {
            _ = try FDLink.serial(path: "/dev/null")
            Issue.record("/dev/null opened as a serial port")
        } catch {
            #expect(error.description.contains("/dev/null is not a serial port"), "\(error)")
        }
        #expect(
            throws: FEIGLinkError.open(
                "/dev/ttyS0: 1200 baud is not one of 4800, 9600, 19200, 38400, 57600, 115200, 230400")
        ) {
            try FDLink.serial(path: "/dev/ttyS0", baud: 1200)
        }
    }
}
