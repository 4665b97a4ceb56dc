import ISO15693

/// The two vendor envelopes that carry a raw ISO 15693 frame through a PC/SC reader besides PC/SC 2.02's
/// transparent exchange (`PCSC`), as values (no I/O): the driver builds and reads them, the test bench's virtual card
/// answers them. Facts and how sure each is: `docs/reference/reader-paths.md` §2.6.
extension PCSC {
    /// A PC/SC reader's way of carrying ISO 15693 frames, most capable first (the order the driver probes them).
    public enum Codec: String, Sendable, CaseIterable {
        /// PC/SC 2.02 Part 3 transparent exchange, `FF C2` (ACS ACR1552U and other Part 3 readers).
        case transparent
        /// HID OMNIKEY 5022/5422 (the AViatoR generation): `FF 68 0E 03`.
        case omnikey
        /// Identiv uTrust 3720 F (its "Traverse"): `FF FD`.
        case identiv
        /// Storage-card commands only (`FF CA`, `FF B0`, `FF D6`): every reader, no raw frames.
        case storage

        public var label: String {
            switch self {
            case .transparent: return "PC/SC 2.02 transparent exchange (FF C2)"
            case .omnikey: return "HID OMNIKEY transparent command (FF 68 0E 03)"
            case .identiv: return "Identiv Traverse (FF FD)"
            case .storage: return "storage-card commands only (FF CA, FF B0, FF D6)"
            }
        }

        /// The codecs to try on a reader, in order: the one its name points to first (HID OMNIKEY, Identiv and SCM
        /// readers), then the PC/SC standard, then the other vendor's, the storage-card commands last.
        public static func probeOrder(readerName: String) -> [Codec] {
            let name = readerName.lowercased()
            if name.contains("omnikey") { return [.omnikey, .transparent, .identiv, .storage] }
            if name.contains("identiv") || name.contains("utrust") || name.contains("scm microsystems") {
                return [.identiv, .transparent, .omnikey, .storage]
            }
            return [.transparent, .omnikey, .identiv, .storage]
        }
    }

    /// Status words that say a reader does not know an instruction or its parameters (ISO/IEC 7816-4: 6D00 instruction
    /// not supported, 6E00 class not supported, 6A81 function not supported, 6A86 wrong P1/P2, 6B00 wrong parameters,
    /// 6700 wrong length, 6800/6881/6882 functions in CLA not supported): the envelope is not this reader's.
    public static func refusesEnvelope(_ sw: UInt16) -> Bool {
        [0x6D00, 0x6E00, 0x6A81, 0x6A86, 0x6B00, 0x6700, 0x6800, 0x6881, 0x6882].contains(sw)
    }

    /// The status word at the end of an APDU response and what comes before it.
    static func split(_ response: [UInt8]) throws(FrameError) -> (body: ArraySlice<UInt8>, sw: UInt16) {
        guard response.count >= 2 else { throw .truncated(what: "APDU response", needed: 2, got: response.count) }
        let n = response.count
        return (response[0..<(n - 2)], UInt16(response[n - 2]) << 8 | UInt16(response[n - 1]))
    }

    /// HID OMNIKEY's transparent command: `FF 68 0E 03 Lc 05 00 <timeout, 4 bytes big-endian> 00 00 00 00 <frame>`,
    /// the frame without its CRC (the reader adds it, and checks and strips the answer's). Its answer:
    /// `STS RXB <flags and data> SW1 SW2`.
    public enum Omnikey {
        /// The options byte of every ISO 15693 exchange in the public trace (05).
        public static let options: UInt8 = 0x05

        /// The command for `frame`; `timeoutMicroseconds` 0 leaves the reader's own (the trace's form).
        public static func apdu(_ frame: [UInt8], timeoutMicroseconds: UInt32 = 0) -> [UInt8] {
            let t = timeoutMicroseconds
            let header: [UInt8] = [
                options, 0x00, UInt8(t >> 24), UInt8((t >> 16) & 0xFF), UInt8((t >> 8) & 0xFF), UInt8(t & 0xFF),
                0x00, 0x00, 0x00, 0x00,
            ]
            return [0xFF, 0x68, 0x0E, 0x03, UInt8(truncatingIfNeeded: header.count + frame.count)] + header + frame
        }

        /// Reads an answer. STS 00 with bytes after RXB: the tag's answer. Nothing after RXB: no answer. A non-zero
        /// STS (its values are not published): with bytes after RXB something was heard but not cleanly (a collision
        /// or a damaged answer: `rfError`), without them no answer. Another status word than 90 00 is the reader's.
        public static func outcome(of response: [UInt8]) throws(FrameError) -> Outcome {
            let (body, sw) = try split(response)
            guard sw == ok else { return .readerError(sw: sw, object: 0) }
            guard body.count >= 2 else {
                throw .truncated(what: "OMNIKEY answer (STS, RXB)", needed: 2, got: body.count)
            }
            let sts = body[body.startIndex]
            let answer = Array(body.dropFirst(2))
            if sts != 0 { return answer.isEmpty ? .noAnswer : .rfError(status: sts) }
            return answer.isEmpty ? .noAnswer : .answer(answer)
        }

        /// The frame inside a command (the test bench's side); nil: not an `FF 68 0E 03` command of this form.
        public static func frame(in apdu: [UInt8]) -> [UInt8]? {
            guard apdu.count >= 15, Array(apdu[0..<4]) == [0xFF, 0x68, 0x0E, 0x03] else { return nil }
            let lc = Int(apdu[4])
            guard lc >= 10, apdu.count == 5 + lc || apdu.count == 6 + lc else { return nil }
            return Array(apdu[15..<(5 + lc)])
        }

        /// What the test bench answers for a tag's `answer`: nil, a silent tag (STS 01, nothing heard); `unclean`,
        /// two tags at once (STS 02 and a byte heard). These two STS values are the bench's, not HID's (unpublished).
        public static func response(_ answer: [UInt8]?, unclean: Bool = false) -> [UInt8] {
            if unclean { return [0x02, 0x00, 0xFF, 0x90, 0x00] }
            guard let answer else { return [0x01, 0x00, 0x90, 0x00] }
            return [0x00, 0x00] + answer + [0x90, 0x00]
        }
    }

    /// Identiv's Traverse: `FF FD <frame waiting time code> 01 Lc <frame> 00`, frame type 01 (a standard frame of
    /// whole bytes, the reader adding the CRC). Its answer: the tag's bytes, then SW1 SW2.
    public enum Identiv {
        /// FWT codes 00…14 and their microseconds (uTrust 3720F reference manual §6.3.7.12).
        public static let waitingTimes: [UInt32] = [
            500, 1_000, 2_000, 5_000, 10_000, 25_000, 50_000, 75_000, 100_000, 250_000, 500_000, 750_000, 1_000_000,
            1_250_000, 1_500_000, 1_750_000, 2_000_000, 2_500_000, 3_000_000, 4_000_000, 5_000_000,
        ]
        /// Frame type 01, FRAMETYPE_STD.
        public static let standardFrame: UInt8 = 0x01

        /// The smallest FWT code that waits at least `microseconds` (the longest, 5 s, past it).
        public static func waitingTimeCode(_ microseconds: UInt32) -> UInt8 {
            UInt8(waitingTimes.firstIndex { $0 >= microseconds } ?? (waitingTimes.count - 1))
        }

        public static func apdu(_ frame: [UInt8], waitMicroseconds: UInt32) -> [UInt8] {
            [0xFF, 0xFD, waitingTimeCode(waitMicroseconds), standardFrame, UInt8(truncatingIfNeeded: frame.count)]
                + frame + [0x00]
        }

        /// Reads an answer: 90 00 after the tag's bytes (its CRC removed when `crcIncluded`, and checked); 90 00
        /// alone, or 62xx/64xx (no answer, no response from the card: PC/SC Part 3's 64 01 and 64 00), no answer;
        /// 63xx/6Fxx (a failure without diagnosis) an unclean answer, which the client treats as two tags at once or
        /// damage (a wrong guess then shows as an error, never as a tag silently missed); any other status word is the
        /// reader's. Identiv does not publish these status words: docs/reference/reader-paths.md §2.6.
        public static func outcome(of response: [UInt8], crcIncluded: Bool) throws(FrameError) -> Outcome {
            let (body, sw) = try split(response)
            guard sw == ok else {
                switch UInt8(sw >> 8) {
                case 0x62, 0x64: return .noAnswer
                case 0x63, 0x6F: return .rfError(status: statusCRC)
                default: return .readerError(sw: sw, object: 0)
                }
            }
            guard !body.isEmpty else { return .noAnswer }
            guard crcIncluded else { return .answer(Array(body)) }
            guard body.count >= 3 else {
                throw .truncated(what: "Traverse answer with its CRC", needed: 3, got: body.count)
            }
            guard CRC16.isValid(Array(body)) else { return .rfError(status: statusCRC) }
            return .answer(Array(body.dropLast(2)))
        }

        /// Whether the reader passes the tag's CRC on, from its answer to a one-slot Inventory (`26 01 00`): 12 bytes
        /// whose last two are the CRC of the first ten (flags, DSFID, UID) say so; 10 bytes say the CRC was removed.
        /// Nil: the answer says neither (an error answer, a collision).
        public static func crcIncluded(inventoryAnswer body: [UInt8]) -> Bool? {
            if body.count == 12, CRC16.isValid(body) { return true }
            if body.count == 10 { return false }
            return nil
        }

        /// The frame inside a command and its FWT code (the test bench's side); nil: not a Traverse of this form.
        public static func frame(in apdu: [UInt8]) -> (frame: [UInt8], waitCode: UInt8)? {
            guard apdu.count >= 6, apdu[0] == 0xFF, apdu[1] == 0xFD, apdu[3] == standardFrame else { return nil }
            let lc = Int(apdu[4])
            guard lc >= 1, apdu.count == 5 + lc || apdu.count == 6 + lc else { return nil }
            return (Array(apdu[5..<(5 + lc)]), apdu[2])
        }

        /// What the test bench answers for a tag's `answer`: nil, a silent tag (64 01); `unclean`, two tags at once
        /// (6F 00). The bench's choice, not Identiv's (unpublished).
        public static func response(_ answer: [UInt8]?, crcIncluded: Bool, unclean: Bool = false) -> [UInt8] {
            if unclean { return [0x6F, 0x00] }
            guard let answer else { return [0x64, 0x01] }
            return (crcIncluded ? CRC16.appending(to: answer) : answer) + [0x90, 0x00]
        }
    }

    /// The codec's answer to an exchange, read (`Identiv` with the reader's CRC habit).
    public static func outcome(_ codec: Codec, of response: [UInt8], identivCRC: Bool = false) throws(FrameError)
        -> Outcome
    {
        switch codec {
        case .transparent: return try outcome(of: response)
        case .omnikey: return try Omnikey.outcome(of: response)
        case .identiv: return try Identiv.outcome(of: response, crcIncluded: identivCRC)
        case .storage: throw .invalidField("the storage-card commands carry no frames")
        }
    }
}
