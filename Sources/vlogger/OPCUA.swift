import ArgumentParser
import Foundation
#if canImport(Glibc)
    import Glibc
#endif
import OPCUA
import VLoggerModel
import VLoggerOPCUA

struct OPCUACommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "opcua",
        abstract: "The OPC UA server's certificates and users ([opcua], docs/opcua.md).",
        discussion: """
            The server's own certificate is made on its first start in the PKI folder (opcua-pki beside the store \
            unless [opcua] pki says otherwise). A client whose certificate is not trusted is refused and its \
            certificate kept under rejected/; `trust` lets it in at its next connection, without a restart.
            """,
        subcommands: [Certificates.self, Trust.self, Untrust.self, Renew.self, User.self])

    /// The configuration's [opcua] section.
    static func settings(_ options: ConfigOptions) throws -> (OPCUASettings, PKIFolder, String) {
        try settingsAndHost(options).0
    }

    static func settingsAndHost(_ options: ConfigOptions) throws -> ((OPCUASettings, PKIFolder, String), String) {
        let c = try options.load()
        guard let s = c.outputs.compactMap({ $0 as? OPCUASettings }).first else {
            throw VLoggerError("\(options.config): no [opcua] section (vlogger config sample --output opcua shows one)")
        }
        return ((s, s.pkiFolder(store: try options.storePath()), c.gatewayID), ProcessInfo.processInfo.hostName)
    }

    struct Certificates: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The server's certificate and the trusted and rejected client certificates.")
        @OptionGroup var options: ConfigOptions

        func run() async throws {
            let (_, pki, _) = try OPCUACommand.settings(options)
            let own = URL(fileURLWithPath: pki.path).appendingPathComponent("own/cert.der")
            if let data = try? Data(contentsOf: own), let cert = try? ApplicationCertificate(der: Array(data)) {
                print(
                    "server    \(cert.fingerprint)  \(cert.applicationUri ?? "")  until \(Self.day(cert.notValidAfter))"
                )
                print("          SHA-1 thumbprint (as clients show it): \(cert.thumbprintHex)")
                print("          hosts: \(cert.hostNames.joined(separator: ", "))")
                print("          file: \(own.path)")
            } else {
                print("server    (none yet: made when the service first starts, in \(pki.path))")
            }
            let list = pki.list()
            if list.isEmpty { print("no client certificates trusted or rejected yet") }
            for e in list {
                print(
                    "\(e.trusted ? "trusted " : "rejected")  \(e.fingerprint)  \(e.applicationUri ?? "-")  \(e.subject)  until \(Self.day(e.notValidAfter))"
                )
            }
        }

        static func day(_ d: Date) -> String { String(ISO8601DateFormatter().string(from: d).prefix(10)) }
    }

    struct Trust: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Trusts a client certificate: a rejected one by its fingerprint (8+ hex digits), or a file.")
        @OptionGroup var options: ConfigOptions
        @ArgumentParser.Argument(
            help:
                "A SHA-256 fingerprint (as `certificates` and the service's log print it) or SHA-1 thumbprint (as clients show it), 8+ hex digits, or a DER/PEM file."
        )
        var certificate: String

        func run() async throws {
            let (_, pki, _) = try OPCUACommand.settings(options)
            let e = try pki.trust(certificate)
            print("trusted \(e.fingerprint) (\(e.subject)): it is let in at its next connection")
        }
    }

    struct Renew: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Makes the server a new certificate for [opcua] application-uri and hosts (the old one is kept).",
            discussion: """
                For a changed [opcua] hosts or application-uri, or a certificate near its end. The old certificate and \
                key stay in own/ under a dated name. The running service goes on with the old one until it restarts; \
                every client then has to trust the new one (its thumbprint is printed).
                """)
        @OptionGroup var options: ConfigOptions

        func run() async throws {
            let ((settings, pki, gateway), host) = try OPCUACommand.settingsAndHost(options)
            let uri = settings.applicationUri ?? "urn:vlogger:\(gateway)"
            let (old, new) = try pki.renew(applicationUri: uri, hosts: settings.hosts ?? [host])
            if let old { print("old       \(old.fingerprint) (kept in \(pki.path)/own)") }
            let c = new.certificate
            print("new       \(c.fingerprint)  \(c.applicationUri ?? "")  until \(Certificates.day(c.notValidAfter))")
            print("          SHA-1 thumbprint (as clients show it): \(c.thumbprintHex)")
            print("          hosts: \(c.hostNames.joined(separator: ", "))")
            print("restart the service (systemctl restart vlogger), then trust the new certificate in every client")
        }
    }

    struct Untrust: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Takes a certificate off the trust list (it is refused from its next connection on).")
        @OptionGroup var options: ConfigOptions
        @ArgumentParser.Argument(help: "Its SHA-256 fingerprint (8 or more hex digits).") var fingerprint: String

        func run() async throws {
            let (_, pki, _) = try OPCUACommand.settings(options)
            let e = try pki.untrust(fingerprint)
            print("no longer trusted: \(e.fingerprint) (\(e.subject))")
        }
    }

    struct User: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Adds or removes an OPC UA user in [opcua] users-file.", subcommands: [Add.self, Remove.self])

        static func file(_ options: ConfigOptions) throws -> String {
            let (s, _, _) = try OPCUACommand.settings(options)
            guard let f = s.usersFile else {
                throw VLoggerError(
                    "\(options.config): [opcua] has no users-file (users-file = \"/etc/vlogger/opcua-users\")")
            }
            return f
        }

        /// The file's lines other than `name`'s (comments kept); the file need not exist yet.
        static func lines(_ path: String, without name: String) throws -> [String] {
            guard FileManager.default.fileExists(atPath: path) else { return [] }
            let text: String
            do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
                throw VLoggerError("\(path) cannot be read: \(error.localizedDescription)")
            }
            do { _ = try UsersFile(text) } catch { throw VLoggerError("\(path): \(error)") }
            return text.split(separator: "\n").map(String.init)
                .filter { !$0.hasPrefix("\(name):") }
        }

        /// Writes the file whole (a temporary file renamed over it). It keeps the owner, group and mode of the
        /// file it replaces; a new one is 0600 and, made by root, belongs to the service's user (`vlogger`), which
        /// reads it.
        static func write(_ lines: [String], to path: String) throws {
            var text = lines.joined(separator: "\n")
            while text.hasSuffix("\n") { text.removeLast() }
            var old = stat()
            let existed = stat(path, &old) == 0
            let tmp = path + ".tmp"
            let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                throw VLoggerError("cannot write \(tmp): \(String(cString: strerror(errno))) (run it as root: sudo)")
            }
            let bytes = Array((text + "\n").utf8)
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if existed {
                _ = fchown(fd, old.st_uid, old.st_gid)
                _ = fchmod(fd, old.st_mode & 0o777)
            } else if getuid() == 0, let service = getpwnam("vlogger") {
                _ = fchown(fd, service.pointee.pw_uid, service.pointee.pw_gid)
            }
            let synced = fsync(fd) == 0
            close(fd)
            guard written == bytes.count, synced else {
                unlink(tmp)
                throw VLoggerError("cannot write \(tmp)")
            }
            guard rename(tmp, path) == 0 else {
                unlink(tmp)
                throw VLoggerError("cannot replace \(path): \(String(cString: strerror(errno)))")
            }
        }

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Adds a user (or sets a user's password): the password is read from standard input.",
                discussion: """
                    The file keeps a salted PBKDF2-SHA256 hash (210,000 rounds) per user, never the password. \
                    The service reads the file again when it changes: no restart.
                    """)
            @OptionGroup var options: ConfigOptions
            @ArgumentParser.Argument(help: "The user name (no ':' and no spaces; up to 64 characters).") var name:
                String

            func run() async throws {
                let path = try User.file(options)
                let tty = isatty(0) == 1
                if tty { FileHandle.standardError.write(Data("password for \(name): ".utf8)) }
                guard let password = readLine(strippingNewline: true), !password.isEmpty else {
                    throw VLoggerError(
                        "no password on standard input (echo 'PASSWORD' | vlogger opcua user add \(name))")
                }
                guard password.utf8.count >= 8 else { throw VLoggerError("a password of at least 8 characters") }
                guard name.count <= 64, !name.contains(where: \.isWhitespace),
                    let line = UsersFile.line(name: name, password: password)
                else {
                    throw VLoggerError("'\(name)' is not a user name here (no ':' and no spaces; up to 64 characters)")
                }
                let kept = try User.lines(path, without: name)
                try User.write(kept + [line], to: path)
                print("user \(name) set in \(path)")
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Removes a user.")
            @OptionGroup var options: ConfigOptions
            @ArgumentParser.Argument(help: "The user name.") var name: String

            func run() async throws {
                let path = try User.file(options)
                let all = try User.lines(path, without: "")
                let kept = try User.lines(path, without: name)
                guard kept.count < all.count else { throw VLoggerError("\(path) has no user \(name)") }
                try User.write(kept, to: path)
                print("user \(name) removed from \(path)")
            }
        }
    }
}
