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
    static let usage = """
        usage: securepin server --port N --db PATH [--admin-token T | --admin-token-file PATH]
                                [--key-file PATH] [--max-failures N]

          --port N              TCP port on 127.0.0.1 (0 picks a free one; the line
                                'listening on' says which)
          --db PATH             the SQLite database (created when missing)
          --admin-token T       enables the back office with this token (visible to
                                other local users in the process list: prefer the file)
          --admin-token-file P  reads the token from a 0600 file
          --key-file PATH       the storage key file (default PATH.key next to the
                                database; created 0600 when missing)
          --max-failures N      failed attempts that block new activations (default 5)

        SIGTERM or SIGINT stops it gracefully.
        """

    static func run(_ arguments: [String]) async -> Int32 {
        var args = Arguments(arguments, command: "server", usage: usage)
        guard let port = args.integer("--port", range: UInt16(0)...UInt16.max) else { args.fail("--port is required") }
        guard let database = args.value("--db") else { args.fail("--db is required") }
        let tokenText = args.value("--admin-token")
        let tokenFile = args.value("--admin-token-file")
        let keyFile = args.value("--key-file")
        let maxFailures = args.integer("--max-failures", range: 1...255) ?? 5
        args.finish()
        if tokenText != nil && tokenFile != nil { args.fail("give --admin-token or --admin-token-file, not both") }
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
            CLI.printError("securepin: server: \(error)")
            return 1
        }
    }

    /// Writes a line to standard output at once (unbuffered: a parent process reads it from a pipe).
    static func say(_ line: String) {
        var utf8 = Array((line + "\n").utf8)
        _ = write(1, &utf8, utf8.count)
    }
}
