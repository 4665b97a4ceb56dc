import Foundation
import Testing

/// Issue 47, item 9: the Grafana dashboard (deploy/grafana-dashboard.json) showed a down reader as a green 0 (no
/// thresholds or value mappings on Reader up, Store up, the poll age), put °C, % and ADC counts on one axis, was in
/// UTC and had no gateway variable. Read as Grafana's dashboard JSON model has it (panels with `fieldConfig.defaults`
/// `thresholds.steps` and `mappings`, `templating.list`, `repeat`, `timezone`: grafana.com/docs, "JSON model").
/// That every metric it asks for is exported is checked against a running service (IntegrationTests/ServiceTests).
@Suite struct DashboardTests {
    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("deploy/grafana-dashboard.json")

    static func dashboard() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
    }

    static func panel(_ d: [String: Any], _ title: String) throws -> [String: Any] {
        let panels = try #require(d["panels"] as? [[String: Any]])
        return try #require(panels.first { $0["title"] as? String == title }, "no panel \(title)")
    }

    static func exprs(_ p: [String: Any]) -> [String] {
        (p["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String }
    }

    static func defaults(_ p: [String: Any]) -> [String: Any] {
        (p["fieldConfig"] as? [String: Any])?["defaults"] as? [String: Any] ?? [:]
    }

    /// The threshold steps as (value, colour), the base step's value nil.
    static func steps(_ p: [String: Any]) -> [(Double?, String)] {
        let t = defaults(p)["thresholds"] as? [String: Any]
        return (t?["steps"] as? [[String: Any]] ?? []).map { ($0["value"] as? Double, $0["color"] as? String ?? "") }
    }

    @Test func upPanelsSayDownInRedAndUpInGreen() throws {
        let d = try Self.dashboard()
        for title in ["Reader up", "Store up"] {
            let p = try Self.panel(d, title)
            let steps = Self.steps(p)
            #expect(steps.first?.0 == nil && steps.first?.1 == "red", "\(title): \(steps)")
            #expect(steps.contains { $0.0 == 1 && $0.1 == "green" }, "\(title): \(steps)")
            let mappings = Self.defaults(p)["mappings"] as? [[String: Any]] ?? []
            let values = mappings.compactMap { $0["options"] as? [String: Any] }.reduce(into: [String: [String: Any]]())
            {
                for (k, v) in $1 { if let v = v as? [String: Any] { $0[k] = v } }
            }
            #expect(values["0"]?["color"] as? String == "red" && values["0"]?["text"] as? String == "DOWN", "\(title)")
            #expect(values["1"]?["color"] as? String == "green", "\(title)")
            // No data is not "up" either.
            #expect(mappings.contains { $0["type"] as? String == "special" }, "\(title)")
        }
    }

    @Test func thePollAgeTurnsAmberThenRed() throws {
        let p = try Self.panel(try Self.dashboard(), "Since the last good poll")
        #expect(Self.exprs(p).allSatisfy { $0.hasPrefix("time() - ") }, "\(Self.exprs(p))")
        #expect(Self.defaults(p)["unit"] as? String == "s")
        let steps = Self.steps(p)
        #expect(steps.first?.1 == "green" && steps.count == 3, "\(steps)")
        #expect(steps.dropFirst().allSatisfy { $0.1 != "green" && ($0.0 ?? 0) >= 60 }, "\(steps)")
        #expect(steps.last?.1 == "red")
    }

    /// One axis per unit: the plant values panel repeats per unit, and every query of a plant value names its unit;
    /// the rules' limits are drawn beside the values of their unit.
    @Test func plantValuesArePerUnitWithTheRulesLimits() throws {
        let d = try Self.dashboard()
        let panels = try #require(d["panels"] as? [[String: Any]])
        let values = panels.filter { Self.exprs($0).contains { $0.contains("vlogger_field_value") } }
        #expect(values.count >= 1)
        #expect(values.contains { $0["repeat"] as? String == "unit" })
        for p in values {
            for e in Self.exprs(p) where e.contains("vlogger_field_value") || e.contains("vlogger_rule_limit") {
                #expect(e.contains("unit=~\"$unit\"") || e.contains("unit=\"\""), "\(p["title"] ?? ""): \(e)")
            }
            #expect(Self.exprs(p).contains { $0.contains("vlogger_rule_limit") }, "\(p["title"] ?? "")")
        }
    }

    @Test func aGatewayVariableAndThePlantsTimeZone() throws {
        let d = try Self.dashboard()
        #expect((d["timezone"] as? String)?.lowercased() != "utc")
        let variables = try #require((d["templating"] as? [String: Any])?["list"] as? [[String: Any]])
        let gateway = try #require(variables.first { $0["name"] as? String == "gateway" })
        #expect(gateway["definition"] as? String == "label_values(vlogger_gateway_info, gateway)", "\(gateway)")
        // Every query is of the chosen gateways' instances.
        let panels = try #require(d["panels"] as? [[String: Any]])
        for p in panels {
            for e in Self.exprs(p) { #expect(e.contains("instance=~\"$instance\""), "\(p["title"] ?? ""): \(e)") }
        }
    }
}
