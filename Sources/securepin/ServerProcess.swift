import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A `securepin server` child process: started on a free loopback port (port
/// 0; the child says which it got), stopped with SIGTERM.
final class ServerProcess {
    let process = Process()
    private let output = Pipe()
    private(set) var port = 0
    private(set) var configuration = ""

    struct StartFailed: Error, CustomStringConvertible {
        var description: String
    }

    /// Starts `executable server --port 0 --db database --admin-token-file tokenFile`
    /// and reads its first lines (bounded) for the port and the configuration string.
    init(executable: String, database: String, tokenFile: String) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["server", "--port", "0", "--db", database, "--admin-token-file", tokenFile]
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
            stop()
            throw StartFailed(description: "the server did not report its port")
        }
    }

    /// SIGTERM, then waits for the exit.
    /// - Returns: the exit status.
    @discardableResult
    func stop() -> Int32 {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// The executable of this process, to start the server from the same build.
    static var currentExecutable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }
}
