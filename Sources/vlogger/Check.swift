import ArgumentParser
import Foundation
import VLoggerModel
import Readers
import VLoggerCore
import VLoggerOutbox
import VLoggerConfig

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "The configuration: check it, print a starter (sample), write the network drop-in.",
        subcommands: [ConfigCheck.self, ConfigNetwork.self, ConfigSample.self])
}

struct ConfigCheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract:
            "Validate a configuration file (and the rules and register it names); every error gives file:line and what was expected."
    )

    @Argument(help: "The file (default: Config/vlogger.toml, or --config).")
    var file: String?

    @Option(help: ConfigPath.help)
    var config = ConfigPath.found

    func run() throws {
        let path = file ?? config
        let c: AgentConfig
        do { c = try AgentConfig.load(path) } catch { throw VLoggerError("\(error)") }
        var issues: [String] = []
        var rules = RuleSet()
        var register: AssetRegister?
        do {
            (rules, register) = try RuleSet.load(
                rulesFile: c.rulesFile, registerFile: c.registerFile, plans: c.plans, configFile: path)
        } catch {
            issues.append("\(error)")
        }
        for r in c.readers {
            if let problem = r.driver.driver.preflight(field: r.field, device: r.device) {
                issues.append("\(path):\(r.line): reader '\(r.id)' \(problem)")
            }
        }
        let secrets = c.secretFileProblems()
        issues += secrets.errors
        if !issues.isEmpty { throw VLoggerError(issues.joined(separator: "\n")) }
        for w in c.warnings + secrets.warnings { FileHandle.standardError.write(Data("warning: \(w)\n".utf8)) }
        if c.plans.isEmpty {
            FileHandle.standardError.write(
                Data(
                    "warning: \(path): no [[plan]]: the gateway will record arrivals and departures but read no blocks\n"
                        .utf8))
        }
        let readers = c.readers.map { "\($0.id) (\($0.driver.rawValue)\($0.location.map { ", " + $0 } ?? ""))" }.joined(
            separator: ", ")
        print(
            "\(path): ok — gateway \(c.gatewayID), reader\(c.readers.count == 1 ? "" : "s") \(readers), every \(DurationText.format(c.intervalMs)), \(c.plans.count) plans, \(c.fieldInfos.count) fields, \(rules.rules.count) rules, \(register.map { "\($0.count) register entries" } ?? "no register"), store \(c.storePath)"
        )
    }
}

struct ConfigNetwork: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "network",
        abstract: "Write the systemd drop-in that lets the service reach the remote hosts the configuration names.",
        discussion: """
            The unit allows loopback only (IPAddressDeny=any), and systemd applies that to outgoing connections too: \
            the fleet-sync server and FEIG readers on the LAN need IPAddressAllow= lines. Host names are resolved now \
            (systemd takes addresses only). Without --output the drop-in is printed.
            """)

    @Option(help: ConfigPath.help)
    var config = ConfigPath.found

    @Option(
        help: "Write the drop-in here (e.g. /etc/systemd/system/vlogger.service.d/network.conf), creating the folder.")
    var output: String?

    func run() throws {
        let c: AgentConfig
        c = try ConfigPath.load(config)
        let (text, unresolved) = NetworkAllowance.dropIn(c.remotes, source: config)
        if let output {
            let dir = (output as NSString).deletingLastPathComponent
            do {
                try FileManager.default.createDirectory(
                    atPath: dir.isEmpty ? "." : dir, withIntermediateDirectories: true)
                try text.write(toFile: output, atomically: true, encoding: .utf8)
            } catch { throw VLoggerError("cannot write \(output): \(error.localizedDescription)") }
            print(
                "\(output): \(c.remotes.count) remote host\(c.remotes.count == 1 ? "" : "s") allowed; systemctl daemon-reload && systemctl restart vlogger"
            )
        } else {
            print(text, terminator: "")
        }
        for h in unresolved {
            FileHandle.standardError.write(
                Data("warning: \(h) did not resolve; it is left out (write the drop-in again once it does)\n".utf8))
        }
    }
}

struct RulesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rules", abstract: "Check rules.", subcommands: [RulesCheck.self])
}

struct RulesCheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract:
            "Validate a rules file (and the register columns it uses); every error gives file:line and what was expected."
    )

    @Argument(help: "The rules file (default: the one named in the configuration).")
    var file: String?

    @Option(help: "Configuration file (TOML), for the default rules file and the register.")
    var config = ConfigPath.found

    func run() throws {
        var registerFile: String?
        var plans: [ReadPlan]?
        var path = file
        if FileManager.default.fileExists(atPath: config) {
            let c: AgentConfig
            c = try ConfigPath.load(config)
            path = path ?? c.rulesFile
            registerFile = c.registerFile
            plans = c.plans
        }
        guard let path else { throw ValidationError("no rules file: name one, or set [rules] file in \(config)") }
        let rules: RuleSet
        do {
            rules = try RuleSet.load(rulesFile: path, registerFile: registerFile, plans: plans, configFile: config)
                .rules
        } catch {
            throw VLoggerError("\(error)")
        }
        print("\(path): ok — \(rules.rules.count) rules")
        for r in rules.rules { print("  \(r.name) (\(r.severity.rawValue))") }
    }
}

struct ConfigSample: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sample",
        abstract: "Print a commented starter configuration for a reader driver (sim, pcsc or feig).",
        discussion: """
            vlogger config sample --driver pcsc > /etc/vlogger/vlogger.toml, then edit the marked lines and run \
            vlogger config check. Config/vlogger.toml in the repository documents every key.
            """)

    @Option(
        help: ArgumentHelp(
            "The reader driver: \(Self.samples.map(\.name).joined(separator: ", ")).",
            discussion: Self.samples.map { "\($0.name): \($0.summary)" }.joined(separator: "; ")))
    var driver: ReaderKind = .default

    @Option(
        name: .customLong("output"),
        help: ArgumentHelp(
            "Add a commented section for an output kind (\(OutputKinds.all.map(\.section.key).joined(separator: ", "))); repeat for more.",
            discussion: OutputKinds.all.map { "\($0.section.key): \($0.summary)" }.joined(separator: "; ")))
    var outputs: [String] = []

    /// The drivers that can poll tags (they have a sample `[[reader]]`).
    static var samples: [any ReaderDriver] { ReaderDrivers.all.filter { $0.sampleReader != nil } }

    func validate() throws {
        let keys = OutputKinds.all.map(\.section.key)
        for o in outputs where !keys.contains(o) {
            let near = NearestName.nearest(o, in: keys).map { " (did you mean '\($0)'?)" } ?? ""
            throw ValidationError("--output \(o): not an output kind\(near); choose \(keys.joined(separator: ", "))")
        }
        guard driver.driver.sampleReader != nil else {
            throw ValidationError(
                "--driver \(driver): it cannot poll tags; choose \(Self.samples.map(\.name).joined(separator: ", "))")
        }
    }

    static func text(_ driver: ReaderKind) -> String {
        let reader = driver.driver.sampleReader ?? ""
        return """
            # vlogger configuration (vlogger config sample --driver \(driver.rawValue)). Paths are relative to this file.
            # Unknown keys are errors; `vlogger config check FILE` checks it. Durations: 500ms, 2s, 5m, 1h.

            [gateway]
            id = "gw-01"                          # EDIT: this gateway's id, in every row it stores; no spaces
            # site = "Plant, hall 2"

            [[reader]]
            id = "reader-1"                       # EDIT: letters, digits, '-', '_', '.'
            \(reader)
            location = "Dock door 1"              # EDIT: where the reader is (audits and reports use it)

            [polling]
            interval = "1s"
            departure-cycles = 3

            [store]
            path = "vlogger.db"                   # an installed gateway: /var/lib/vlogger/vlogger.db
            # keep = "30d"                        # delete older rows (never rows an output has not acknowledged)

            # [rules]
            # file = "rules.toml"
            # register = "assets.csv"             # the asset register: a CSV with uid and asset_id columns

            # [service]
            # listen = "127.0.0.1:9715"           # /healthz, /metrics, the status page and the read API

            # [[plan]]                            # what to read from which tags
            # name = "sensor"
            # match.manufacturer = "NXP"
            #   [[plan.read]]
            #   first = 0xF8
            #   count = 1

            """
    }

    func run() throws {
        print(Self.text(driver), terminator: "")
        var printed = Set<String>()
        for o in outputs where printed.insert(o).inserted {
            guard let kind = OutputKinds.all.first(where: { $0.section.key == o }) else { continue }
            print(kind.sample, terminator: "")
        }
    }
}
