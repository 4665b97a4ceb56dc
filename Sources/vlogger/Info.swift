import VLoggerModel
import ArgumentParser
import ISO15693
import VLoggerCLI
import VLoggerCore

struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show a tag's system information, IC model and memory layout.")

    @OptionGroup(title: "Reader and tag") var options: ReaderOptions

    func run() throws {
        let session = try options.open()
        let uid = try options.target(session)
        let m = try session.client.memory(of: uid)
        // The originality signature, read the way the chip keeps it and verified offline (only reads).
        let originality: String
        do { originality = try OriginalityCheck.check(session.client, uid, model: m.model).description } catch {
            originality = "not read (\(error))"
        }
        let nxp = TagDump.nxpSystemInfo(session.client, uid)
        // ST25DV: the areas and what each allows over RF (only reads: READ CONFIGURATION).
        let areas = STSecurity.hasAreas(m.model) ? try? session.client.stAreas(uid, blockCount: m.blockCount) : nil
        if options.json {
            printJSON(
                InfoJSON(
                    uid: uid.description, manufacturerCode: WireByte(uid.manufacturer.rawValue),
                    manufacturer: uid.manufacturer.name, model: m.model?.name, blockCount: m.blockCount,
                    blockSize: m.blockSize, source: m.source.rawValue, addressing: m.addressing.rawValue,
                    writeNeedsOption: m.writeNeedsOption, dsfid: m.info.dsfid.map(WireByte.init),
                    afi: m.info.afi.map(WireByte.init), icReference: m.info.icReference.map(WireByte.init),
                    originality: originality,
                    pageProtection: nxp.map {
                        PageProtectionJSON(
                            pointer: WireBlock(Int($0.protectionPointer)), condition: WireByte($0.protectionCondition),
                            text: $0.protectionText, lockBits: WireByte($0.lockBits), locks: $0.locksText)
                    }, nxpFeatures: nxp.map { WireHex(withUnsafeBytes(of: $0.features.littleEndian) { Array($0) }) },
                    areas: areas?.map(\.description)))
            return
        }
        print("UID            \(uid)")
        print("Manufacturer   \(uid.manufacturer)")
        print("IC model       \(m.model?.name ?? "unknown")")
        print("DSFID          \(m.info.dsfid.map { "0x" + Hex.format([$0]) } ?? "not reported")")
        print("AFI            \(m.info.afi.map { "0x" + Hex.format([$0]) } ?? "not reported")")
        print("IC reference   \(m.info.icReference.map { "0x" + Hex.format([$0]) } ?? "not reported")")
        print("Memory         \(m.blockCount) blocks × \(m.blockSize) bytes = \(m.blockCount * m.blockSize) bytes")
        print("Found by       \(m.source.rawValue)")
        print("Addressing     \(m.addressing.rawValue)\(m.writeNeedsOption ? "; writes need the Option flag" : "")")
        say("Originality    \(originality)")
        if let nxp {
            say("Protection     \(nxp.protectionText) (GET NXP SYSTEM INFO)")
            say("Locks          \(nxp.locksText) (GET NXP SYSTEM INFO)")
        }
        for (i, a) in (areas ?? []).enumerated() { say("\(i == 0 ? "Areas         " : "              ") \(a)") }
        print(airLine(session))
    }
}
