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
        exit(2)
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
