import Foundation
import Testing

@testable import OPCUA

/// The UNECE units table (the OPC Foundation's Schema/UNECE_to_OPCUA.csv at a2d4ae8) and OPC 10000-8 §5.6.3's rule
/// for a common code's UnitId (docs/reference/opcua.md, "Engineering units").
struct EngineeringUnitsTests {
    /// Every code of up to three ASCII characters has the UnitId the rule gives: the table and the rule agree, so
    /// neither the generator nor the file dropped or shifted a unit.
    @Test func everyUnitIdIsItsCodesCharactersPacked() {
        let units = EngineeringUnits.all
        #expect(units.count == 1827)
        var checked = 0
        for u in units {
            guard let id = EngineeringUnits.unitId(code: u.code) else { continue }
            #expect(id == u.unitId, "\(u.code)")
            checked += 1
        }
        #expect(checked == units.count, "every code is 1 to 3 ASCII characters")
        #expect(EngineeringUnits.unitId(code: "CEL") == 0x43_454C)
        #expect(EngineeringUnits.unitId(code: "ABCD") == nil && EngineeringUnits.unitId(code: "") == nil)
    }

    /// A configuration's unit text: the table's display name, the code, or an alias; the rest is no unit.
    @Test func unitsAreFoundByTheirDisplayNameCodeOrAlias() {
        #expect(EngineeringUnits.unit("°C")?.code == "CEL")
        #expect(EngineeringUnits.unit("°C")?.description == "degree Celsius")
        #expect(EngineeringUnits.unit("°F")?.unitId == 4_604_232)
        #expect(EngineeringUnits.unit("kPa")?.code == "KPA")
        #expect(EngineeringUnits.unit("mV")?.code == "2Z")
        #expect(EngineeringUnits.unit("%")?.code == "P1" && EngineeringUnits.unit("%RH")?.unitId == 20529)
        #expect(EngineeringUnits.unit("CEL")?.displayName == "°C")
        #expect(EngineeringUnits.unit(" lx ")?.code == "LUX")
        #expect(EngineeringUnits.unit("furlongs per fortnight") == nil && EngineeringUnits.unit("") == nil)
        let info = EngineeringUnits.unit("°C")!.information
        #expect(info.namespaceUri == "http://www.opcfoundation.org/UA/units/un/cefact" && info.unitId == 4_408_652)
    }
}
