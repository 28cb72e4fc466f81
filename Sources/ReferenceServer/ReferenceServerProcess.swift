import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `securepin server` run as a child process, for the demo and for tests
/// that need a server they can kill: started on a free loopback port (port 0;
/// the child prints which it got, and its configuration string), stopped with
/// SIGTERM (graceful) or SIGKILL (nothing runs).
public final class ReferenceServerProcess {
    /// Why the child did not come up.
    public struct StartFailed: Error, CustomStringConvertible {
        /// What went wrong.
        public var description: String
    }

    /// The child.
    public let process = Process()
    private let output = Pipe()
    /// The loopback port it listens on.
    public private(set) var port = 0
    /// The configuration string it printed for clients.
    public private(set) var configuration = ""

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
    /// - Throws: ``StartFailed`` when the child does not report its port, or what `Process.run` throws.
    public convenience init(
        executable: String, database: String, tokenFile: String, logFile: String = "/dev/null",
        extraArguments: [String] = []
    ) throws {
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
    /// - Throws: ``StartFailed`` when the child does not report its port, or what `Process.run` throws.
    public init(
        executable: String, storeArguments: [String], tokenFile: String, logFile: String = "/dev/null",
        extraArguments: [String] = []
    ) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments =
            ["server", "--port", "0"] + storeArguments + ["--admin-token-file", tokenFile, "--log-file", logFile]
            + extraArguments
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
        var text = ""
        for _ in 0..<64 where port == 0 || configuration.isEmpty {
            let chunk = output.fileHandleForReading.availableData
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

    /// SIGTERM (the graceful stop), then waits for the exit.
    /// - Returns: the exit status.
    @discardableResult
    public func stop() -> Int32 {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// SIGKILL: no shutdown code runs (crash tests).
    public func kill9() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
