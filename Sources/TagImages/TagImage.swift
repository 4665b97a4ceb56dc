import ISO15693

/// Everything a tag stores: the content of a dump file and the state a simulated tag keeps across power
/// cycles. The project's JSON form of it is documented in `Config/demo-field/README.md`.
public struct TagImage: Equatable, Sendable {
    public var uid: UID
    public var dsfid: UInt8
    public var dsfidLocked: Bool
    public var afi: UInt8
    public var afiLocked: Bool
    public var blockSize: Int
    public var icReference: UInt8?
    /// One entry per block, each `blockSize` bytes.
    public var blocks: [[UInt8]]
    /// Per-block lock status (block security status bit 0).
    public var locked: [Bool]
    /// Chip profile id (`ChipProfile.id`); nil when the file names none.
    public var profileID: String?
    /// Whether the tag reported (or the file had) a DSFID and an AFI; a format writes only what is known.
    public var dsfidKnown = true
    public var afiKnown = true
    /// The chip's originality signature as READ SIGNATURE (NXP 0xBD) answers it, 32 bytes; nil when the image has
    /// none (a chip without one, or a dump that did not read it).
    public var signature: [UInt8]?
    /// NXP ICODE passwords the chip holds, by password id (0x01 read, 0x02 write, 0x04 privacy, 0x08 destroy,
    /// 0x10 EAS/AFI), 4 bytes each as written in hex (the simulator checks SET PASSWORD against them).
    public var nxpPasswords: [UInt8: [UInt8]] = [:]
    /// NXP page protection (SLIX2): the protection pointer (blocks below it are the low page, the rest the high
    /// page) and the condition bits (0x01 low read, 0x02 low write, 0x10 high read, 0x20 high write protected by
    /// the read or write password); nil: no page protection.
    public var protectionPointer: UInt8?
    public var protectionCondition: UInt8 = 0
    /// NXP privacy mode (SLIX-L, SLIX2): the chip answers nothing but GET RANDOM NUMBER and SET PASSWORD until the
    /// privacy password is given (for that power-on).
    public var privacy = false
    /// Flipper's SLIX `Capabilities` (`Default`, or `AcceptAllPasswords`: its emulation takes any password); nil when
    /// the file had none.
    public var slixCapabilities: String?
    /// NXP EAS lock and page-protection lock (GET NXP SYSTEM INFO's lock bits b1 and b3; Flipper's `Lock EAS` and
    /// `Lock PPL`); nil when not known.
    public var easLocked: Bool?
    public var protectionLocked: Bool?
    /// ST25DV area security: the seven area registers RFA1SS, ENDA1, RFA2SS, ENDA2, RFA3SS, ENDA3, RFA4SS (nil: the
    /// factory state, one open area) and the RF passwords by number (1–3; 0 the configuration password), 8 bytes each
    /// (a number not given holds the factory value, eight zero bytes).
    public var stAreaRegisters: [UInt8]?
    public var stPasswords: [UInt8: [UInt8]] = [:]
    /// A sensor tag's own log, for the simulator (`"sensorLog"` in the JSON form); nil for other tags.
    public var sensorLog: SensorLogImage?

    public var blockCount: Int { blocks.count }

    public init(
        uid: UID, dsfid: UInt8 = 0, dsfidLocked: Bool = false, afi: UInt8 = 0, afiLocked: Bool = false,
        blockSize: Int, blocks: [[UInt8]], locked: [Bool]? = nil, icReference: UInt8? = nil, profileID: String? = nil
    ) throws(TagImageError) {
        guard (1...32).contains(blockSize) else { throw TagImageError("block size \(blockSize) is outside 1…32 bytes") }
        guard (1...65536).contains(blocks.count) else {
            throw TagImageError("block count \(blocks.count) is outside 1…65536")
        }
        for (i, b) in blocks.enumerated() where b.count != blockSize {
            throw TagImageError(
                "block \(BlockNumber(exactly: i) ?? 0) has \(b.count) bytes, the block size is \(blockSize)")
        }
        let locks = locked ?? Array(repeating: false, count: blocks.count)
        guard locks.count == blocks.count else {
            throw TagImageError("\(locks.count) lock states for \(blocks.count) blocks")
        }
        self.uid = uid
        self.dsfid = dsfid
        self.dsfidLocked = dsfidLocked
        self.afi = afi
        self.afiLocked = afiLocked
        self.blockSize = blockSize
        self.blocks = blocks
        self.locked = locks
        self.icReference = icReference
        self.profileID = profileID
    }

    /// An image of `blocks` without the checks of the public initializer (sizes the caller knows are valid).
    package init(unchecked uid: UID, blockSize: Int, blocks: [[UInt8]], icReference: UInt8?, profileID: String?) {
        self.uid = uid
        dsfid = 0
        dsfidLocked = false
        afi = 0
        afiLocked = false
        self.blockSize = blockSize
        self.blocks = blocks
        locked = Array(repeating: false, count: blocks.count)
        self.icReference = icReference
        self.profileID = profileID
    }

}

/// A tag image file that cannot be read or written; says which file and what is wrong.
public struct TagImageError: Error, CustomStringConvertible, Equatable, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
    package func `in`(_ file: String) -> TagImageError { TagImageError("\(file): \(message)") }
}

/// A logger tag's log as an image keeps it: which kind of logger, its session (start, interval, delay), whether it
/// logs, its battery, the temperatures it has taken, and what a one-shot measurement gives now.
public struct SensorLogImage: Equatable, Sendable {
    public var kind: String
    public var startSeconds: UInt32
    public var intervalSeconds: UInt16
    public var delayMinutes: UInt16 = 0
    public var logging = true
    public var batteryOK = true
    public var celsius: [Double] = []
    public var currentCelsius: Double = 21.25
    /// An SL13A's frame form: its byte order ("msb" or "lsb") and whether it expects the manufacturer byte.
    public var byteOrder = "msb"
    public var manufacturerByte = true
    public init(kind: String, startSeconds: UInt32, intervalSeconds: UInt16) {
        self.kind = kind
        self.startSeconds = startSeconds
        self.intervalSeconds = intervalSeconds
    }
}
