import Foundation

/// Units as OPC UA gives them (EUInformation, OPC 10000-8 §5.6.3): a UNECE Recommendation 20 common code, its
/// UnitId, display name and description, from the OPC Foundation's table (`Generated/Units.swift`,
/// tools/opcua/units.py). A value's unit as vlogger's configuration writes it (`unit = "°C"`) is found by the
/// table's display name, by the common code itself, or by a few spellings plants use (`%RH`, `degC`).
public enum EngineeringUnits {
    /// The namespace of UNECE's codes in an EUInformation (OPC 10000-8 §5.6.3).
    public static let namespaceUri = "http://www.opcfoundation.org/UA/units/un/cefact"

    public struct Unit: Sendable, Equatable {
        public let code: String
        public let unitId: Int32
        public let displayName: String
        public let description: String

        public var information: EUInformation {
            EUInformation(
                namespaceUri: EngineeringUnits.namespaceUri, unitId: unitId, displayName: LocalizedText(displayName),
                description: LocalizedText(description))
        }
    }

    /// Every unit of the table, in its order.
    public static let all: [Unit] = uneceUnitLines.split(separator: "\n").compactMap { line in
        let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        guard f.count == 4, let id = Int32(f[1]) else { return nil }
        return Unit(code: f[0], unitId: id, displayName: f[2], description: f[3])
    }

    private static let byCode = Dictionary(all.map { ($0.code, $0) }, uniquingKeysWith: { first, _ in first })
    private static let byDisplay = Dictionary(
        all.map { ($0.displayName, $0) }, uniquingKeysWith: { first, _ in first })

    /// Spellings of units that are not a display name of the table: relative humidity is a percentage.
    static let aliases = [
        "%": "P1", "%RH": "P1", "% RH": "P1", "%rh": "P1", "pct": "P1", "degC": "CEL", "deg C": "CEL",
        "degF": "FAH", "ohm": "OHM", "Ohm": "OHM",
    ]

    /// The unit a text names (a display name such as `°C`, `kPa`, `V`; a common code such as `CEL`; an alias), or
    /// nil for one the table lacks.
    public static func unit(_ text: String) -> Unit? {
        let t = text.trimmingCharacters(in: .whitespaces)
        guard !t.isEmpty else { return nil }
        if let u = byDisplay[t] { return u }
        if let code = aliases[t], let u = byCode[code] { return u }
        return byCode[t]
    }

    /// The UnitId of a common code (OPC 10000-8 §5.6.3): its characters' ASCII codes, at most three, packed into an
    /// integer most significant first (`CEL` is 0x43454C, 4408652); nil for a code that is not 1 to 3 ASCII
    /// characters.
    public static func unitId(code: String) -> Int32? {
        let bytes = Array(code.utf8)
        guard (1...3).contains(bytes.count), bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        return bytes.reduce(Int32(0)) { $0 << 8 | Int32($1) }
    }
}
