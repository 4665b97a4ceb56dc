import Foundation
import ISO15693
import Testing
import VLoggerModel

@testable import VLoggerStore

/// `vlogger export --labels`: a reading's CSV header carries each decoded field's unit (`temperature [°C]`), its
/// JSON line a `units` object of the fields it has, and both the register's name of the tag beside its UID; the
/// values themselves are those of the export without labels.
@Suite struct LabelsExportTests {
    @Test func theUnitAndTheAssetAreInTheHeaderAndTheJSON() throws {
        let s = try Store(path: scratchPath("labels.db"))
        let t0: Millis = 1_763_800_000_000
        let cage = try UID(parsing: "E008010000004212"), stray = try UID(parsing: "E004015012345678")
        _ = try s.importAssets(
            [AssetRow(uid: cage, assetID: "CAGE-12", name: "Cold cage 12, \"B\"")], source: "assets.csv", now: t0)
        try s.registerFields([FieldInfo(name: "temperature", unit: "°C"), FieldInfo(name: "cage", unit: nil)])
        var b = Batch()
        b.readings = [
            Reading(
                time: t0, gateway: "gw-1", reader: "r1", location: "Cold room", uid: cage,
                first: 0xF8, count: 1, data: [0x66, 0x08],
                decoded: [("temperature", .number(21.5)), ("cage", .text("B7"))]),
            Reading(
                time: t0 + 1, gateway: "gw-1", reader: "r1", location: "Cold room", uid: stray, first: 0, count: 1,
                data: [0x01], decoded: [("cage", .text("X"))]),
        ]
        try s.write(b)
        var r = ExportRequest(since: 0)
        r.labels = true
        let csv = String(decoding: try ExportFormatTests.export(s, r), as: UTF8.self).split(separator: "\r\n")
        #expect(
            csv[0]
                == "time,gateway,reader,location,uid,asset_id,block,count,data,security,asset_name,temperature [°C],cage",
            "\(csv)")
        #expect(csv[1].hasSuffix(",CAGE-12,0xF8,1,\\x6608,,\"Cold cage 12, \"\"B\"\"\",21.5,B7"), "\(csv)")
        #expect(csv[2].hasSuffix(",,0x00,1,\\x01,,,,X"), "\(csv)")
        r.format = .jsonl
        let lines = String(decoding: try ExportFormatTests.export(s, r), as: UTF8.self).split(separator: "\n")
        let first = try #require(
            try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any], "\(lines)")
        #expect(first["asset_name"] as? String == "Cold cage 12, \"B\"" && first["temperature"] as? Double == 21.5)
        #expect(first["units"] as? [String: String] == ["temperature": "°C"], "\(lines[0])")
        // A reading without a field that has a unit has no units member; a tag not in the register no name.
        let second = try #require(try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
        #expect(second["units"] == nil && second["asset_name"] == nil, "\(lines[1])")
        // Without labels: the export as before.
        r.labels = false
        r.format = .csv
        let plain = String(decoding: try ExportFormatTests.export(s, r), as: UTF8.self).split(separator: "\r\n")
        #expect(plain[0] == "time,gateway,reader,location,uid,asset_id,block,count,data,security,temperature,cage")
    }
}

/// The pages' series: every tag's readings in the range through its index range, thinned evenly to at most
/// `maxPoints` (the first and the last kept), readings without the field left out.
@Suite struct PageSeriesTests {
    @Test func aLongRangeIsThinnedEvenlyKeepingTheEnds() throws {
        let s = try Store(path: scratchPath("series.db"))
        let t0: Millis = 1_763_800_000_000
        let a = try UID(parsing: "E008010000004212"), b = try UID(parsing: "E004015012345678")
        var batch = Batch()
        for i in 0..<5000 {
            batch.readings.append(
                Reading(
                    time: t0 + Millis(i) * 1000, gateway: "gw", uid: a, first: 0xF8, count: 1, data: [0],
                    decoded: [("temperature", .number(Double(i)))]))
            if i % 2 == 0 {
                batch.readings.append(
                    Reading(
                        time: t0 + Millis(i) * 1000, gateway: "gw", uid: b, first: 0, count: 1, data: [0],
                        decoded: [("label", .text("no temperature"))]))
            }
        }
        try s.write(batch)
        let series = try s.series(field: "temperature", since: t0 + 1_000_000, uids: [a, b], maxPoints: 100)
        let points = try #require(series[a])
        // 4000 readings in the range (from the 1000th), every 40th kept, and the last.
        #expect(points.count == 100 && points.first?.1 == 1000 && points.last?.1 == 4999, "\(points.count)")
        #expect(zip(points, points.dropFirst()).allSatisfy { $0.0 < $1.0 })
        #expect(series[b] == nil)
    }
}
