import PostgresStore
import ReferenceServer
import SecureCore

/// `securepin storage-key rotate`: re-seals the server database under a new storage key.
/// Thin: the logic is ``StorageKeyRotation`` in the `ReferenceServer` module.
enum StorageKeyCommand {
    static func run(_ arguments: [String]) -> Int32 {
        guard let sub = arguments.first else {
            CLI.fail("storage-key: missing command", usage: Help.briefGroup("storage-key"))
        }
        if ["-h", "--help", "help"].contains(sub) {
            print(Help.group("storage-key"))
            return ExitCode.ok
        }
        guard sub == "rotate" else { CLI.unknownSubcommand("storage-key", sub) }
        var args = Arguments(
            Array(arguments.dropFirst()), command: "storage-key rotate", usage: Help.of("storage-key rotate"))
        let databaseValue = args.value("--db")
        let storeName = args.value("--store") ?? "sqlite"
        let dsnFile = args.value("--dsn-file")
        let keyFile = args.value("--key-file")
        let newKeyFile = args.value("--new-key-file")
        args.finish()
        guard let newKeyFile else { args.usageError("--new-key-file PATH is required (created 0600 when missing)") }
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
            if keyFile == nil { args.usageError("--store postgres needs --key-file PATH, the key in force") }
        } else {
            if dsnFile != nil { args.usageError("--dsn-file needs --store postgres") }
            if databaseValue == nil { args.usageError("--db PATH is required") }
        }
        let oldKeyFile = keyFile ?? ServerKeyFile.path(forDatabase: databaseValue ?? "")
        let database = databaseValue ?? "of --dsn-file \(dsnFile ?? "")"
        if oldKeyFile == newKeyFile { args.usageError("--new-key-file must name another file than the key in force") }
        do throws(ReferenceServerError) {
            let report: StorageKeyRotation.Report
            if postgres, let dsnFile {
                let dsn = try DSNFile.load(at: dsnFile)
                defer { dsn.destroy() }
                report = try StorageKeyRotation.rotate(postgres: dsn, keyFile: oldKeyFile, newKeyFile: newKeyFile)
            } else {
                report = try StorageKeyRotation.rotate(
                    sqliteDatabase: database, keyFile: oldKeyFile, newKeyFile: newKeyFile)
            }
            print("storage key rotated: \(report)")
            for count in report.counts {
                let already = count.alreadyUnderNewKey == 0 ? "" : " (\(count.alreadyUnderNewKey) already)"
                print("  " + Help.pad(count.kind + ":", 28) + "\(count.resealed)" + already)
            }
            print(
                report.createdNewKeyFile ? "new key file: \(newKeyFile) (created, 0600)" : "new key file: \(newKeyFile)"
            )
            print("next: start every server instance with --key-file \(newKeyFile); then destroy \(oldKeyFile)")
            return ExitCode.ok
        } catch {
            CLI.printError(
                "securepin: storage-key rotate: \(describe(error, database: database, old: oldKeyFile, new: newKeyFile))"
                    + "; the database is unchanged")
            return ExitCode.refused
        }
    }

    /// One line naming the file the failure is about.
    static func describe(_ error: ReferenceServerError, database: String, old: String, new: String) -> String {
        switch error {
        case .keyFile(let reason) where reason.hasPrefix("the new key file"): "key file \(new): \(reason)"
        case .keyFile(let reason): "key file \(old): \(reason)"
        case .storage(let reason): "database \(database): \(reason)"
        case .corruptRecord(let reason): "database \(database): \(reason)"
        case .invalidConfiguration(let reason): reason
        case .activationServer, .http: "\(error)"
        }
    }
}
