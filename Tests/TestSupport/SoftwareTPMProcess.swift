import Foundation
import Spawn

#if canImport(Glibc)
    import Glibc
#endif

/// A throw-away software TPM 2.0 (`swtpm`) on a free loopback port, with its state in a fresh
/// directory. A watchdog shell stops it when ``stop()`` runs or when the test process dies; it
/// starts with no signal blocked and no descriptor of the test process (a test's pipes must reach
/// end of file), its standard descriptors on `/dev/null`.
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
    private var watchdog: ChildProcess?

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
            let command =
                "\(swtpm) socket --tpm2 --server type=tcp,bindaddr=127.0.0.1,port=\(port) "
                + "--ctrl type=tcp,bindaddr=127.0.0.1,port=\(port + 1) --tpmstate dir=\(state) "
                + "--flags not-need-init,startup-clear & s=$!; trap 'kill $s 2>/dev/null; wait $s; exit 0' TERM; "
                + "while kill -0 \(getpid()) 2>/dev/null && kill -0 $s 2>/dev/null; do sleep 0.2; done; "
                + "kill $s 2>/dev/null; wait $s"
            let shell: ChildProcess
            do {
                shell = try ChildProcess(
                    executable: "/bin/bash", arguments: ["-c", command], standardInput: .nullDevice,
                    standardOutput: .nullDevice, standardError: .nullDevice)
            } catch {
                throw Unavailable(description: "could not start the swtpm watchdog: \(error)")
            }
            if Self.waitForListener(port: port, shell: shell) {
                tcti = "swtpm:host=127.0.0.1,port=\(port)"
                stateDirectory = state
                watchdog = shell
                return
            }
            Self.terminate(shell)
            try? FileManager.default.removeItem(atPath: state)
            lastError = "swtpm did not start on port \(port)"
        }
        throw Unavailable(description: lastError)
    }

    deinit { stop() }

    /// Stops the TPM and removes its state (idempotent).
    public func stop() {
        if let watchdog {
            Self.terminate(watchdog)
            self.watchdog = nil
        }
        try? FileManager.default.removeItem(atPath: stateDirectory)
    }

    /// Asks the watchdog to stop the TPM and waits for it.
    static func terminate(_ shell: ChildProcess) {
        _ = try? shell.kill(SIGTERM)
        _ = try? shell.wait()
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

    static func waitForListener(port: UInt16, shell: ChildProcess) -> Bool {
        for _ in 0..<100 {
            guard shell.isRunning else { return false }
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
