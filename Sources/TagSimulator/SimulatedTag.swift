import TagImages
import ISO15693
import SensorTags

/// ISO/IEC 15693-3 tag states (§7.1: power-off, ready, quiet, selected).
public enum TagState: String, Sendable {
    case powerOff = "power-off", ready, quiet, selected
    /// An NXP ICODE chip after a wrong password: it answers nothing until its power is reset (docs/reference/
    /// tag-passwords.md).
    case muted
}

/// One virtual tag: an image (memory, locks, AFI/DSFID) running on a chip profile, with its state.
public final class SimulatedTag {
    public private(set) var image: TagImage
    public let profile: ChipProfile
    public internal(set) var state: TagState = .powerOff {
        didSet {
            // A power-on reset ends every password session.
            if state == .powerOff {
                unlocked = []
                stSession = nil
            }
        }
    }
    /// The ST25DV RF security session open now (the password number presented right), until the field goes off
    /// or another password is presented (ST25DV data sheet DS13519 §5.6.2).
    public private(set) var stSession: UInt8?
    /// NXP passwords given right (SET PASSWORD) since the last power-on, by id.
    public private(set) var unlocked: Set<UInt8> = []
    /// The last GET RANDOM NUMBER's answer (the key SET PASSWORD's value is XORed with).
    var random: [UInt8] = [0, 0]
    /// Answers to GET RANDOM NUMBER come from this generator (seeded by the UID: a run is repeatable).
    var randomState: UInt64 = 0
    /// SET PASSWORD (NXP) and PRESENT PASSWORD (ST) requests received (a test counts attempts).
    public private(set) var passwordAttempts = 0
    /// Added to the profile's programming time (to inject a write slower than the reader waits).
    public var extraProgrammingTime: AirTime = .zero
    /// Every custom command (0xA0–0xDF) goes unanswered, as through a reader that drops them or from a chip that
    /// ignores those it lacks (a test of the optional queries: docs/reference/optional-commands.md).
    public var silentToCustomCommands = false

    public var uid: UID { image.uid }

    /// The chip's own side writes its memory (a sensor front end updating a measurement block), as
    /// RF430 and ST25DV chips do from their sensor or I²C side; RF lock bits do not apply. Bytes past
    /// the end of the memory are dropped.
    public func sense(block: Int, byte: Int = 0, bytes: [UInt8]) {
        guard block >= 0, byte >= 0, block < image.blocks.count, byte < image.blocks.count * image.blockSize else {
            return
        }
        for (i, b) in bytes.enumerated() {
            let pos = byte + i
            let n = block + pos / image.blockSize
            guard n < image.blocks.count else { return }
            image.blocks[n][pos % image.blockSize] = b
        }
    }

    /// The chip's parts beyond ISO 15693 (a sensor logger, a firmware that acts on a write): made from the image
    /// and the profile by `SimulatedParts.builtIn`, or attached by a test.
    public private(set) var parts: [any SimulatedPart] = []

    public init(image: TagImage, profile: ChipProfile? = nil) {
        self.image = image
        self.profile = profile ?? image.profile
        for kind in SimulatedParts.builtIn {
            if let part = kind.make(for: self) { attach(part) }
        }
    }

    /// Gives the tag `part` (in place of one of the same type).
    public func attach(_ part: any SimulatedPart) {
        parts.removeAll { type(of: $0) == type(of: part) }
        parts.append(part)
        part.attached(to: self)
    }

    /// The tag's part of type `type`, if it has one.
    public func part<P: SimulatedPart>(_ type: P.Type) -> P? {
        parts.lazy.compactMap { $0 as? P }.first
    }

    /// A part's answer to a raw request (flags, code, …, without CRC) in a frame form of its own: the whole answer
    /// frame without CRC and when it starts after the request, or nil (no part's frame, not for this tag, or a tag
    /// that cannot answer now).
    func rawAnswer(_ body: [UInt8]) -> (bytes: [UInt8], delay: AirTime)? {
        guard state == .ready || state == .selected || state == .quiet else { return nil }
        if state == .quiet, body.first.map({ $0 & 0x20 == 0 }) ?? true { return nil }
        for part in parts {
            if let bytes = part.rawAnswer(body, tag: self) { return (bytes, part.rawAnswerDelay) }
        }
        return nil
    }

    /// What the tag does with a request.
    enum Reply {
        case silent
        /// `programming`: time after t1 before the answer (write-alike commands). `waitsForEOF`: the
        /// Option flag was set on a write-alike command, so the tag answers t1 after the reader's EOF.
        /// `commit` carries out the write; the field runs it when the write succeeds.
        case answer(Response, programming: AirTime, waitsForEOF: Bool, commit: (() -> Void)?, extendedSI: Bool)
    }

    func answer(_ body: ResponseBody) -> Reply {
        .answer(Response(body: body), programming: .zero, waitsForEOF: false, commit: nil, extendedSI: false)
    }

    /// The slot (0…15, or 0 with one slot) in which this tag answers an Inventory request, or nil.
    func inventorySlot(_ request: Request) -> Int? {
        let afi: UInt8?, mask: InventoryMask
        if case let .inventory(a, m) = request.command {
            (afi, mask) = (a, m)
        } else if profile.inventoryRead, let read = NXPInventoryRead(request) {
            // A first block past the memory is an error, and on an error the chip stays silent.
            guard read.first.int < image.blockCount else { return nil }
            (afi, mask) = (read.afi, read.mask)
        } else {
            return nil
        }
        guard state == .ready || state == .selected, !hidden else { return nil }
        if let afi, !Self.afiMatches(request: afi, tag: image.afi) { return nil }
        guard mask.matches(uid) else { return nil }
        if request.inventorySlots == 1 { return 0 }
        return Int((uid.value >> UInt64(mask.length)) & 0x0F)
    }

    /// This tag's answer (flags first, no CRC) in its slot of an Inventory or an Inventory Read.
    func inventoryAnswer(_ request: Request) -> [UInt8] {
        guard let read = NXPInventoryRead(request) else {
            return Response(body: .inventory(dsfid: image.dsfid, uid: uid)).encode()
        }
        // Past the last block the chip returns fewer blocks, ending at its last (ICODE SLI §3.5.3.1).
        let end = min(read.first.int + read.count, image.blockCount)
        let blocks = Array(image.blocks[read.first.int..<end])
        // Without the Option flag the answer is the blocks alone (SLIX datasheet Table 24).
        guard request.flags.contains(.option) else { return [0x00] + blocks.flatMap { $0 } }
        return [0x00]
            + NXPInventoryRead.answerBody(
                uid: uid, maskLength: read.mask.length,
                sixteenSlots: request.inventorySlots == 16, blocks: blocks)
    }

    /// ISO/IEC 15693-3 table 8: AFI 0x00 matches every tag; a request family (high nibble) or
    /// sub-family (low nibble) of 0 matches every family / sub-family.
    static func afiMatches(request: UInt8, tag: UInt8) -> Bool {
        if request == 0 { return true }
        let rf = request >> 4, rs = request & 0x0F, tf = tag >> 4, ts = tag & 0x0F
        if rf == 0 { return rs == ts }
        if rs == 0 { return rf == tf }
        return request == tag
    }

    /// In privacy mode and not opened by the privacy password since power-on: silent to all but GET RANDOM NUMBER
    /// and SET PASSWORD (NXP SLIX2 data sheet SL2S2602 §9.5.3.9 ENABLE PRIVACY).
    var hidden: Bool {
        image.privacy && (profile.nxpSecurity || slix?.hasPrivacy == true)
            && !unlocked.contains(NXPSecurity.privacyPassword)
    }

    /// The SLIX type the UID says (Flipper's rule, `SlixType`): its passwords are answered on any profile (an image
    /// from a Flipper SLIX file of a SLIX, SLIX-S or SLIX-L runs on the generic profile).
    var slix: SlixType? { profile.manufacturer == .nxp ? SlixType(uid: image.uid) : nil }

    /// GET RANDOM NUMBER and SET PASSWORD: the SLIX2 profile, or an image of a SLIX type.
    var nxpPasswords: Bool { profile.nxpSecurity || slix != nil }

    /// READ SIGNATURE, GET NXP SYSTEM INFO, GET MULTIPLE BLOCK PROTECTION STATUS and page protection: the SLIX2.
    var nxpSLIX2: Bool { profile.nxpSecurity || slix == .slix2 }

    /// Whether this tag processes a (non-inventory) request at all, from its state and the addressing.
    func isAddressed(by request: Request) -> Bool {
        switch state {
        case .powerOff, .muted: return false
        case .quiet:
            guard case let .addressed(u) = request.addressing else { return false }
            return u == uid
        case .ready, .selected:
            switch request.addressing {
            case .nonAddressed: return true
            case let .addressed(u): return u == uid
            case .selected: return state == .selected
            }
        }
    }

    func reply(to request: Request) -> Reply {
        let option = request.flags.contains(.option)
        let protoExt = request.flags.contains(.protocolExtension)
        let p = profile
        func unsupported() -> Reply { p.unsupportedCommandError.map { answer(.error($0)) } ?? .silent }

        let code = request.command.code
        if silentToCustomCommands, case .custom = request.command { return .silent }
        if hidden {
            guard case let .custom(c, m, _) = request.command, m == .nxp,
                c == NXPSecurity.getRandomNumber || c == NXPSecurity.setPassword
            else { return .silent }
        }
        if code.takesProtocolExtension && p.requiresProtocolExtension && !protoExt {
            return answer(.error(p.protocolExtensionError))
        }
        if code.isExtended && !p.supportsExtendedCommands { return unsupported() }
        if request.command.code.isWriteAlike && p.writeRequiresOption && !option {
            // Modelling assumption: without the Option flag a TI Tag-it neither writes nor answers.
            return .silent
        }

        func inRange(_ first: BlockNumber, _ count: Int) -> Bool { first.int + count <= image.blockCount && count >= 1 }
        func blocks(_ first: BlockNumber, _ count: Int) -> ResponseBody {
            .blocks(
                (0..<count).map { i in
                    let n = first.int + i
                    return BlockRead(
                        number: BlockNumber(exactly: n) ?? 0, data: image.blocks[n],
                        security: option ? (image.locked[n] ? .locked : []) : nil)
                })
        }
        func write(_ first: BlockNumber, _ count: Int, _ data: [UInt8]) -> Reply {
            guard inRange(first, count) else { return answer(.error(p.blockOutOfRangeError)) }
            if (first.int..<(first.int + count)).contains(where: { !mayWrite($0) }) {
                return answer(.error(.unknownError))
            }
            if let e = stWriteError(first.int, count) { return answer(.error(e)) }
            guard data.count == count * image.blockSize else { return answer(.error(.commandNotRecognized)) }
            if image.locked[first.int..<(first.int + count)].contains(true) { return answer(.error(.blockLocked)) }
            let commit = { [self] in
                for i in 0..<count {
                    image.blocks[first.int + i] = Array(data[(i * image.blockSize)..<((i + 1) * image.blockSize)])
                }
                for part in parts { part.written(first: first.int, count: count, tag: self) }
            }
            return .answer(
                Response(body: .done), programming: p.programmingTimePerBlock * count + extraProgrammingTime,
                waitsForEOF: option, commit: commit, extendedSI: false)
        }
        func writeAlike(_ check: () -> ISOErrorCode?, _ change: @escaping () -> Void) -> Reply {
            if let e = check() { return answer(.error(e)) }
            return .answer(
                Response(body: .done), programming: p.programmingTimePerBlock + extraProgrammingTime,
                waitsForEOF: option, commit: change, extendedSI: false)
        }
        func lock(_ b: BlockNumber) -> Reply {
            guard inRange(b, 1) else { return answer(.error(p.blockOutOfRangeError)) }
            if !mayWrite(b.int) { return answer(.error(.unknownError)) }
            return writeAlike(
                { image.locked[b.int] ? .blockAlreadyLocked : nil }, { [self] in image.locked[b.int] = true })
        }

        switch request.command {
        case .inventory:
            return .silent
        case .stayQuiet:
            state = .quiet
            return .silent
        case .select:
            state = .selected
            return answer(.done)
        case .resetToReady:
            state = .ready
            return answer(.done)
        case let .readSingleBlock(b), let .extendedReadSingleBlock(b):
            guard inRange(b, 1) else { return answer(.error(p.blockOutOfRangeError)) }
            if !mayRead(b.int) { return answer(.error(.unknownError)) }
            if !stMayRead(b.int) { return answer(.error(.blockReadProtected)) }
            return answer(blocks(b, 1))
        case let .readMultipleBlocks(f, n), let .extendedReadMultipleBlocks(f, n):
            // A chip that reads one block at a time has no Read Multiple Blocks at all.
            if p.maxBlocksPerRead == 1 { return unsupported() }
            guard inRange(f, n) else { return answer(.error(p.blockOutOfRangeError)) }
            guard n <= p.maxBlocksPerRead else { return answer(.error(.unknownError)) }
            if (f.int..<(f.int + n)).contains(where: { !mayRead($0) }) { return answer(.error(.unknownError)) }
            return stReadMultiple(f, n, blocks)
        case let .writeSingleBlock(b, d), let .extendedWriteSingleBlock(b, d):
            return write(b, 1, d)
        case let .writeMultipleBlocks(f, n, d), let .extendedWriteMultipleBlocks(f, n, d):
            guard let max = p.maxBlocksPerWrite else { return unsupported() }
            guard n <= max else { return answer(.error(.unknownError)) }
            return write(f, n, d)
        case let .lockBlock(b), let .extendedLockBlock(b):
            return lock(b)
        case let .writeAFI(v):
            return writeAlike({ image.afiLocked ? .blockLocked : nil }, { [self] in image.afi = v })
        case .lockAFI:
            return writeAlike({ image.afiLocked ? .blockAlreadyLocked : nil }, { [self] in image.afiLocked = true })
        case let .writeDSFID(v):
            return writeAlike({ image.dsfidLocked ? .blockLocked : nil }, { [self] in image.dsfid = v })
        case .lockDSFID:
            return writeAlike({ image.dsfidLocked ? .blockAlreadyLocked : nil }, { [self] in image.dsfidLocked = true })
        case .getSystemInformation:
            guard let fields = p.systemInfo else { return unsupported() }
            return answer(.systemInformation(systemInformation(fields, requested: 0x0F)))
        case let .extendedGetSystemInformation(parameters):
            guard let fields = p.systemInfo else { return unsupported() }
            var info = systemInformation(fields, requested: parameters)
            info.twoByteAddressing = image.blockCount > 256
            return .answer(
                Response(body: .systemInformation(info)), programming: .zero, waitsForEOF: false, commit: nil,
                extendedSI: true)
        case let .getMultipleBlockSecurityStatus(f, n), let .extendedGetMultipleBlockSecurityStatus(f, n):
            guard inRange(f, n) else { return answer(.error(p.blockOutOfRangeError)) }
            return answer(.securityStatus((f.int..<(f.int + n)).map { image.locked[$0] ? .locked : [] }))
        case .custom where p.fastReads && STFastRead.isFastRead(request.command):
            // ST's fast reads: read like Read Multiple Blocks; the field charges the answer at twice the rate.
            guard
                let (f, n) = STFastRead.range(
                    of: request.command, protocolExtension: protoExt && !p.supportsExtendedCommands),
                let first = BlockNumber(exactly: f)
            else { return answer(.error(.commandNotRecognized)) }
            if p.requiresProtocolExtension && !protoExt { return answer(.error(p.protocolExtensionError)) }
            if case let .custom(code, _, _) = request.command, code >= STFastRead.extendedSingle,
                !p.supportsExtendedCommands
            {
                return unsupported()
            }
            guard inRange(first, n) else { return answer(.error(p.blockOutOfRangeError)) }
            guard n <= p.maxBlocksPerRead else { return answer(.error(.unknownError)) }
            return stReadMultiple(first, n, blocks)
        case let .custom(code, manufacturer, parameters)
        where nxpPasswords && manufacturer == .nxp && code == NXPSecurity.getRandomNumber:
            guard parameters.isEmpty else { return answer(.error(.commandNotRecognized)) }
            if randomState == 0 { randomState = uid.value | 1 }
            randomState = randomState &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            random = [UInt8(truncatingIfNeeded: randomState >> 33), UInt8(truncatingIfNeeded: randomState >> 41)]
            return answer(.data(random))
        case let .custom(code, manufacturer, parameters)
        where nxpPasswords && manufacturer == .nxp && code == NXPSecurity.setPassword:
            guard parameters.count == 5 else { return answer(.error(.commandNotRecognized)) }
            let id = parameters[0]
            // A password the type does not have (Flipper's feature table), or one the image does not hold.
            if let slix, !slix.passwordIDs.contains(id) { return unsupported() }
            // A SLIX type's password the image does not give: the value Flipper's loader takes for it (privacy and
            // destroy 0F 0F 0F 0F, the others zero: docs/reference/flipper-slix.md), so a file Flipper would emulate
            // is emulated alike. Kept in the image's on-air order.
            let fallback = slix != nil ? SlixType.passwordKey(id).map { Array($0.flipperDefault.reversed()) } : nil
            guard let expected = image.nxpPasswords[id] ?? fallback else { return unsupported() }
            passwordAttempts += 1
            let given = NXPSecurity.unxor(Array(parameters[1...]), random: random)
            // Flipper's `Capabilities: AcceptAllPasswords`: its emulation takes any password (slix_listener_i.c).
            guard given == expected || image.slixCapabilities == "AcceptAllPasswords" else {
                // A wrong password: the chip answers nothing more until a power-on reset.
                state = .muted
                return .silent
            }
            unlocked.insert(id)
            return answer(.done)
        case let .custom(code, manufacturer, parameters)
        where nxpSLIX2 && manufacturer == .nxp && code == NXPSecurity.getMultipleBlockProtectionStatus:
            guard parameters.count == 2 else { return answer(.error(.commandNotRecognized)) }
            let first = Int(parameters[0]), count = Int(parameters[1]) + 1
            guard first + count <= image.blockCount else { return answer(.error(p.blockOutOfRangeError)) }
            return answer(.data((first..<(first + count)).map { protectionStatus($0) }))
        case let .custom(code, manufacturer, parameters)
        where nxpSLIX2 && manufacturer == .nxp && code == NXPSecurity.readSignature:
            guard parameters.isEmpty else { return answer(.error(.commandNotRecognized)) }
            // An image without a signature: 32 zero bytes, what Flipper's emulation answers for a SLIX2 file without
            // one (slix_listener_i.c: the signature buffer, zeroed); NXP programs every SLIX2's at production
            // (SL2S2602 §9.5.3.20), so no data sheet describes a chip without (docs/reference/flipper-slix.md).
            return answer(.data(image.signature ?? Array(repeating: 0, count: 32)))
        case let .custom(code, manufacturer, parameters)
        where nxpSLIX2 && manufacturer == .nxp && code == NXPSecurity.getSystemInfo:
            guard parameters.isEmpty else { return answer(.error(.commandNotRecognized)) }
            // Lock bits b0 AFI, b1 EAS, b2 DSFID, b3 page protection (docs/reference/tag-passwords.md).
            let locks: UInt8 =
                (image.afiLocked ? 0x01 : 0) | (image.easLocked == true ? 0x02 : 0) | (image.dsfidLocked ? 0x04 : 0)
                | (image.protectionLocked == true ? 0x08 : 0)
            let features: UInt32 = image.signature == nil ? 0 : 1 << 8
            let protection = [
                image.protectionPointer ?? 0, image.protectionPointer == nil ? 0 : image.protectionCondition,
            ]
            return answer(.data(protection + [locks] + (0..<4).map { UInt8(truncatingIfNeeded: features >> (8 * $0)) }))
        case let .custom(code, manufacturer, parameters)
        where p.stAreas && manufacturer == .stMicroelectronics && code == STSecurity.readConfiguration:
            guard parameters.count == 1 else { return answer(.error(.commandNotRecognized)) }
            guard let i = STSecurity.areaRegisters.firstIndex(of: parameters[0]) else {
                return answer(.error(.blockNotAvailable))
            }
            return answer(.data([stRegisters[i]]))
        case let .custom(code, manufacturer, parameters)
        where p.stAreas && manufacturer == .stMicroelectronics && code == STSecurity.presentPassword:
            guard parameters.count == 1 + STSecurity.passwordLength else {
                return answer(.error(.commandNotRecognized))
            }
            let number = parameters[0]
            // "10h: the password number is incorrect" (the session stays as it is: DS13519).
            guard number <= 3 else { return answer(.error(.blockNotAvailable)) }
            passwordAttempts += 1
            let expected = image.stPasswords[number] ?? Array(repeating: 0, count: STSecurity.passwordLength)
            // Presenting any password closes the open session first, even when it fails.
            stSession = nil
            guard Array(parameters[1...]) == expected else { return answer(.error(.unknownError)) }
            stSession = number
            return answer(.done)
        case .custom, .proprietary, .other:
            for part in parts {
                switch part.answer(request, tag: self) {
                case .answer(let body)?: return answer(body)
                case .unsupported?: return unsupported()
                case nil: continue
                }
            }
            return unsupported()
        }
    }

    /// NXP page protection of a block (docs/reference/tag-passwords.md): which password guards reading (0x01) and
    /// writing (0x02) it, from the protection pointer and condition.
    func guarded(_ block: Int) -> (read: Bool, write: Bool) {
        guard nxpSLIX2, let pointer = image.protectionPointer else { return (false, false) }
        let c = image.protectionCondition
        return Int(pointer) > block ? (c & 0x01 != 0, c & 0x02 != 0) : (c & 0x10 != 0, c & 0x20 != 0)
    }

    func mayRead(_ block: Int) -> Bool { !guarded(block).read || unlocked.contains(0x01) }

    func mayWrite(_ block: Int) -> Bool {
        let g = guarded(block)
        return (!g.read || unlocked.contains(0x01)) && (!g.write || unlocked.contains(0x02))
    }

    /// The ST25DV area registers as they are now (the factory state when the image gives none: one area over the
    /// whole memory, no protection; DS13519 §4.2.1).
    var stRegisters: [UInt8] {
        if let r = image.stAreaRegisters { return r }
        let end = UInt8(clamping: max(0, image.blockCount / 8 - 1))
        return [0, end, 0, end, 0, end, 0]
    }

    /// The ST25DV area of a block; nil on other chips.
    func stArea(_ block: Int) -> STSecurity.Area? {
        guard profile.stAreas, let areas = STSecurity.areas(registers: stRegisters, blockCount: image.blockCount)
        else { return nil }
        return areas.first { $0.firstBlock <= block && block <= $0.lastBlock }
    }

    /// Whether the open session is the one of the area's password.
    func stOpen(_ a: STSecurity.Area) -> Bool { a.password != 0 && stSession == UInt8(a.password) }

    func stMayRead(_ block: Int) -> Bool {
        guard let a = stArea(block) else { return true }
        return !a.readNeedsSession || stOpen(a)
    }

    /// An ST25DV write's error: 0x12 for a block whose area is closed or never writable, 0x0F for Write Multiple
    /// Blocks across an area border (DS13519 p. 13, p. 90).
    func stWriteError(_ first: Int, _ count: Int) -> ISOErrorCode? {
        guard profile.stAreas, let a = stArea(first) else { return nil }
        if first + count - 1 > a.lastBlock { return .unknownError }
        if a.writeForbidden || (a.writeNeedsSession && !stOpen(a)) { return .blockLocked }
        return nil
    }

    /// ST25DV Read Multiple Blocks "returns all blocks until reaching a non readable block" (DS13519 p. 94): the
    /// blocks before the first read-protected one; error 0x15 when that is the first.
    func stReadMultiple(_ first: BlockNumber, _ count: Int, _ blocks: (BlockNumber, Int) -> ResponseBody) -> Reply {
        let readable = (first.int..<(first.int + count)).prefix { stMayRead($0) }.count
        if readable == 0 { return answer(.error(.blockReadProtected)) }
        return answer(blocks(first, readable))
    }

    /// GET MULTIPLE BLOCK PROTECTION STATUS's byte for a block: bit 0 locked, bit 1 read and bit 2 write protected by a
    /// password.
    func protectionStatus(_ block: Int) -> UInt8 {
        let g = guarded(block)
        return (image.locked[block] ? 0x01 : 0) | (g.read ? 0x02 : 0) | (g.write ? 0x04 : 0)
    }

    func systemInformation(_ fields: ChipProfile.SystemInfoFields, requested: UInt8) -> SystemInformation {
        var info = SystemInformation(uid: uid)
        if fields.dsfid && requested & 0x01 != 0 { info.dsfid = image.dsfid }
        if fields.afi && requested & 0x02 != 0 { info.afi = image.afi }
        if fields.memorySize && requested & 0x04 != 0 {
            info.blockCount = image.blockCount
            info.blockSize = image.blockSize
        }
        if fields.icReference && requested & 0x08 != 0 { info.icReference = image.icReference }
        return info
    }
}
