import Foundation
import ISO15693

/// The dump formats a tag image can be read from and written to.
public enum TagImageFormat: String, Sendable, CaseIterable {
    /// The project's JSON (`"format": "vlogger-tag-image"`), documented in `Config/demo-field/README.md`.
    case vlogger
    /// Proxmark3 JSON dumps, `"FileType": "15693 v4"` (written; up to 160 pages and 2048 bytes, as upstream
    /// loads them), and read also in a "v5" form whose page count has two bytes, and in the forms of 2020–2024
    /// (`"15693"`, `"15693 v2"`, `"15693 v3"`: memory only).
    case proxmark3
    /// Flipper Zero `.nfc` files of device type `ISO15693-3` or `SLIX`.
    case flipper

    public var fileExtension: String { self == .flipper ? "nfc" : "json" }

    /// Tells the format from the file's content (and name, for `.nfc`).
    public static func detect(fileName: String, text: String) -> TagImageFormat? {
        if text.hasPrefix("Filetype: Flipper NFC device") || fileName.lowercased().hasSuffix(".nfc") { return .flipper }
        if text.contains("\"vlogger-tag-image\"") { return .vlogger }
        if text.contains("\"FileType\"") && text.contains("15693") { return .proxmark3 }
        return nil
    }

    /// Decodes a file's text. `fileName`: where it came from, for the formats that keep something only there
    /// (Proxmark3's dumps of before 2024 carry no UID but in the file name Proxmark3 gives them).
    public func decode(_ text: String, fileName: String? = nil) throws(TagImageError) -> TagImage {
        switch self {
        case .vlogger: return try VLoggerImageCodec.decode(text)
        case .proxmark3: return try Proxmark3ImageCodec.decode(text, fileName: fileName)
        case .flipper: return try FlipperImageCodec.decode(text)
        }
    }

    /// Encodes `image`. With `updating`, the original file's other content (comments, Flipper SLIX
    /// passwords, Proxmark3 extra fields) is kept and only the tag's state is replaced.
    public func encode(_ image: TagImage, updating original: String? = nil) throws(TagImageError) -> String {
        switch self {
        case .vlogger: return try VLoggerImageCodec.encode(image)
        case .proxmark3: return try Proxmark3ImageCodec.encode(image, updating: original)
        case .flipper: return FlipperImageCodec.encode(image, updating: original)
        }
    }
}

private func hexByte(_ v: Any?, _ field: String) throws(TagImageError) -> UInt8 {
    guard let s = v as? String else { throw TagImageError("'\(field)' is missing or not a hex string") }
    do {
        let b = try Hex.parse(s)
        guard b.count == 1 else { throw TagImageError("'\(field)' must be one byte in hex, got '\(s)'") }
        return b[0]
    } catch let e as TagImageError { throw e } catch {
        throw TagImageError("'\(field)': \(error)")
    }
}

private func hexBytes(_ s: String, _ field: String) throws(TagImageError) -> [UInt8] {
    do { return try Hex.parse(s) } catch { throw TagImageError("'\(field)': \(error)") }
}

private func parseJSONObject(_ text: String) throws(TagImageError) -> [String: Any] {
    do {
        guard let obj = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw TagImageError("the file is JSON but not an object")
        }
        return obj
    } catch let e as TagImageError { throw e } catch {
        throw TagImageError("not valid JSON: \(error.localizedDescription)")
    }
}

private func serialize(_ obj: [String: Any]) throws(TagImageError) -> String {
    do {
        let data = try JSONSerialization.data(withJSONObject: obj, options: [.prettyPrinted, .sortedKeys])
        return String(decoding: data, as: UTF8.self) + "\n"
    } catch {
        throw TagImageError("cannot encode JSON: \(error.localizedDescription)")
    }
}

// MARK: - The project's JSON

/// ```json
/// { "format": "vlogger-tag-image", "version": 1, "profile": "icode-slix2",
///   "uid": "E004010812345678", "dsfid": "00", "dsfidLocked": false, "afi": "00", "afiLocked": false,
///   "icReference": "01", "blockSize": 4, "blocks": ["E1401001", "…"], "lockedBlocks": ["0x00"] }
/// ```
enum VLoggerImageCodec {
    static let formatName = "vlogger-tag-image"
    /// NXP password ids by name (Proxmark3 PR #1606 quoting the SLIX-L data sheet; Flipper `SlixPasswordType`).
    static let nxpPasswordIDs: [String: UInt8] = [
        "read": 0x01, "write": 0x02, "privacy": 0x04, "destroy": 0x08, "eas-afi": 0x10,
    ]

    static func decode(_ text: String) throws(TagImageError) -> TagImage {
        let o = try parseJSONObject(text)
        guard o["format"] as? String == formatName else { throw TagImageError("'format' must be \"\(formatName)\"") }
        guard let version = o["version"] as? Int, version == 1 else {
            throw TagImageError("'version' must be 1 (the only version so far)")
        }
        let known: Set<String> = [
            "format", "version", "profile", "uid", "dsfid", "dsfidLocked", "afi", "afiLocked",
            "icReference", "blockSize", "blocks", "lockedBlocks", "comment", "signature", "nxpPasswords",
            "protectionPointer", "protectionCondition", "privacy", "sensorLog", "stAreaRegisters", "stPasswords",
            "slixCapabilities", "easLocked", "protectionLocked",
        ]
        if let unknown = o.keys.filter({ !known.contains($0) }).sorted().first {
            throw TagImageError("unknown key '\(unknown)'; known keys: \(known.sorted().joined(separator: ", "))")
        }
        guard let uidText = o["uid"] as? String else { throw TagImageError("'uid' is missing") }
        let uid: UID
        do { uid = try UID(parsing: uidText) } catch { throw TagImageError("'uid': \(error)") }
        guard let blockSize = o["blockSize"] as? Int else {
            throw TagImageError("'blockSize' (a number of bytes) is missing")
        }
        guard let blockTexts = o["blocks"] as? [String] else {
            throw TagImageError("'blocks' must be an array of hex strings, one per block")
        }
        var blocks: [[UInt8]] = []
        for (i, t) in blockTexts.enumerated() { blocks.append(try hexBytes(t, "blocks[\(i)]")) }
        var locked = Array(repeating: false, count: blocks.count)
        for item in (o["lockedBlocks"] as? [Any]) ?? [] {
            let n: Int
            if let i = item as? Int {
                n = i
            } else if let s = item as? String, let v = try? Hex.parseInteger(s), let i = Int(exactly: v) {
                n = i
            } else {
                throw TagImageError("'lockedBlocks' entries must be block numbers (\"0x03\" or 3)")
            }
            guard n >= 0, n < locked.count else {
                throw TagImageError("'lockedBlocks' names block \(n), the image has \(locked.count) blocks")
            }
            locked[n] = true
        }
        // Which profiles exist is the simulator's to say (FieldFolder checks the name when it loads the image).
        let profile = o["profile"] as? String
        var signature: [UInt8]?
        if let s = o["signature"] {
            guard let text = s as? String, let bytes = try? Hex.parse(text), bytes.count == 32 else {
                throw TagImageError("'signature' must be 32 bytes in hex (an originality signature, r then s)")
            }
            signature = bytes
        }
        var image = try TagImage(
            uid: uid, dsfid: try hexByte(o["dsfid"] ?? "00", "dsfid"), dsfidLocked: o["dsfidLocked"] as? Bool ?? false,
            afi: try hexByte(o["afi"] ?? "00", "afi"), afiLocked: o["afiLocked"] as? Bool ?? false,
            blockSize: blockSize, blocks: blocks, locked: locked,
            icReference: o["icReference"] == nil ? nil : try hexByte(o["icReference"], "icReference"),
            profileID: profile)
        image.signature = signature
        if let p = o["nxpPasswords"] {
            guard let passwords = p as? [String: Any] else {
                throw TagImageError("'nxpPasswords' must be an object: {\"write\": \"0F0F0F0F\", …}")
            }
            for (name, value) in passwords {
                guard let id = Self.nxpPasswordIDs[name] else {
                    throw TagImageError(
                        "'nxpPasswords': '\(name)' is not one of \(Self.nxpPasswordIDs.keys.sorted().joined(separator: ", "))"
                    )
                }
                guard let text = value as? String, let bytes = try? Hex.parse(text), bytes.count == 4 else {
                    throw TagImageError("'nxpPasswords.\(name)' must be 4 bytes in hex")
                }
                image.nxpPasswords[id] = bytes
            }
        }
        if let p = o["privacy"] {
            guard let b = p as? Bool else { throw TagImageError("'privacy' must be true or false") }
            image.privacy = b
        }
        if let c = o["slixCapabilities"] {
            guard let text = c as? String, FlipperImageCodec.flipperCapabilities.contains(text) else {
                throw TagImageError(
                    "'slixCapabilities' must be one of \(FlipperImageCodec.flipperCapabilities.joined(separator: ", "))"
                )
            }
            image.slixCapabilities = text
        }
        for key in ["easLocked", "protectionLocked"] {
            guard let v = o[key] else { continue }
            guard let b = v as? Bool else { throw TagImageError("'\(key)' must be true or false") }
            if key == "easLocked" { image.easLocked = b } else { image.protectionLocked = b }
        }
        if o["protectionPointer"] != nil {
            image.protectionPointer = try hexByte(o["protectionPointer"], "protectionPointer")
            image.protectionCondition = try hexByte(o["protectionCondition"] ?? "00", "protectionCondition")
        }
        if let l = o["sensorLog"] {
            image.sensorLog = try sensorLog(l)
            // A SmarTag's layout needs 4-byte blocks and room for its header, cell map and a ring.
            if image.sensorLog?.kind == "smartag", blockSize != 4 || blocks.count < 32 {
                throw TagImageError("'sensorLog' of kind smartag: an ST25DV image of 4-byte blocks, 32 at least")
            }
        }
        if let r = o["stAreaRegisters"] {
            guard let text = r as? String, let bytes = try? Hex.parse(text), bytes.count == 7 else {
                throw TagImageError(
                    "'stAreaRegisters' must be 7 bytes in hex: RFA1SS, ENDA1, RFA2SS, ENDA2, RFA3SS, ENDA3, RFA4SS")
            }
            image.stAreaRegisters = bytes
        }
        if let p = o["stPasswords"] {
            guard let passwords = p as? [String: Any] else {
                throw TagImageError("'stPasswords' must be an object: {\"1\": \"0011223344556677\", …}")
            }
            for (name, value) in passwords {
                guard let n = UInt8(name), n <= 3 else {
                    throw TagImageError("'stPasswords': '\(name)' is not a password number 0…3")
                }
                guard let text = value as? String, let bytes = try? Hex.parse(text), bytes.count == 8 else {
                    throw TagImageError("'stPasswords.\(name)' must be 8 bytes in hex")
                }
                image.stPasswords[n] = bytes
            }
        }
        return image
    }

    /// `"sensorLog": {"kind": "fm13", "start": UNIX seconds, "interval": seconds, "delay": minutes, "logging": true,
    /// "battery": true, "celsius": [21.5, …], "current": 21.25}`.
    static func sensorLog(_ value: Any) throws(TagImageError) -> SensorLogImage {
        guard let o = value as? [String: Any] else { throw TagImageError("'sensorLog' must be an object") }
        let known: Set<String> = [
            "kind", "start", "interval", "delay", "logging", "battery", "celsius", "current", "byte-order",
            "manufacturer-byte",
        ]
        if let unknown = o.keys.filter({ !known.contains($0) }).sorted().first {
            throw TagImageError(
                "'sensorLog': unknown key '\(unknown)'; known keys: \(known.sorted().joined(separator: ", "))")
        }
        guard let kind = o["kind"] as? String, ["fm13", "smartag", "sl13a"].contains(kind) else {
            throw TagImageError(
                "'sensorLog.kind' must be \"fm13\", \"smartag\" or \"sl13a\" (the simulated logger kinds)")
        }
        guard let start = o["start"] as? Int, let s = UInt32(exactly: start) else {
            throw TagImageError("'sensorLog.start' must be UNIX seconds (0 to 4294967295)")
        }
        guard let interval = o["interval"] as? Int, let i = UInt16(exactly: interval), i > 0 else {
            throw TagImageError("'sensorLog.interval' must be seconds, 1 to 65535")
        }
        var log = SensorLogImage(kind: kind, startSeconds: s, intervalSeconds: i)
        if let d = o["delay"] {
            guard let n = d as? Int, let m = UInt16(exactly: n) else {
                throw TagImageError("'sensorLog.delay' must be minutes, 0 to 65535")
            }
            log.delayMinutes = m
        }
        /// A true/false key, when given.
        func flag(_ key: String, _ meaning: String = "true or false") throws(TagImageError) -> Bool? {
            guard let b = o[key] else { return nil }
            guard let v = b as? Bool else { throw TagImageError("'sensorLog.\(key)' must be \(meaning)") }
            return v
        }
        log.logging = try flag("logging") ?? log.logging
        log.batteryOK = try flag("battery", "true (ok) or false (low)") ?? log.batteryOK
        if let c = o["celsius"] {
            guard let list = c as? [Any] else { throw TagImageError("'sensorLog.celsius' must be an array of numbers") }
            for item in list {
                guard let n = (item as? NSNumber)?.doubleValue, n.isFinite, n >= -128, n <= 127.75 else {
                    throw TagImageError("'sensorLog.celsius' entries must be numbers from -128 to 127.75")
                }
                log.celsius.append(n)
            }
            guard log.celsius.count <= 4864 else { throw TagImageError("'sensorLog.celsius': at most 4864 records") }
            // A SmarTag's value cell holds whole degrees from -40 to 86 (7 bits, v - 40; 0x7F is "none").
            if kind == "smartag", log.celsius.contains(where: { $0 != $0.rounded() || $0 < -40 || $0 > 86 }) {
                throw TagImageError("'sensorLog.celsius': a SmarTag logs whole degrees from -40 to 86")
            }
        }
        if let b = o["byte-order"] {
            guard let v = b as? String, v == "msb" || v == "lsb" else {
                throw TagImageError("'sensorLog.byte-order' must be \"msb\" or \"lsb\"")
            }
            log.byteOrder = v
        }
        log.manufacturerByte = try flag("manufacturer-byte") ?? log.manufacturerByte
        if let c = o["current"] {
            guard let n = (c as? NSNumber)?.doubleValue, n.isFinite, n >= -128, n <= 127.75 else {
                throw TagImageError("'sensorLog.current' must be a number from -128 to 127.75")
            }
            log.currentCelsius = n
        }
        return log
    }

    static func encode(_ image: TagImage) throws(TagImageError) -> String {
        var o: [String: Any] = [
            "format": formatName, "version": 1, "uid": image.uid.description,
            "dsfid": Hex.format([image.dsfid]), "dsfidLocked": image.dsfidLocked,
            "afi": Hex.format([image.afi]), "afiLocked": image.afiLocked,
            "blockSize": image.blockSize, "blocks": image.blocks.map { Hex.format($0, separator: "") },
            "lockedBlocks": image.locked.indices.filter { image.locked[$0] }.map {
                (BlockNumber(exactly: $0) ?? 0).description
            },
        ]
        if let p = image.profileID { o["profile"] = p }
        if let ic = image.icReference { o["icReference"] = Hex.format([ic]) }
        if let s = image.signature { o["signature"] = Hex.format(s, separator: "") }
        if !image.nxpPasswords.isEmpty {
            var passwords: [String: String] = [:]
            for (name, id) in Self.nxpPasswordIDs {
                if let p = image.nxpPasswords[id] { passwords[name] = Hex.format(p, separator: "") }
            }
            o["nxpPasswords"] = passwords
        }
        if image.privacy { o["privacy"] = true }
        if let c = image.slixCapabilities { o["slixCapabilities"] = c }
        if let l = image.easLocked { o["easLocked"] = l }
        if let l = image.protectionLocked { o["protectionLocked"] = l }
        if let r = image.stAreaRegisters { o["stAreaRegisters"] = Hex.format(r, separator: "") }
        if !image.stPasswords.isEmpty {
            o["stPasswords"] = Dictionary(
                uniqueKeysWithValues: image.stPasswords.map { (String($0.key), Hex.format($0.value, separator: "")) })
        }
        if let l = image.sensorLog {
            o["sensorLog"] =
                [
                    "kind": l.kind, "start": Int(l.startSeconds), "interval": Int(l.intervalSeconds),
                    "delay": Int(l.delayMinutes), "logging": l.logging, "battery": l.batteryOK, "celsius": l.celsius,
                    "current": l.currentCelsius,
                ] as [String: Any]
        }
        if let p = image.protectionPointer {
            o["protectionPointer"] = Hex.format([p])
            o["protectionCondition"] = Hex.format([image.protectionCondition])
        }
        return try serialize(o)
    }
}

// MARK: - Proxmark3 "15693 v4" / "15693 v5"

/// Proxmark3 JSON dumps (`client/src/fileutils.c`, `json15_save_tag`): `$.Card.uid` (8 bytes as stored
/// in pm3's `iso15_tag_t`, i.e. on-air order, least-significant first), `dsfid`, `dsfidlock`, `afi`,
/// `afilock`, `bytesperpage`, `pagescount` (1 byte in v4, 2 bytes little-endian in v5), `ic`, `locks`
/// (one byte per page), `random`, `privacypasswd`, `state`; and `$.blocks.N` = hex of page N.
enum Proxmark3ImageCodec {
    static func decode(_ text: String, fileName: String? = nil) throws(TagImageError) -> TagImage {
        let o = try parseJSONObject(text)
        guard let type = o["FileType"] as? String else { throw TagImageError("no 'FileType'; not a Proxmark3 dump") }
        if ["15693", "15693 v2", "15693 v3"].contains(type) { return try legacy(o, type: type, fileName: fileName) }
        guard type == "15693 v4" || type == "15693 v5" else {
            throw TagImageError(
                "Proxmark3 FileType '\(type)' is not an ISO 15693 dump this vlogger reads (\"15693\", \"15693 v2\" to \"15693 v5\")"
            )
        }
        guard let card = o["Card"] as? [String: Any] else { throw TagImageError("no 'Card' object") }
        guard let uidText = card["uid"] as? String else { throw TagImageError("'Card.uid' is missing") }
        let uid: UID
        do { uid = try UID(onAir: try hexBytes(uidText, "Card.uid")) } catch let e as TagImageError { throw e } catch {
            throw TagImageError(
                "'Card.uid' \(uidText): \(error) (Proxmark3 stores the UID least-significant byte first)")
        }
        let size = Int(try hexByte(card["bytesperpage"], "Card.bytesperpage"))
        let pcBytes = try hexBytes(card["pagescount"] as? String ?? "", "Card.pagescount")
        guard (1...2).contains(pcBytes.count) else {
            throw TagImageError("'Card.pagescount' must be 1 (v4) or 2 (v5) bytes")
        }
        let count = pcBytes.count == 1 ? Int(pcBytes[0]) : Int(pcBytes[0]) | Int(pcBytes[1]) << 8
        guard let blocksObj = o["blocks"] as? [String: Any] else { throw TagImageError("no 'blocks' object") }
        var blocks: [[UInt8]] = []
        for i in 0..<count {
            guard let t = blocksObj[String(i)] as? String else {
                throw TagImageError("'blocks.\(i)' is missing; pagescount says \(count) pages")
            }
            blocks.append(try hexBytes(t, "blocks.\(i)"))
        }
        var locked = Array(repeating: false, count: count)
        if let lt = card["locks"] as? String {
            let l = try hexBytes(lt, "Card.locks")
            for i in 0..<min(count, l.count) { locked[i] = l[i] & 0x01 != 0 }
        }
        let ic = try hexByte(card["ic"] ?? "00", "Card.ic")
        // The privacy password in on-air order (armsrc/iso15693.c un-XORs the wire bytes into it); a dump never
        // reads it, so Proxmark3 writes 00000000 there: that is taken as not known (docs/reference/flipper-slix.md).
        var privacy: [UInt8]?
        if let text = (card["privacypasswd"] ?? card["privacyPasswd"]) as? String {
            let p = try hexBytes(text, "Card.privacypasswd")
            guard p.count == 4 else { throw TagImageError("'Card.privacypasswd' must be 4 bytes in hex") }
            if p != [0, 0, 0, 0] { privacy = p }
        }
        var image = try TagImage(
            uid: uid, dsfid: try hexByte(card["dsfid"] ?? "00", "Card.dsfid"),
            dsfidLocked: try hexByte(card["dsfidlock"] ?? "00", "Card.dsfidlock") != 0,
            afi: try hexByte(card["afi"] ?? "00", "Card.afi"),
            afiLocked: try hexByte(card["afilock"] ?? "00", "Card.afilock") != 0,
            blockSize: size, blocks: blocks, locked: locked, icReference: ic)
        image.nxpPasswords[0x04] = privacy
        return image
    }

    /// The dumps Proxmark3 wrote from 2020 to January 2024, which its current loader still reads
    /// (`client/src/fileutils.c` `loadFileJSONex`; docs/reference/proxmark3-dumps.md): `"15693"` has the memory
    /// as one hex string `raw` in 4-byte blocks, `"15693 v2"` and `"15693 v3"` have `blocks.N` of 4 and 8 bytes,
    /// from block 0 up to the first one missing (a shorter block is padded with zeros, as Proxmark3 does). None
    /// carries the UID, DSFID, AFI, IC reference or lock bits: the UID comes from the file name Proxmark3 gives a
    /// dump (`hf-15-<UID>-dump…`, most significant byte first), else it is E0 00 00 00 00 00 00 00 as Proxmark3's
    /// loader makes it; the rest is zero and unlocked.
    static func legacy(_ o: [String: Any], type: String, fileName: String?) throws(TagImageError) -> TagImage {
        let size = type == "15693 v3" ? 8 : 4
        var blocks: [[UInt8]] = []
        if type == "15693" {
            guard let raw = o["raw"] as? String else { throw TagImageError("no 'raw' in a \"15693\" dump") }
            let bytes = try hexBytes(raw, "raw")
            guard !bytes.isEmpty, bytes.count % 4 == 0, bytes.count <= 2048 else {
                throw TagImageError(
                    "'raw' has \(bytes.count) bytes; a \"15693\" dump holds whole 4-byte blocks, at most 2048 bytes")
            }
            blocks = stride(from: 0, to: bytes.count, by: 4).map { Array(bytes[$0..<$0 + 4]) }
        } else {
            guard let obj = o["blocks"] as? [String: Any] else { throw TagImageError("no 'blocks' object") }
            while blocks.count < 256, let t = obj[String(blocks.count)] as? String {
                var b = try hexBytes(t, "blocks.\(blocks.count)")
                guard b.count <= size else {
                    throw TagImageError(
                        "'blocks.\(blocks.count)' has \(b.count) bytes; a \"\(type)\" dump has \(size)-byte blocks")
                }
                b += Array(repeating: 0, count: size - b.count)
                blocks.append(b)
            }
            guard !blocks.isEmpty else { throw TagImageError("'blocks.0' is missing: the dump holds no block") }
        }
        var uid = UID(manufacturer: ManufacturerCode(0), serial: 0)
        if let name = fileName.map({ ($0 as NSString).lastPathComponent }),
            let m = name.firstMatch(of: /^hf-15-([0-9A-Fa-f]{16})-dump/), let u = try? UID(parsing: String(m.1))
        {
            uid = u
        }
        return try TagImage(uid: uid, blockSize: size, blocks: blocks)
    }

    static func encode(_ image: TagImage, updating original: String?) throws(TagImageError) -> String {
        // Upstream Proxmark3 writes and loads "15693 v4" only, with at most ISO15693_TAG_MAX_PAGES = 160 pages and
        // ISO15693_TAG_MAX_SIZE = 2048 bytes (include/iso15.h; fileutils.c refuses more): write what it can load.
        guard image.blockCount <= 160, image.blockCount * image.blockSize <= 2048 else {
            throw TagImageError(
                "a Proxmark3 dump (\"15693 v4\") holds at most 160 pages and 2048 bytes, the limits of Proxmark3's own loader; this tag has \(image.blockCount) blocks of \(image.blockSize) bytes: use the vlogger or Flipper format"
            )
        }
        var o: [String: Any] = (original.flatMap { try? parseJSONObject($0) }) ?? ["Created": "vlogger"]
        o["FileType"] = "15693 v4"
        o["raw"] = nil  // a "15693" dump written back is a v4 one: its memory is in blocks now
        var card = (o["Card"] as? [String: Any]) ?? [:]
        card["uid"] = Hex.format(image.uid.onAirBytes, separator: "")
        card["dsfid"] = Hex.format([image.dsfid])
        card["dsfidlock"] = image.dsfidLocked ? "01" : "00"
        card["afi"] = Hex.format([image.afi])
        card["afilock"] = image.afiLocked ? "01" : "00"
        card["bytesperpage"] = Hex.format([UInt8(image.blockSize)])
        let n = image.blockCount
        card["pagescount"] = Hex.format([UInt8(n)])
        card["ic"] = Hex.format([image.icReference ?? 0])
        card["locks"] = Hex.format(image.locked.map { $0 ? UInt8(1) : 0 }, separator: "")
        if card["random"] == nil { card["random"] = "0000" }
        if let p = image.nxpPasswords[0x04] {
            card["privacypasswd"] = Hex.format(p, separator: "")
        } else if card["privacypasswd"] == nil {
            card["privacypasswd"] = "00000000"
        }
        if card["state"] == nil { card["state"] = "00" }
        o["Card"] = card
        var blocks: [String: Any] = [:]
        for (i, b) in image.blocks.enumerated() { blocks[String(i)] = Hex.format(b, separator: "") }
        o["blocks"] = blocks
        return try serialize(o)
    }
}

// MARK: - Flipper .nfc

/// Flipper Zero `.nfc` text files (`lib/nfc/protocols/iso15693_3/iso15693_3.c` keys): `Device type:
/// ISO15693-3` (or `SLIX`, which adds password and privacy keys), `UID` (most-significant first),
/// `DSFID`, `AFI`, `IC Reference`, `Lock DSFID`, `Lock AFI`, `Block Count`, `Block Size` (hex),
/// `Data Content` (all blocks), `Security Status` (one byte per block, 01 = locked).
enum FlipperImageCodec {
    /// The lines of a file with any line ends (LF, CRLF, CR), and the line end it uses (the first one found).
    static func lines(_ text: String) -> (lines: [String], ending: String) {
        let scalars = Array(text.unicodeScalars)
        var out: [String] = [], current = String.UnicodeScalarView(), ending: String?
        var i = 0
        while i < scalars.count {
            let c = scalars[i]
            if c == "\r" || c == "\n" {
                let crlf = c == "\r" && i + 1 < scalars.count && scalars[i + 1] == "\n"
                if ending == nil { ending = crlf ? "\r\n" : String(c) }
                out.append(String(current))
                current = String.UnicodeScalarView()
                i += crlf ? 2 : 1
            } else {
                current.append(c)
                i += 1
            }
        }
        if !current.isEmpty { out.append(String(current)) }
        return (out, ending ?? "\n")
    }

    /// Flipper's reader takes the first line of a key: so does this one.
    static func fields(_ lines: [String]) -> [String: String] {
        var fields: [String: String] = [:]
        for line in lines {
            let t = line.trimmingCharacters(in: .whitespaces)
            if t.hasPrefix("#") { continue }
            guard let colon = t.firstIndex(of: ":") else { continue }
            let key = String(t[..<colon]).trimmingCharacters(in: .whitespaces)
            if fields[key] == nil {
                fields[key] = String(t[t.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            }
        }
        return fields
    }

    static func decode(_ text: String) throws(TagImageError) -> TagImage {
        let fields = fields(lines(text).lines)
        guard fields["Filetype"] == "Flipper NFC device" else {
            throw TagImageError("not a Flipper NFC file (no 'Filetype: Flipper NFC device')")
        }
        let type = fields["Device type"] ?? ""
        guard ["ISO15693-3", "ISO15693", "SLIX"].contains(type) else {
            throw TagImageError("Flipper device type '\(type)' is not ISO 15693; expected ISO15693-3 or SLIX")
        }
        func need(_ key: String) throws(TagImageError) -> String {
            guard let v = fields[key] else { throw TagImageError("'\(key)' is missing") }
            return v
        }
        let uid: UID
        do { uid = try UID(parsing: try need("UID")) } catch let e as TagImageError { throw e } catch {
            throw TagImageError("'UID': \(error)")
        }
        guard let count = Int(try need("Block Count")), (1...65536).contains(count) else {
            throw TagImageError("'Block Count' must be a decimal number of blocks, 1…65536")
        }
        let sizeBytes = try hexBytes(try need("Block Size"), "Block Size")
        guard sizeBytes.count == 1 else { throw TagImageError("'Block Size' must be one hex byte, e.g. 04") }
        let size = Int(sizeBytes[0])
        let data = try hexBytes(try need("Data Content"), "Data Content")
        guard size > 0, data.count == count * size else {
            throw TagImageError("'Data Content' has \(data.count) bytes; Block Count × Block Size is \(count * size)")
        }
        let blocks = stride(from: 0, to: data.count, by: size).map { Array(data[$0..<($0 + size)]) }
        var locked = Array(repeating: false, count: count)
        var dsfidLocked = fields["Lock DSFID"] == "true", afiLocked = fields["Lock AFI"] == "true"
        if let s = fields["Security Status"] {
            var st = try hexBytes(s, "Security Status")
            // Flipper's legacy layout (its loader, iso15693_3.c `iso15693_3_load_security_legacy`): without the
            // Lock DSFID / Lock AFI keys, N + 1 bytes, the first holding the DSFID (b0) and AFI (b1) locks.
            if fields["Lock DSFID"] == nil && fields["Lock AFI"] == nil && st.count == count + 1 {
                dsfidLocked = st[0] & 0x01 != 0
                afiLocked = st[0] & 0x02 != 0
                st.removeFirst()
            }
            guard st.count == count else {
                throw TagImageError(
                    "'Security Status' has \(st.count) bytes for \(count) blocks (one per block, or one more in Flipper's legacy layout)"
                )
            }
            for i in 0..<count { locked[i] = st[i] & 0x01 != 0 }
        }
        var image = try TagImage(
            uid: uid, dsfid: try hexByte(fields["DSFID"] ?? "00", "DSFID"), dsfidLocked: dsfidLocked,
            afi: try hexByte(fields["AFI"] ?? "00", "AFI"), afiLocked: afiLocked,
            blockSize: size, blocks: blocks, locked: locked,
            icReference: fields["IC Reference"] == nil ? nil : try hexByte(fields["IC Reference"], "IC Reference"))
        image.dsfidKnown = fields["DSFID"] != nil
        image.afiKnown = fields["AFI"] != nil
        if type == "SLIX", let slix = SlixType(uid: uid) { try decodeSLIX(fields, slix, into: &image) }
        return image
    }

    /// The SLIX keys Flipper writes for the type the UID says (`slix_load`; docs/reference/flipper-slix.md): every
    /// one optional, a key the type does not have ignored as Flipper ignores it, a malformed value an error naming the
    /// key (Flipper refuses such a file too).
    static func decodeSLIX(_ fields: [String: String], _ slix: SlixType, into image: inout TagImage)
        throws(TagImageError)
    {
        func bytes(_ key: String, _ count: Int) throws(TagImageError) -> [UInt8]? {
            guard let v = fields[key] else { return nil }
            let b = try hexBytes(v, key)
            guard b.count == count else {
                throw TagImageError(
                    "'\(key)' has \(b.count) bytes; it must be \(count) bytes in hex, e.g. \(Hex.format(Array(repeating: UInt8(0), count: min(count, 4))))"
                )
            }
            return b
        }
        func bool(_ key: String) throws(TagImageError) -> Bool? {
            guard let v = fields[key] else { return nil }
            switch v.lowercased() {
            case "true": return true
            case "false": return false
            default: throw TagImageError("'\(key)' is '\(v)'; it must be true or false")
            }
        }
        if let c = fields["Capabilities"] {
            guard flipperCapabilities.contains(c) else {
                throw TagImageError(
                    "'Capabilities' is '\(c)'; Flipper knows \(flipperCapabilities.joined(separator: " and ")) (and refuses a file with another)"
                )
            }
            image.slixCapabilities = c
        }
        // A Flipper file holds a password as NXP's 32-bit value written most significant byte first (Flipper's own
        // uint32_t, least significant byte first); it goes on the air least significant byte first (slix_poller_i.c, slix_listener_i.c `slix_listener_unxor_password`), the order an
        // image and the secrets file keep: the bytes are reversed (docs/reference/flipper-slix.md).
        for id in slix.passwordIDs {
            guard let key = SlixType.passwordKey(id)?.key, let p = try bytes(key, 4) else { continue }
            image.nxpPasswords[id] = p.reversed()
        }
        if slix.hasSignature, let sig = try bytes("Signature", 32) { image.signature = sig }
        if slix.hasPrivacy, let p = try bool("Privacy Mode") { image.privacy = p }
        if slix.hasPageProtection, let pointer = try bytes("Protection Pointer", 1),
            let condition = try bytes("Protection Condition", 1)
        {
            image.protectionPointer = pointer[0]
            image.protectionCondition = condition[0]
        }
        if let l = try bool("Lock EAS") { image.easLocked = l }
        if slix.hasPageProtection, let l = try bool("Lock PPL") { image.protectionLocked = l }
    }

    /// Flipper's SLIX `Capabilities` values (slix.c `slix_capabilities_names`).
    static let flipperCapabilities = ["Default", "AcceptAllPasswords"]

    /// The SLIX keys of an image, in the order Flipper writes and reads them (each key is searched forward from the one
    /// read before it), each with the comment Flipper writes before it (nil: none). Only what the image knows.
    static func slixValues(_ image: TagImage) -> [(key: String, value: String, comment: String?)] {
        guard deviceType(image.uid) == "SLIX", let slix = SlixType(uid: image.uid) else { return [] }
        var out: [(key: String, value: String, comment: String?)] = []
        if let c = image.slixCapabilities {
            out.append(
                (
                    "Capabilities", c,
                    "# SLIX capabilities field affects emulation modes. Possible options: Default, AcceptAllPasswords"
                ))
        }
        var first = true
        for id in slix.passwordIDs {
            guard let key = SlixType.passwordKey(id)?.key, let p = image.nxpPasswords[id] else { continue }
            out.append(
                (
                    key, Hex.format(p.reversed()),
                    first ? "# Passwords are optional. If a password is omitted, a default value will be used" : nil
                ))
            first = false
        }
        if slix.hasSignature, let sig = image.signature, sig.count == 32 {
            out.append(
                (
                    "Signature", Hex.format(sig),
                    "# This is the card's secp128r1 elliptic curve signature. It can not be calculated without knowing NXP's private key."
                ))
        }
        if slix.hasPrivacy { out.append(("Privacy Mode", image.privacy ? "true" : "false", nil)) }
        if slix.hasPageProtection, let pointer = image.protectionPointer {
            out.append(("Protection Pointer", Hex.format([pointer]), "# Protection pointer configuration"))
            out.append(("Protection Condition", Hex.format([image.protectionCondition]), nil))
        }
        var locks = true
        if let l = image.easLocked {
            out.append(("Lock EAS", l ? "true" : "false", "# SLIX Lock Bits"))
            locks = false
        }
        if slix.hasPageProtection, let l = image.protectionLocked {
            out.append(("Lock PPL", l ? "true" : "false", locks ? "# SLIX Lock Bits" : nil))
        }
        return out
    }

    /// The device type Flipper saves the tag as, by its own rule (flipperzero-firmware
    /// `lib/nfc/protocols/slix/slix.c` `slix_get_type`, lines 331–355; constants lines 10–15): an NXP UID whose
    /// ICODE type (byte 5) is 0x02 or 0x03 is a SLIX-S or SLIX-L whatever the SLIX bit (so an ICODE SLI-S or
    /// SLI-L too), type 0x01 is a SLIX with type indicator 0b10 and a SLIX2 with 0b01 (bits 3–4 of byte 4);
    /// `Device type:` is the protocol name, `SLIX` for all four. Everything else is ISO15693-3.
    static func deviceType(_ uid: UID) -> String {
        guard uid.manufacturer == .nxp else { return "ISO15693-3" }
        let indicator = (uid.byte(4) >> 3) & 0x03
        switch uid.byte(5) {
        case 0x02, 0x03: return "SLIX"
        case 0x01 where indicator == 0b10 || indicator == 0b01: return "SLIX"
        default: return "ISO15693-3"
        }
    }

    static func encode(_ image: TagImage, updating original: String?) -> String {
        var values: [(String, String)] = [("UID", image.uid.spaced)]
        if image.dsfidKnown { values.append(("DSFID", Hex.format([image.dsfid]))) }
        if image.afiKnown { values.append(("AFI", Hex.format([image.afi]))) }
        if let ic = image.icReference { values.append(("IC Reference", Hex.format([ic]))) }
        values += [
            ("Lock DSFID", image.dsfidLocked ? "true" : "false"),
            ("Lock AFI", image.afiLocked ? "true" : "false"),
            ("Block Count", String(image.blockCount)),
            ("Block Size", Hex.format([UInt8(image.blockSize)])),
            ("Data Content", Hex.format(image.blocks.joined())),
            ("Security Status", Hex.format(image.locked.map { $0 ? UInt8(1) : 0 })),
        ]
        if let original {
            // The SLIX keys the image knows are rewritten too (or added in Flipper's order).
            values += slixValues(image).map { ($0.key, $0.value) }
            // Rewrite in place, keeping the file's line ends and every other key (device type, SLIX passwords).
            let (parsed, ending) = lines(original)
            var lines = parsed
            var done = Set<String>()
            for i in lines.indices where !lines[i].trimmingCharacters(in: .whitespaces).hasPrefix("#") {
                guard let colon = lines[i].firstIndex(of: ":") else { continue }
                let indent = String(lines[i].prefix { $0 == " " || $0 == "\t" })
                let key = String(lines[i][..<colon]).trimmingCharacters(in: .whitespaces)
                guard !done.contains(key), let v = values.first(where: { $0.0 == key }) else { continue }
                lines[i] = "\(indent)\(key): \(v.1)"
                done.insert(key)
            }
            // Keys the file did not have: the lock keys (a legacy file becomes the current layout, its
            // Security Status one byte a block) and what the tag reported anew. Flipper reads the keys in this
            // order, each searched forward from the one before (flipper_format), so a key goes before the first
            // key the file has that Flipper reads after it, not at the end.
            let order = values.map(\.0)
            func keyOf(_ line: String) -> String? {
                let t = line.trimmingCharacters(in: .whitespaces)
                guard !t.hasPrefix("#"), let colon = t.firstIndex(of: ":") else { return nil }
                return String(t[..<colon]).trimmingCharacters(in: .whitespaces)
            }
            for (k, v) in values where !done.contains(k) {
                guard let mine = order.firstIndex(of: k) else { continue }
                let later = lines.firstIndex { l in
                    keyOf(l).flatMap { order.firstIndex(of: $0) }.map { $0 > mine } ?? false
                }
                let earlier = lines.lastIndex { l in
                    keyOf(l).flatMap { order.firstIndex(of: $0) }.map { $0 < mine } ?? false
                }
                let at = later ?? earlier.map { $0 + 1 } ?? lines.count
                lines.insert("\(k): \(v)", at: at)
                done.insert(k)
            }
            while lines.last?.isEmpty == true { lines.removeLast() }
            return lines.joined(separator: ending) + ending
        }
        // Flipper's own layout and comments (lib/nfc/nfc_device.c, iso15693_3.c and slix.c at 217bfac2), so that a file
        // Flipper wrote comes back byte for byte; the device-type list is that firmware's (only a comment).
        let type = deviceType(image.uid)
        var out = [
            "Filetype: Flipper NFC device", "Version: 4",
            "# Device type can be ISO14443-3A, ISO14443-3B, ISO14443-4A, ISO14443-4B, ISO15693-3, FeliCa, NTAG/Ultralight, Mifare Classic, Mifare DESFire, SLIX, ST25TB",
            "Device type: \(type)", "# UID is common for all formats", "UID: \(image.uid.spaced)",
            "# ISO15693-3 specific data",
        ]
        let comments = [
            "DSFID": "# Data Storage Format Identifier", "AFI": "# Application Family Identifier",
            "IC Reference": "# IC Reference - Vendor specific meaning", "Lock DSFID": "# Lock Bits",
            "Block Count": "# Number of memory blocks, valid range = 1..256",
            "Block Size": "# Size of a single memory block, valid range = 01...20 (hex)",
            "Security Status": "# Block Security Status: 01 = locked, 00 = not locked",
        ]
        for (k, v) in values.dropFirst() {
            if let c = comments[k] { out.append(c) }
            out.append("\(k): \(v)")
        }
        if type == "SLIX" {
            out.append("# SLIX specific data")
            let slix = slixValues(image)
            if !slix.contains(where: { $0.key.hasPrefix("Password") }) {
                out.append(
                    "# Passwords, privacy mode and the EAS lock cannot be read over the air: the passwords are not known, so not written (Flipper uses its defaults)"
                )
            }
            for (k, v, c) in slix {
                if let c { out.append(c) }
                out.append("\(k): \(v)")
            }
        }
        return out.joined(separator: "\n") + "\n"
    }
}
