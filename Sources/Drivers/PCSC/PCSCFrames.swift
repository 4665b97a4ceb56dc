import ISO15693

/// The pseudo-APDUs of PC/SC 2.02 Part 3 that carry ISO 15693 frames, as values (no I/O): the driver builds
/// and parses them, the test bench's virtual card parses and answers them. Facts:
/// `docs/reference/reader-paths.md` §2.2–2.3 (PC/SC Part 3 via wsrf2009/contactless-driver `pcsc.h`, the
/// ACR1552 driver in VivoKey/ntag5sensor, Identiv uTrust 3720F manual).
public enum PCSC {
    /// One BER-TLV data object.
    public struct DataObject: Equatable, Sendable {
        public var tag: UInt16
        public var value: [UInt8]
        public init(_ tag: UInt16, _ value: [UInt8]) {
            self.tag = tag
            self.value = value
        }

        public var encoded: [UInt8] {
            var out: [UInt8] = tag > 0xFF ? [UInt8(tag >> 8), UInt8(tag & 0xFF)] : [UInt8(tag)]
            if value.count < 0x80 {
                out.append(UInt8(value.count))
            } else if value.count <= 0xFF {
                out += [0x81, UInt8(value.count)]
            } else {
                out += [0x82, UInt8(value.count >> 8), UInt8(value.count & 0xFF)]
            }
            return out + value
        }
    }

    // Data object tags (PC/SC 2.02 Part 3).
    public static let startSession: UInt16 = 0x81, endSession: UInt16 = 0x82, switchProtocol: UInt16 = 0x8F
    public static let timer: UInt16 = 0x5F46, transceive: UInt16 = 0x95
    public static let genericStatus: UInt16 = 0xC0, validBits: UInt16 = 0x92, responseStatus: UInt16 = 0x96,
        iccResponse: UInt16 = 0x97

    /// Function (P2) of `FF C2 00 P2`.
    public enum Function: UInt8, Sendable {
        case manageSession = 0x00, transparentExchange = 0x01, switchProtocol = 0x02
    }

    /// Generic status words inside `C0 03 <DO#> SW1 SW2`.
    public static let ok: UInt16 = 0x9000, noResponseFromICC: UInt16 = 0x6401, noResponseFromIFD: UInt16 = 0x6400
    public static let doNotSupported: UInt16 = 0x6A81

    /// Response status bits (DO 96, first byte).
    public static let statusCRC: UInt8 = 0x01, statusCollision: UInt8 = 0x02, statusParity: UInt8 = 0x04,
        statusFraming: UInt8 = 0x08

    /// `FF C2 00 P2 Lc <data objects> 00`.
    public static func apdu(_ function: Function, _ objects: [DataObject]) -> [UInt8] {
        let data = objects.flatMap(\.encoded)
        return [0xFF, 0xC2, 0x00, function.rawValue, UInt8(truncatingIfNeeded: data.count)] + data + [0x00]
    }

    /// Start a transparent session: `FF C2 00 00 02 81 00 00`.
    public static var startSessionAPDU: [UInt8] { apdu(.manageSession, [DataObject(startSession, [])]) }
    /// End it: `FF C2 00 00 02 82 00 00`.
    public static var endSessionAPDU: [UInt8] { apdu(.manageSession, [DataObject(endSession, [])]) }
    /// Switch to ISO 15693 layer 3: `FF C2 00 02 04 8F 02 02 03 00`.
    public static var iso15693APDU: [UInt8] { apdu(.switchProtocol, [DataObject(switchProtocol, [0x02, 0x03])]) }

    /// A transceive of one ISO 15693 frame (without CRC: the reader adds and checks it), with a timer DO
    /// (microseconds, 4 bytes big-endian, as the ACR1552 driver sends it) when `timeoutMicroseconds` is set.
    public static func exchangeAPDU(_ frame: [UInt8], timeoutMicroseconds: UInt32? = nil) -> [UInt8] {
        var objects: [DataObject] = []
        if let t = timeoutMicroseconds {
            objects.append(
                DataObject(timer, [UInt8(t >> 24), UInt8((t >> 16) & 0xFF), UInt8((t >> 8) & 0xFF), UInt8(t & 0xFF)]))
        }
        objects.append(DataObject(transceive, frame))
        return apdu(.transparentExchange, objects)
    }

    /// Parses BER-TLV data objects (1- or 2-byte tags; 1-, 2- or 3-byte lengths).
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(FrameError) -> [DataObject] {
        var out: [DataObject] = []
        var i = bytes.startIndex
        while i < bytes.endIndex {
            var tag = UInt16(bytes[i])
            i += 1
            if tag & 0x1F == 0x1F {
                guard i < bytes.endIndex else { throw .truncated(what: "data object tag", needed: 2, got: 1) }
                tag = tag << 8 | UInt16(bytes[i])
                i += 1
            }
            guard i < bytes.endIndex else {
                throw .truncated(what: "length of data object \(String(tag, radix: 16))", needed: 1, got: 0)
            }
            var length = Int(bytes[i])
            i += 1
            if length == 0x81 || length == 0x82 {
                let n = length - 0x80
                guard i + n <= bytes.endIndex else {
                    throw .truncated(
                        what: "long length of data object \(String(tag, radix: 16))", needed: n, got: bytes.endIndex - i
                    )
                }
                length = bytes[i..<(i + n)].reduce(0) { $0 << 8 | Int($1) }
                i += n
            } else if length > 0x80 {
                throw .invalidField(
                    "data object \(String(tag, radix: 16)): length form 0x\(String(length, radix: 16)) is not used here"
                )
            }
            guard i + length <= bytes.endIndex else {
                throw .truncated(what: "data object \(String(tag, radix: 16))", needed: length, got: bytes.endIndex - i)
            }
            out.append(DataObject(tag, Array(bytes[i..<(i + length)])))
            i += length
        }
        return out
    }

    /// The outcome of a transparent exchange, read from the reader's answer.
    public enum Outcome: Equatable, Sendable {
        /// The tag's answer (flags byte and data; CRC already checked and removed by the reader).
        case answer([UInt8])
        /// No answer from the tag (`C0 03 xx 64 01`, or no DO 97).
        case noAnswer
        /// DO 96 flagged a CRC, collision, parity or framing error.
        case rfError(status: UInt8)
        /// The reader refused a data object or failed (its generic status word and the failing DO number).
        case readerError(sw: UInt16, object: UInt8)
    }

    /// Reads the answer to `FF C2 …`: the outer status word, then C0, 96 and 97.
    public static func outcome(of response: [UInt8]) throws(FrameError) -> Outcome {
        let (body, sw) = try split(response)
        guard sw == ok else { return .readerError(sw: sw, object: 0) }
        let objects = try parse(body)
        if let c0 = objects.first(where: { $0.tag == genericStatus }) {
            guard c0.value.count == 3 else {
                throw .wrongLength(what: "C0 generic status", expected: "3", got: c0.value.count)
            }
            let inner = UInt16(c0.value[1]) << 8 | UInt16(c0.value[2])
            if inner == noResponseFromICC { return .noAnswer }
            if inner != ok { return .readerError(sw: inner, object: c0.value[0]) }
        }
        if let s = objects.first(where: { $0.tag == responseStatus }), let st = s.value.first, st & 0x0F != 0 {
            return .rfError(status: st)
        }
        if let answer = objects.first(where: { $0.tag == iccResponse }) { return .answer(answer.value) }
        return .noAnswer
    }

    /// The generic status DO `C0 03 <DO#> SW1 SW2`.
    public static func status(_ sw: UInt16, object: UInt8 = 0) -> DataObject {
        DataObject(genericStatus, [object, UInt8(sw >> 8), UInt8(sw & 0xFF)])
    }

    /// The synthetic ATR of an ISO 15693 tag in a PC/SC reader (Part 3 storage card):
    /// `3B 8F 80 01 80 4F 0C A0 00 00 03 06 0B <card name 2 bytes> 00 00 00 00 TCK`, TCK = XOR of T0….
    public static func atr(cardName: UInt16) -> [UInt8] {
        var b: [UInt8] = [
            0x3B, 0x8F, 0x80, 0x01, 0x80, 0x4F, 0x0C, 0xA0, 0x00, 0x00, 0x03, 0x06, 0x0B,
            UInt8(cardName >> 8), UInt8(cardName & 0xFF), 0x00, 0x00, 0x00, 0x00,
        ]
        b.append(b.dropFirst().reduce(0, ^))
        return b
    }

    /// Card names of the ATR by IC manufacturer (`pcsc-tools` smartcard_list: 0x0014 NXP ICODE, 0x0012 TI
    /// Tag-it, 0x0013 ST, 0x000E Infineon, 0x0000 EM).
    public static func cardName(for manufacturer: ManufacturerCode) -> UInt16 {
        switch manufacturer.rawValue {
        case 0x04: return 0x0014
        case 0x07: return 0x0012
        case 0x02: return 0x0013
        case 0x05: return 0x000E
        default: return 0x0000
        }
    }
}
