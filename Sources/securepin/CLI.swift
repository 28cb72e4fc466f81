import Foundation
import HTTPClient
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Small helpers shared by the commands.
enum CLI {
    /// Prints a one-line error and the usage to standard error and exits 2.
    static func fail(_ message: String, usage: String? = nil) -> Never {
        printError("securepin: \(message)")
        if let usage { printError(usage) }
        exit(ExitCode.usage)
    }

    /// `securepin help [COMMAND…]`: the help of that command, exit 0; an
    /// unknown command is a usage error that names the nearest one.
    static func help(_ path: [String]) -> Int32 {
        if let text = Help.text(path) {
            print(text)
            return ExitCode.ok
        }
        let known = path.count == 1 ? Help.commands.map(\.name) : (Help.subcommands[path[0]] ?? []).map(\.name)
        let word = path.count == 1 ? path[0] : path[1]
        let hint = Help.nearest(to: word, among: known).map { "; did you mean \($0)?" } ?? ""
        fail("help: no command '\(path.joined(separator: " "))'\(hint)", usage: Help.briefMain)
    }

    /// The Nth-level "unknown subcommand" error of a command group.
    static func unknownSubcommand(_ group: String, _ sub: String) -> Never {
        let names = (Help.subcommands[group] ?? []).map(\.name)
        let hint = Help.nearest(to: sub, among: names).map { "; did you mean \($0)?" } ?? ""
        fail("\(group): unknown command '\(sub)'\(hint)", usage: Help.briefGroup(group))
    }

    /// `securepin --version`: this program and the libraries it runs on.
    static func versionText() -> String {
        let report = try? SecureMemory.machineReport()
        let argon2 = report.map { "Argon2 \($0.argon2Version >> 4).\($0.argon2Version & 0xF)" } ?? "unknown"
        return """
            securepin \(Help.version)
            libsodium \(report?.sodiumVersion ?? "unknown")
            libargon2 \(argon2) (RFC 9106)
            OpenSSL   \(CryptoLibrary.openSSLVersion)
            libcurl   \(HTTPClient.transportVersion)
            """
    }

    /// The sentence an error describes itself with: a library error's description, Foundation's
    /// localized text for a Foundation error (whose description is a dump).
    static func sentence(_ error: any Error) -> String {
        type(of: error) is NSError.Type ? error.localizedDescription : String(describing: error)
    }

    /// Writes a line to standard error.
    static func printError(_ line: String) {
        var text = line
        text.append("\n")
        var utf8 = Array(text.utf8)
        _ = write(2, &utf8, utf8.count)
    }

    /// Reads a small text file (for /proc and /sys facts); nil when unreadable.
    static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let n = read(fd, &bytes, bytes.count)
        guard n >= 0 else { return nil }
        return String(decoding: bytes[0..<n], as: UTF8.self)
    }
}
