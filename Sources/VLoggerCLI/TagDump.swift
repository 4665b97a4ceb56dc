import ISO15693
import Readers
import TagImages
import VLoggerCore
import VLoggerModel

/// Reading a whole tag into an image and writing an image back to a tag.
public enum TagDump {
    /// Memory layout, every block with its lock status, DSFID/AFI, IC reference.
    public static func dump(_ client: ISO15693Client, uid: UID) throws -> TagImage {
        let m = try client.memory(of: uid)
        // ST25DV: the area registers (READ CONFIGURATION, no password), kept so that a simulated copy has the same
        // areas; an area whose reads need a password cannot be dumped (the read would stop there).
        var stRegisters: [UInt8]?
        if STSecurity.hasAreas(m.model), let r = try? client.stAreaRegisters(uid),
            let areas = STSecurity.areas(registers: r, blockCount: m.blockCount)
        {
            if let closed = areas.first(where: \.readNeedsSession) {
                throw VLoggerError(
                    "\(closed): its blocks cannot be read without the password, so the tag cannot be dumped whole")
            }
            stRegisters = r
        }
        let blocks = try client.readBlocks(uid, first: 0, count: m.blockCount, security: true)
        var image = try TagImage(
            uid: uid, dsfid: m.info.dsfid ?? 0, afi: m.info.afi ?? 0, blockSize: m.blockSize,
            blocks: blocks.map(\.data), locked: blocks.map { $0.security?.isLocked ?? false },
            icReference: m.info.icReference)
        // What Get System Information did not report is not invented in the dump.
        image.dsfidKnown = m.info.dsfid != nil
        image.afiKnown = m.info.afi != nil
        // NXP ICODE: the DSFID and AFI locks, the page protection and the originality signature, where the chip says it has them (GET NXP
        // SYSTEM INFO, READ SIGNATURE; both only read). A chip that refuses GET NXP SYSTEM INFO has neither.
        if let nxp = nxpSystemInfo(client, uid) {
            // ISO commands do not report the DSFID and AFI locks; GET NXP SYSTEM INFO's lock bits do.
            image.dsfidLocked = nxp.dsfidLocked
            image.afiLocked = nxp.afiLocked
            image.easLocked = nxp.easLocked
            image.protectionLocked = nxp.protectionLocked
            // Known even when nothing is protected (condition 0): a Flipper file of the chip carries both.
            image.protectionPointer = nxp.protectionPointer
            image.protectionCondition = nxp.protectionCondition
            if nxp.hasSignature,
                let s = try? client.optionalCustom(uid, code: NXPSecurity.readSignature, manufacturer: .nxp).bytes,
                s.count == 32, s.contains(where: { $0 != 0 })  // 32 zero bytes: none programmed
            {
                image.signature = s
            }
        }
        image.stAreaRegisters = stRegisters
        return image
    }

    /// GET NXP SYSTEM INFO of an NXP chip, or nil (another manufacturer, or a chip that refuses it).
    public static func nxpSystemInfo(_ client: ISO15693Client, _ uid: UID) -> NXPSecurity.SystemInfo? {
        guard uid.manufacturer == .nxp,
            let raw = try? client.optionalCustom(uid, code: NXPSecurity.getSystemInfo, manufacturer: .nxp).bytes
        else { return nil }
        return NXPSecurity.SystemInfo(raw)
    }

    public struct RestoreReport: Sendable {
        public var written: Int
        public var unchanged: Int
        public var lockedSkipped: [BlockNumber]
        /// What of the image was not applied because it cannot be undone or has its own command: block locks,
        /// a different AFI or DSFID, their locks. One phrase each, for the command's report.
        public var notApplied: [String] = []
    }

    /// Writes the blocks of `image` that differ from the tag, with read-back verification. Locked blocks
    /// that differ are reported, not attempted; the image's lock bits are not applied (locking is
    /// irreversible and has its own command).
    public static func restore(_ client: ISO15693Client, uid: UID, image: TagImage) throws -> RestoreReport {
        let m = try client.memory(of: uid)
        guard m.blockSize == image.blockSize, m.blockCount >= image.blockCount else {
            throw VLoggerError(
                "the image has \(image.blockCount) × \(image.blockSize)-byte blocks; tag \(uid) has \(m.blockCount) × \(m.blockSize)"
            )
        }
        let current = try client.readBlocks(uid, first: 0, count: image.blockCount, security: true)
        var report = RestoreReport(written: 0, unchanged: 0, lockedSkipped: [])
        var i = 0
        while i < image.blockCount {
            if current[i].data == image.blocks[i] { report.unchanged += 1; i += 1; continue }
            if current[i].security?.isLocked == true {
                report.lockedSkipped.append(current[i].number); i += 1; continue
            }
            var j = i
            while j < image.blockCount, current[j].data != image.blocks[j], current[j].security?.isLocked != true {
                j += 1
            }
            try client.writeBlocks(uid, first: current[i].number, blocks: Array(image.blocks[i..<j]))
            report.written += j - i
            i = j
        }
        let toLock = image.locked.indices.filter { image.locked[$0] && current[$0].security?.isLocked != true }
        if !toLock.isEmpty {
            report.notApplied.append(
                "the lock of block\(toLock.count == 1 ? "" : "s") \(toLock.compactMap { BlockNumber(exactly: $0)?.description }.joined(separator: " ")) (vlogger lock)"
            )
        }
        let hex = { (b: UInt8) in "0x" + Hex.format([b]) }
        if let afi = m.info.afi, afi != image.afi {
            report.notApplied.append("AFI \(hex(image.afi)) (the tag has \(hex(afi)))")
        }
        if let dsfid = m.info.dsfid, dsfid != image.dsfid {
            report.notApplied.append("DSFID \(hex(image.dsfid)) (the tag has \(hex(dsfid)))")
        }
        if image.afiLocked { report.notApplied.append("the AFI lock") }
        if image.dsfidLocked { report.notApplied.append("the DSFID lock") }
        return report
    }
}
