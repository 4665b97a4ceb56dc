import CHost

/// The version of vlogger and the commit the binary was built from (`vlogger --version`). The Debian package
/// takes its version from here (deploy/build-deb.sh).
enum BuildInfo {
    static let version = "0.5.0"
    static var commit: String { String(cString: vlogger_build_commit()) }
    #if DEBUG
        static let kind = "debug build"
    #else
        static let kind = "release build"
    #endif
    static var description: String { "\(version) (commit \(commit), \(kind))" }
}
