import ArgumentParser

@main
struct VLogger: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vlogger",
        abstract: "ISO/IEC 15693 (NFC Type 5) tag logger for Linux gateways.",
        discussion: """
            Tag commands work on the built-in simulated reader (--reader sim, the default; --field DIR picks the \
            folder of tag images, default Config/demo-field) through the same code path a hardware reader uses. \
            Block numbers are accepted as 0xF8 or 248; UIDs are written most-significant byte first (E004015012345678).
            """,
        version: BuildInfo.description,
        groupedSubcommands: [
            // The gateway's own commands first: what an operator runs on an installed gateway.
            CommandGroup(
                name: "Gateway",
                subcommands: [
                    Run.self, Export.self, AuditCommand.self, AssetsCommand.self, WritesCommand.self,
                    OutputsCommand.self, SyncCommand.self, CentralCommand.self, DoctorCommand.self, Watch.self,
                    ConfigCommand.self,
                    RulesCommand.self, StoreCommand.self, OPCUACommand.self,
                ]),
            CommandGroup(
                name: "Tag",
                subcommands: [
                    Scan.self, Info.self, Read.self, Write.self, Lock.self, NDEF.self, Dump.self, Restore.self,
                    SensorCommand.self,
                ]),
            CommandGroup(name: "Frame and reader", subcommands: [Raw.self, Decode.self, Devices.self]),
        ]
    )
}
