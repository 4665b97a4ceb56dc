import VLoggerModel
import ArgumentParser
import ISO15693

struct Scan: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find every tag in the field (a one-slot inventory first, then 16-slot rounds with anti-collision).")

    @OptionGroup(title: "Reader and tag") var options: ReaderOptions

    @Option(help: "Only tags of this Application Family Identifier (hex, e.g. 0x00 = all).")
    var afi: String?

    func run() throws {
        let session = try options.open()
        let afiValue: UInt8?
        do { afiValue = try afi.map { UInt8(try Hex.parseInteger($0, max: 0xFF, what: "AFI")) } } catch {
            throw ValidationError("--afi: \(error)")
        }
        // One slot first, as the agent does: a lone tag is found in one exchange (silence ends the scan).
        let tags = try session.client.inventory(afi: afiValue, oneSlotFirst: true)
        if options.json {
            printJSON(
                ScanJSON(
                    tags: tags.map { t in
                        ScanJSON.Tag(
                            uid: t.uid.description, dsfid: WireByte(t.dsfid),
                            manufacturerCode: WireByte(t.uid.manufacturer.rawValue),
                            manufacturer: t.uid.manufacturer.name, model: ICModel.identify(uid: t.uid)?.name)
                    }, airTimeUs: airMicroseconds(session)))
            return
        }
        for t in tags {
            let model = ICModel.identify(uid: t.uid)?.name ?? "model unknown"
            print("\(t.uid)  DSFID 0x\(Hex.format([t.dsfid]))  \(t.uid.manufacturer)  \(model)")
        }
        print("\(tags.count) tag(s); \(airLine(session))")
    }
}
