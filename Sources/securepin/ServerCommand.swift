import Foundation
import HTTPServer
import ReferenceServer
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `securepin server`: the reference activation server over HTTP on loopback,
/// state in SQLite. Thin: the logic is in the `ReferenceServer` module.
enum ServerCommand {
    static func run(_ arguments: [String]) async -> Int32 {
        var args = Arguments(arguments, command: "server", usage: Help.of("server"))
        let portValue = args.integer("--port", range: UInt16(0)...UInt16.max)
        let databaseValue = args.value("--db")
        let tokenText = args.value("--admin-token")
        let tokenFile = args.value("--admin-token-file")
        let keyFile = args.value("--key-file")
        let maxFailures = args.integer("--max-failures", range: 1...255) ?? 5
        args.finish()
        guard let port = portValue else { args.usageError("--port is required (0 picks a free one)") }
        guard let database = databaseValue else { args.usageError("--db PATH is required") }
        if tokenText != nil && tokenFile != nil {
            args.usageError("give --admin-token or --admin-token-file, not both")
        }
        do {
            var token: SecureBytes?
            if let tokenText { token = try AdminToken.copying(tokenText) }
            if let tokenFile { token = try AdminToken.load(at: tokenFile) }
            let options = ReferenceServer.Options(
                databasePath: database, keyFilePath: keyFile, adminToken: token,
                http: HTTPServer.Configuration(port: port), maxFailedAttempts: maxFailures)
            let signals = ShutdownSignals()
            let server = try ReferenceServer(options: options)
            try server.start()
            say("securepin server: listening on http://127.0.0.1:\(server.port ?? 0)")
            say("configuration: \(try server.configurationString())")
            say("back office: \(token == nil ? "off (no admin token)" : "on")")
            let signal = await signals.wait()
            let cut = await server.shutdown()
            say("securepin server: stopped on signal \(signal), \(cut) request(s) cut short")
            return 0
        } catch {
            CLI.printError("securepin: server: " + describe(error, port: port, database: database, keyFile: keyFile))
            return ExitCode.refused
        }
    }

    /// One plain line for a start-up failure, naming the port or file and the fix.
    static func describe(_ error: any Error, port: UInt16, database: String, keyFile: String?) -> String {
        guard let error = error as? ReferenceServerError else {
            return "could not start: \(error.localizedDescription)"
        }
        switch error {
        case .http(.startFailed(let code)) where code == EADDRINUSE:
            return "port \(port) is in use: choose another with --port, or --port 0 for a free one"
        case .http(.startFailed(let code)) where code == EACCES:
            return "port \(port) needs privileges: choose one above 1023 with --port, or --port 0 for a free one"
        case .http(.startFailed(let code)):
            return "could not listen on 127.0.0.1:\(port): \(String(cString: strerror(code)))"
        case .http:
            return "could not start the HTTP server on port \(port)"
        case .keyFile(let reason):
            return "key file \(keyFile ?? database + ".key"): \(reason)"
        case .storage(let reason):
            return "database \(database): \(reason)"
        case .corruptRecord(let reason):
            return "database \(database) does not open with its key file: \(reason)"
        case .invalidConfiguration(let reason):
            return reason
        case .activationServer:
            return "the activation server refused its configuration (--max-failures)"
        }
    }

    /// Writes a line to standard output at once (unbuffered: a parent process reads it from a pipe).
    static func say(_ line: String) {
        var utf8 = Array((line + "\n").utf8)
        _ = write(1, &utf8, utf8.count)
    }
}
