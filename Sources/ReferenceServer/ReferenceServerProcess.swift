import Foundation
import Spawn

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `securepin server` run as a child process, for the demo and for tests
/// that need a server they can kill: started on a free loopback port (port 0;
/// the child prints which it got, and its configuration string), stopped with
/// SIGTERM (graceful) or SIGKILL (nothing runs).
///
/// The child is started with `posix_spawn` (no signal blocked, no descriptor of the parent
/// inherited) and waited for with `waitpid`; its standard error is the parent's.
public final class ReferenceServerProcess {
    /// Why the child did not come up.
    public struct StartFailed: Error, CustomStringConvertible {
        /// What went wrong.
        public var description: String
    }

    private let child: ChildProcess
    /// The loopback port it listens on.
    public private(set) var port = 0
    /// The configuration string it printed for clients.
    public private(set) var configuration = ""

    /// The child's process id.
    public var pid: Int32 { child.pid }

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts `executable server --port 0 --db database --admin-token-file tokenFile --log-file logFile [extra…]`
    /// and reads its first lines (a bounded number) for the port and the configuration string.
    /// - Parameters:
    ///   - executable: the `securepin` binary.
    ///   - database: the SQLite file.
    ///   - tokenFile: the admin token file.
    ///   - logFile: where the access log goes (default: nowhere, `/dev/null`).
    ///   - extraArguments: more `securepin server` options.
    /// - Throws: ``StartFailed`` when the child cannot be started or does not report its port.
    public convenience init(
        executable: String, database: String, tokenFile: String, logFile: String = "/dev/null",
        extraArguments: [String] = []
    ) throws(StartFailed) {
        try self.init(
            executable: executable, storeArguments: ["--db", database], tokenFile: tokenFile, logFile: logFile,
            extraArguments: extraArguments)
    }

    /// Starts `executable server --port 0 STORE… --admin-token-file tokenFile --log-file logFile [extra…]`,
    /// where the store arguments select SQLite (`--db PATH`) or PostgreSQL (`--store postgres
    /// --dsn-file F --key-file K`).
    /// - Parameters:
    ///   - executable: the `securepin` binary.
    ///   - storeArguments: the options that select the store.
    ///   - tokenFile: the admin token file.
    ///   - logFile: where the access log goes (default: nowhere, `/dev/null`).
    ///   - extraArguments: more `securepin server` options.
    /// - Throws: ``StartFailed`` when the child cannot be started or does not report its port.
    public init(
        executable: String, storeArguments: [String], tokenFile: String, logFile: String = "/dev/null",
        extraArguments: [String] = []
    ) throws(StartFailed) {
        do {
            child = try ChildProcess(
                executable: executable,
                arguments: ["server", "--port", "0"] + storeArguments
                    + ["--admin-token-file", tokenFile, "--log-file", logFile] + extraArguments,
                standardInput: .nullDevice, standardOutput: .pipe, standardError: .inherit)
        } catch {
            throw StartFailed(description: "\(error)")
        }
        var text = ""
        for _ in 0..<64 where port == 0 || configuration.isEmpty {
            let chunk = (try? child.standardOutput?.read()) ?? []
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
            for line in text.split(separator: "\n") {
                if let range = line.range(of: "listening on http://127.0.0.1:") {
                    port = Int(line[range.upperBound...]) ?? 0
                }
                if line.hasPrefix("configuration: ") { configuration = String(line.dropFirst(15)) }
            }
        }
        guard port > 0, !configuration.isEmpty else {
            kill9()
            throw StartFailed(description: "the server did not report its port")
        }
    }

    /// Whether the child is still running.
    public var isRunning: Bool { child.isRunning }

    /// Sends `signal` to the child, unless it has already ended (SIGHUP: reopen the access log).
    /// - Parameter signal: the signal.
    public func signal(_ signal: Int32) { _ = try? child.kill(signal) }

    /// SIGTERM (the graceful stop), then waits for the exit.
    /// - Returns: how it ended (`.exited(0)` after a graceful stop), or `nil` if the wait failed
    ///   (the child was reaped elsewhere).
    @discardableResult
    public func stop() -> ChildProcess.Termination? {
        _ = try? child.kill(SIGTERM)
        return try? child.wait()
    }

    /// SIGKILL: no shutdown code runs (crash tests).
    public func kill9() {
        _ = try? child.kill(SIGKILL)
        _ = try? child.wait()
    }
}
