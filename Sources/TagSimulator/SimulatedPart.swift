import ISO15693
import SensorTags

/// What a chip's part gives for a command it knows.
public enum PartAnswer: Sendable, Equatable {
    /// The answer's body (flags added by the tag).
    case answer(ResponseBody)
    /// Its command, but not one the chip carries out: answered as the chip's profile answers an unsupported command.
    case unsupported
}

/// A part of a chip beyond ISO 15693's commands, as the simulator plays it: a sensor tag's logger and its custom
/// commands, a firmware that acts on a write. A simulated tag asks its parts before it calls a custom command
/// unsupported, after its blocks were written, and before ISO decoding for a frame a part reads in a form of its own;
/// it names none of them. A new sensor kind is its decoder (`SensorTags`), one type conforming to this here, and one
/// line in `SimulatedParts.builtIn`.
public protocol SimulatedPart: AnyObject {
    /// The part a tag has, from its image (the `sensorLog` kind) or its profile (the chip); nil: not this tag's.
    static func make(for tag: SimulatedTag) -> Self?
    /// Attached to `tag` (a logger writes its bookkeeping into the tag's memory).
    func attached(to tag: SimulatedTag)
    /// Its answer to a custom (or proprietary) command; nil: not its command.
    func answer(_ request: Request, tag: SimulatedTag) -> PartAnswer?
    /// Its answer to a raw frame (flags, code, … without CRC) that ISO decoding cannot read (a frame form of its own):
    /// the whole answer without CRC; nil: not its frame.
    func rawAnswer(_ body: [UInt8], tag: SimulatedTag) -> [UInt8]?
    /// How long after the reader's frame (t1 included) a raw answer starts.
    var rawAnswerDelay: AirTime { get }
    /// Blocks `first..<first + count` were written from the air (the new data is in the tag's image).
    func written(first: Int, count: Int, tag: SimulatedTag)
}

extension SimulatedPart {
    public func attached(to tag: SimulatedTag) {}
    public func answer(_ request: Request, tag: SimulatedTag) -> PartAnswer? { nil }
    public func rawAnswer(_ body: [UInt8], tag: SimulatedTag) -> [UInt8]? { nil }
    public var rawAnswerDelay: AirTime { .zero }
    public func written(first: Int, count: Int, tag: SimulatedTag) {}
}

/// The parts the simulator knows, tried for every tag it makes.
public enum SimulatedParts {
    public static var builtIn: [any SimulatedPart.Type] {
        [
            FM13Logger.self, SL13ALogger.self, SmarTagMemory.self, RF430Sampler.self,
        ]
    }
}

/// ST's SmarTag firmware's log in an ST25DV's memory (an image with a `sensorLog` of kind smartag): sample i at
/// start + i × interval, laid out when the tag is made. It answers nothing itself (the firmware's log is memory).
public final class SmarTagMemory: SimulatedPart {
    public static func make(for tag: SimulatedTag) -> SmarTagMemory? {
        let image = tag.image
        guard let l = image.sensorLog, l.kind == "smartag", image.blockSize == 4, image.blockCount >= 32 else {
            return nil
        }
        let start = Int64(l.startSeconds), every = Int64(l.intervalSeconds)
        let memory = SmarTag.memory(
            blockCount: image.blockCount, intervalSeconds: Int(l.intervalSeconds), start: start,
            samples: l.celsius.enumerated().map { (start + Int64($0.offset) * every, Int($0.element)) })
        tag.sense(block: 0, bytes: memory)
        return SmarTagMemory()
    }
}

/// An RF430FRL152H's ROM firmware: it samples when block 0 is written with TI's start byte 0x01 (SLOA233 writes
/// `01 00 03 03 01 01 00 40`): here at once, its status "ready" (byte 1 bits 1–0 = 10), block 9 holding the image's
/// ADC values. Other contents of block 0 (an NDEF capability container) are kept.
public final class RF430Sampler: SimulatedPart {
    public static func make(for tag: SimulatedTag) -> RF430Sampler? {
        tag.profile.model == .rf430frl15xh ? RF430Sampler() : nil
    }

    public func written(first: Int, count: Int, tag: SimulatedTag) {
        guard first == 0, tag.image.blocks[0][0] == 0x01 else { return }
        tag.sense(block: 0, byte: 1, bytes: [(tag.image.blocks[0][1] & ~0x03) | 0x02])
    }
}
