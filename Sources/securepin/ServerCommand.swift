import Foundation
import HTTPServer
import PostgresStore
import PowerAuthProtocol
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
        let listenTexts = args.values("--listen")
        let proxyTexts = args.values("--trusted-proxy")
        let databaseValue = args.value("--db")
        let tokenText = args.value("--admin-token")
        let tokenFile = args.value("--admin-token-file")
        let keyFile = args.value("--key-file")
        let maxFailures = args.integer("--max-failures", range: 1...255) ?? 5
        let keyRequestRate = args.integer("--key-request-rate", range: 1...100_000)
        let metricsPort = args.integer("--metrics-port", range: UInt16(0)...UInt16.max)
        let readyFile = args.value("--ready-file")
        let logFile = args.value("--log-file")
        let algorithmName = args.value("--algorithm") ?? ProtocolAlgorithm.legacyP256.rawValue
        let storeName = args.value("--store") ?? "sqlite"
        let dsnFile = args.value("--dsn-file")
        let poolSize = args.integer("--pool-size", range: 1...1024)
        let statementTimeout = args.integer("--statement-timeout", range: 1...600_000)
        args.finish()
        guard let algorithm = ProtocolAlgorithm(rawValue: algorithmName) else {
            args.usageError("--algorithm must be LEGACY_P256, EC_P384, EC_P384_ML_L3 or EC_P384_ML_L5")
        }
        var listeners: [HTTPServer.Listener] = []
        if let portValue { listeners.append(HTTPServer.Listener(host: "127.0.0.1", port: portValue)) }
        for text in listenTexts {
            do throws(HTTPServer.Listener.ParseError) {
                listeners.append(try HTTPServer.Listener(parsing: text))
            } catch {
                args.fail("--listen: \(error)")
            }
        }
        guard let first = listeners.first else {
            args.usageError("--port N or --listen ADDRESS:PORT is required (port 0 picks a free one)")
        }
        var trustedProxies: [IPNetwork] = []
        for text in proxyTexts {
            do throws(IPNetwork.ParseError) {
                trustedProxies.append(try IPNetwork(parsing: text))
            } catch {
                args.fail("--trusted-proxy: \(error)")
            }
        }
        if trustedProxies.count > 256 { args.fail("--trusted-proxy: at most 256 networks") }
        let postgres: Bool
        switch storeName {
        case "sqlite": postgres = false
        case "postgres": postgres = true
        default: args.usageError("--store is sqlite or postgres")
        }
        if postgres {
            if databaseValue != nil { args.usageError("--db is for --store sqlite; PostgreSQL takes --dsn-file") }
            if dsnFile == nil {
                args.usageError("--store postgres needs --dsn-file PATH (the DSN is never an argument)")
            }
            if keyFile == nil { args.usageError("--store postgres needs --key-file PATH, the same for every instance") }
        } else {
            if dsnFile != nil || poolSize != nil || statementTimeout != nil {
                args.usageError("--dsn-file, --pool-size and --statement-timeout need --store postgres")
            }
            if databaseValue == nil { args.usageError("--db PATH is required") }
        }
        let database = databaseValue ?? "of --dsn-file \(dsnFile ?? "")"
        if tokenText != nil && tokenFile != nil {
            args.usageError("give --admin-token or --admin-token-file, not both")
        }
        do {
            var token: SecureBytes?
            if let tokenText { token = try AdminToken.copying(tokenText) }
            if let tokenFile { token = try AdminToken.load(at: tokenFile) }
            let log = try logFile.map { path throws(AccessLog.OpenFailed) in try AccessLog(path: path) } ?? AccessLog()
            var http = HTTPServer.Configuration(host: first.host, port: first.port)
            http.additionalListeners = Array(listeners.dropFirst())
            http.trustedProxies = trustedProxies
            var options = ReferenceServer.Options(
                databasePath: database, keyFilePath: keyFile, adminToken: token, http: http,
                maxFailedAttempts: maxFailures)
            options.accessLog = log
            options.metricsPort = metricsPort
            options.algorithm = algorithm
            if let keyRequestRate {
                options.keyRequestRateLimit = AddressRateLimit(
                    burst: 8 * keyRequestRate, perSecond: Double(keyRequestRate))
            }
            if postgres, let dsnFile {
                var pool = PostgresPool.Configuration()
                if let poolSize { pool.maximumConnections = poolSize }
                if let statementTimeout { pool.statementTimeoutMilliseconds = statementTimeout }
                options.storage = .postgres(connectionString: try DSNFile.load(at: dsnFile), pool: pool)
            }
            let signals = ShutdownSignals()
            let hangUp = reopenOnHangUp(log)
            defer { hangUp.cancel() }
            let server = try ReferenceServer(options: options)
            try server.start()
            for (listener, bound) in zip(listeners, server.ports) {
                let shown = HTTPServer.Listener(host: listener.host, port: UInt16(bound))
                say("securepin server: listening on http://\(shown)")
                if !listener.isLoopback && trustedProxies.isEmpty {
                    CLI.printError(
                        "securepin: server: warning: listening on \(shown) in plain HTTP; put TLS in front "
                            + "(a reverse proxy named with --trusted-proxy) before real clients use it")
                }
            }
            if !trustedProxies.isEmpty {
                say("trusted proxies: \(trustedProxies.map(\.description).joined(separator: ", "))")
            }
            if let metrics = server.metricsPort { say("metrics: http://127.0.0.1:\(metrics)/metrics") }
            say("configuration: \(try server.configurationString())")
            say("algorithm: \(algorithm.rawValue)")
            say("back office: \(token == nil ? "off (no admin token)" : "on")")
            if let readyFile { try Readiness.writeReadyFile(readyFile, port: server.port ?? 0) }
            Readiness.notify("READY=1\nMAINPID=\(getpid())")
            let signal = await signals.wait()
            Readiness.notify("STOPPING=1")
            if let readyFile { Readiness.removeReadyFile(readyFile) }
            let cut = await server.shutdown()
            say("securepin server: stopped on signal \(signal), \(cut) request(s) cut short")
            return 0
        } catch let error as AccessLog.OpenFailed {
            CLI.printError("securepin: server: cannot open the log file \(error)")
            return ExitCode.refused
        } catch let error as Readiness.WriteFailed {
            CLI.printError("securepin: server: cannot write the ready file \(error)")
            return ExitCode.refused
        } catch {
            CLI.printError(
                "securepin: server: " + describe(error, listeners: listeners, database: database, keyFile: keyFile))
            return ExitCode.refused
        }
    }

    /// SIGHUP reopens the log file by name (after logrotate moved it); a failure is reported
    /// and the old file stays in use.
    static func reopenOnHangUp(_ log: AccessLog) -> any DispatchSourceSignal {
        signal(SIGHUP, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        source.setEventHandler {
            do throws(AccessLog.OpenFailed) {
                try log.reopen()
            } catch {
                CLI.printError("securepin: server: SIGHUP: cannot reopen the log file \(error)")
            }
        }
        source.resume()
        return source
    }

    /// One plain line for a start-up failure, naming the port or file and the fix.
    static func describe(
        _ error: any Error, listeners: [HTTPServer.Listener], database: String, keyFile: String?
    ) -> String {
        guard let error = error as? ReferenceServerError else {
            return "could not start: \(CLI.sentence(error))"
        }
        // With one listener the line names it; with several, which one failed is not known here.
        let place =
            listeners.count == 1
            ? "port \(listeners[0].port)" : "one of \(listeners.map(\.description).joined(separator: ", "))"
        switch error {
        case .http(.startFailed(let code)) where code == EADDRINUSE:
            return "\(place) is in use: choose another port, or port 0 for a free one"
        case .http(.startFailed(let code)) where code == EACCES:
            return "\(place) needs privileges: choose a port above 1023, or port 0 for a free one"
        case .http(.startFailed(let code)) where code == EADDRNOTAVAIL:
            return "\(place): the address is not one of this machine's"
        case .http(.startFailed(let code)):
            return "could not listen on \(place): \(String(cString: strerror(code)))"
        case .http(.invalidAddress(let host)):
            return "cannot listen on \(host): not an IPv4 or IPv6 address"
        case .http(.invalidConfiguration), .http(.alreadyRunning), .http(.outOfMemory):
            return "could not start the HTTP server on \(place): \(error)"
        case .keyFile(let reason):
            return "key file \(keyFile ?? database + ".key"): \(reason)"
        case .storage(let reason):
            return "database \(database): \(reason)"
        case .corruptRecord(let reason):
            return "database \(database) does not open with its key file: \(reason)"
        case .invalidConfiguration(let reason):
            return reason
        case .activationServer(let refusal):
            return "the activation server refused its configuration: \(refusal) (--max-failures)"
        }
    }

    /// Writes a line to standard output at once (unbuffered: a parent process reads it from a pipe).
    static func say(_ line: String) {
        var utf8 = Array((line + "\n").utf8)
        _ = write(1, &utf8, utf8.count)
    }
}
