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
        subcommands: [
            Scan.self, Watch.self, Info.self, Read.self, Write.self, Lock.self, NDEF.self, Raw.self, Decode.self,
            Dump.self, Restore.self, Devices.self, DoctorCommand.self,
            Run.self, Export.self, AssetsCommand.self, AuditCommand.self, WritesCommand.self, SyncCommand.self,
            OutputsCommand.self,
            StoreCommand.self, ConfigCommand.self, RulesCommand.self,
        ]
    )
}
