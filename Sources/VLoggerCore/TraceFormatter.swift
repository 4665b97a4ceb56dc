import ISO15693
import Readers

/// Turns reader trace events into lines: direction, bytes as on air (CRC included), air time, meaning.
/// Answers are decoded against the request they answer.
public final class TraceFormatter {
    private var lastRequest: Request?
    private var inventorySlot = 0
    private let emit: (String) -> Void
    public private(set) var total: AirTime = .zero

    public init(emit: @escaping (String) -> Void) { self.emit = emit }

    /// A request frame as the trace shows it: the bytes of a password (NXP SET PASSWORD's XORed value — with the
    /// random number the trace shows too, the password itself —, WRITE PASSWORD, ENABLE PRIVACY, DESTROY; ST
    /// PRESENT and WRITE PASSWORD) replaced by `**`, the CRC dropped with them (it would give them away).
    static func masked(_ onAir: [UInt8]) -> (bytes: [UInt8], hidden: Int) {
        guard onAir.count >= 5 else { return (onAir, 0) }
        let flags = onAir[0], code = onAir[1], maker = onAir[2]
        let start = 3 + (flags & 0x20 != 0 && flags & 0x04 == 0 ? 8 : 0)  // addressed: the UID follows
        let secret: Range<Int>?
        switch (maker, code) {
        case (0x04, 0xB3), (0x04, 0xB4): secret = (start + 1)..<(start + 5)  // password id, 4 bytes
        case (0x04, 0xB9), (0x04, 0xBA): secret = start..<(start + 4)
        case (0x02, 0xB3), (0x02, 0xB1): secret = (start + 1)..<(onAir.count - 2)  // password number, n bytes
        default: secret = nil
        }
        guard let secret, secret.lowerBound < secret.upperBound, secret.upperBound <= onAir.count - 2 else {
            return (onAir, 0)
        }
        return (Array(onAir[..<secret.lowerBound]), onAir.count - secret.lowerBound)
    }

    public func handle(_ e: TraceEvent) {
        total = total + e.airTime
        let time = e.airTime.description.padding(toLength: 10, withPad: " ", startingAt: 0)
        switch e.direction {
        case .readerToTag:
            let body = Array(e.bytes.dropLast(2))
            let request = try? Request.decode(body)
            lastRequest = request
            inventorySlot = 0
            let shown = Self.masked(e.bytes)
            frame(
                ">>", shown.bytes, time, request?.summary ?? "undecodable request",
                hidden: shown.hidden > 0 ? "** (\(shown.hidden) bytes)" : nil)
            if let note = e.note { emit("   \(note)") }
        case .slotMarker:
            inventorySlot += 1
            emit(
                "EOF \("(slot \(inventorySlot))".padding(toLength: 43, withPad: " ", startingAt: 0)) \(time) next inventory slot"
            )
        case .tagToReader:
            var meaning = "answer"
            if !CRC16.isValid(e.bytes) {
                meaning = "CRC error"
            } else if let request = lastRequest {
                do { meaning = try Response.decode(Array(e.bytes.dropLast(2)), to: request).summary } catch {
                    meaning = "malformed: \(error)"
                }
            }
            frame("<<", e.bytes, time, meaning)
            if let note = e.note { emit("   \(note)") }
        case .nothing:
            emit("-- \((e.note ?? "").padding(toLength: 44, withPad: " ", startingAt: 0)) \(time)")
        }
    }

    /// Bytes per line of a frame: 14 fit the 44-character column. A longer frame goes on in more lines
    /// under the first (every byte is shown, the CRC too).
    static let bytesPerLine = 14

    private func frame(_ arrow: String, _ bytes: [UInt8], _ time: String, _ meaning: String, hidden: String? = nil) {
        let n = Self.bytesPerLine
        var chunks = stride(from: 0, to: max(bytes.count, 1), by: n).map {
            Hex.format(Array(bytes[$0..<min($0 + n, bytes.count)]))
        }
        if let hidden, chunks[chunks.count - 1].count + hidden.count < 44 {
            chunks[chunks.count - 1] += " " + hidden
        } else if let hidden {
            chunks.append(hidden)
        }
        emit("\(arrow) \(chunks[0].padding(toLength: 44, withPad: " ", startingAt: 0)) \(time) \(meaning)")
        for c in chunks.dropFirst() { emit("   \(c)") }
    }
}
