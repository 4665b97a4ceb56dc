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

    public func handle(_ e: TraceEvent) {
        total = total + e.airTime
        let time = e.airTime.description.padding(toLength: 10, withPad: " ", startingAt: 0)
        switch e.direction {
        case .readerToTag:
            let body = Array(e.bytes.dropLast(2))
            let request = try? Request.decode(body)
            lastRequest = request
            inventorySlot = 0
            frame(">>", e.bytes, time, request?.summary ?? "undecodable request")
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

    private func frame(_ arrow: String, _ bytes: [UInt8], _ time: String, _ meaning: String) {
        let n = Self.bytesPerLine
        let chunks = stride(from: 0, to: max(bytes.count, 1), by: n).map { Array(bytes[$0..<min($0 + n, bytes.count)]) }
        emit("\(arrow) \(Hex.format(chunks[0]).padding(toLength: 44, withPad: " ", startingAt: 0)) \(time) \(meaning)")
        for c in chunks.dropFirst() { emit("   \(Hex.format(c))") }
    }
}
