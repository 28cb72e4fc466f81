import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A throw-away software TPM 2.0 (`swtpm`) on a free loopback port, with its state in a fresh
/// directory. A watchdog shell stops it when ``stop()`` runs or when the test process dies.
public final class SoftwareTPMProcess: @unchecked Sendable {
    /// `swtpm` is not installed (`make deps` installs it).
    public struct Unavailable: Error, CustomStringConvertible {
        /// What went wrong.
        public var description: String
    }

    /// The TCTI string that reaches it (`swtpm:host=127.0.0.1,port=P`).
    public let tcti: String
    /// Its state directory (removed by ``stop()``).
    public let stateDirectory: String
    private var watchdog: pid_t

    /// Starts a TPM and waits until it accepts connections.
    /// - Throws: ``Unavailable``.
    public init() throws {
        guard
            let swtpm = ["/usr/bin/swtpm", "/usr/local/bin/swtpm"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else { throw Unavailable(description: "swtpm is not installed (make deps installs it)") }
        var lastError = "no free port"
        for _ in 0..<20 {
            let port = UInt16.random(in: 20_000...60_000) & ~1
            guard Self.isFree(port), Self.isFree(port + 1) else { continue }
            let state = FileManager.default.temporaryDirectory.appendingPathComponent("spc-swtpm-\(UUID().uuidString)")
                .path
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
            // The watchdog first closes every descriptor it inherited (a test's pipes must reach EOF).
            let command =
                "for f in /proc/$$/fd/*; do n=${f##*/}; [ \"$n\" -gt 2 ] && eval \"exec $n>&-\"; done 2>/dev/null; "
                + "\(swtpm) socket --tpm2 --server type=tcp,bindaddr=127.0.0.1,port=\(port) "
                + "--ctrl type=tcp,bindaddr=127.0.0.1,port=\(port + 1) --tpmstate dir=\(state) "
                + "--flags not-need-init,startup-clear & s=$!; trap 'kill $s 2>/dev/null; wait $s; exit 0' TERM; "
                + "while kill -0 \(getpid()) 2>/dev/null && kill -0 $s 2>/dev/null; do sleep 0.2; done; "
                + "kill $s 2>/dev/null; wait $s"
            let pid = try Self.spawn(["/bin/bash", "-c", command])
            if Self.waitForListener(port: port, pid: pid) {
                tcti = "swtpm:host=127.0.0.1,port=\(port)"
                stateDirectory = state
                watchdog = pid
                return
            }
            Self.terminate(pid)
            try? FileManager.default.removeItem(atPath: state)
            lastError = "swtpm did not start on port \(port)"
        }
        throw Unavailable(description: lastError)
    }

    deinit { stop() }

    /// Stops the TPM and removes its state (idempotent).
    public func stop() {
        if watchdog > 0 {
            Self.terminate(watchdog)
            watchdog = 0
        }
        try? FileManager.default.removeItem(atPath: stateDirectory)
    }

    /// Starts `argv` with no signal blocked and 0 to 2 on /dev/null: a test thread's blocked
    /// signals must not reach a long-lived server (it could not be stopped).
    static func spawn(_ argv: [String]) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd: Int32 in 0...2 {
            posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        var pid: pid_t = 0
        let cArgs = argv.map { strdup($0) } + [nil]
        defer { cArgs.forEach { free($0) } }
        let rc = posix_spawn(&pid, argv[0], &actions, &attributes, cArgs, environ)
        guard rc == 0 else { throw Unavailable(description: "could not start \(argv[0]): errno \(rc)") }
        return pid
    }

    /// Asks the watchdog to stop the TPM and waits for it.
    static func terminate(_ pid: pid_t) {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }

    static func isFree(_ port: UInt16) -> Bool {
        withSocket(port) { fd, address in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
        }
    }

    static func waitForListener(port: UInt16, pid: pid_t) -> Bool {
        for _ in 0..<100 {
            var status: Int32 = 0
            guard waitpid(pid, &status, WNOHANG) == 0 else { return false }
            let connected = withSocket(port) { fd, address in
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                    }
                }
            }
            if connected { return true }
            usleep(50_000)
        }
        return false
    }

    static func withSocket(_ port: UInt16, _ body: (Int32, inout sockaddr_in) -> Bool) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return body(fd, &address)
    }
}
