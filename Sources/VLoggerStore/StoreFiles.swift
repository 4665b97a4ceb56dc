import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// A file as the kernel knows it: device and inode. Two paths (or one path at two moments) with the same
/// identity are the same file; a file removed and created again under its name has a new one.
struct FileIdentity: Equatable, Sendable {
    let device: UInt64
    let inode: UInt64

    /// The identity of the file at `path` (links followed), or nil when there is none.
    init?(_ path: String) {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
    }

    /// What `path` is when it exists and is not a regular file ("a character device", "a folder", …): SQLite
    /// would open `/dev/null` and leave a `/dev/null-journal` beside it.
    static func nonRegularKind(_ path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        switch st.st_mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFDIR: return "a folder"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFIFO: return "a FIFO"
        case S_IFSOCK: return "a socket"
        default: return "not a regular file"
        }
    }
}

/// The store's run lock: one `vlogger run` per store. Two services on one store would each poll, write every
/// reading twice, make the same queued writes and sync with one cursor. The lock is `flock(2)` on
/// `<store>.lock` beside the store, holding the owner's PID for the message; the kernel releases it when the
/// process ends in any way (SIGKILL, a crash), so a stale file never blocks a start.
public final class StoreRunLock: @unchecked Sendable {
    public let path: String
    private var fd: Int32

    /// Takes the lock for `storePath`, or says who holds it.
    public init(storePath: String) throws(StoreError) {
        if let kind = FileIdentity.nonRegularKind(storePath) {
            throw StoreError(
                "\(storePath) is \(kind), not a store file: give --store (or [store] path) a regular file's path")
        }
        path = storePath + ".lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw StoreError(
                "cannot create the run lock \(path): \(String(cString: strerror(errno))); the store's folder must be writable by the service"
            )
        }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let err = errno
            defer { close(fd) }
            guard err == EWOULDBLOCK else {
                throw StoreError("cannot lock \(path): \(String(cString: strerror(err)))")
            }
            // The holder writes its PID right after it took the lock: a start at the same moment waits for it a little.
            var pid = ""
            for _ in 0..<50 {
                var buf = [UInt8](repeating: 0, count: 32)
                let n = pread(fd, &buf, buf.count, 0)
                pid =
                    n > 0
                    ? String(decoding: buf[0..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : ""
                if Int(pid) != nil { break }
                usleep(10_000)
            }
            let who = Int(pid).map { "another vlogger run (pid \($0))" } ?? "another vlogger run"
            throw StoreError(
                "\(who) uses the store \(storePath) (it holds \(path)): stop it first (systemctl stop vlogger), or give this run a store of its own with --store"
            )
        }
        let text = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, text, text.count, 0)
        self.fd = fd
    }

    /// Releases the lock (the file and the last holder's PID stay: the PID is only a hint, the lock is the kernel's).
    public func release() {
        guard fd >= 0 else { return }
        close(fd)
        fd = -1
    }

    deinit { release() }
}
