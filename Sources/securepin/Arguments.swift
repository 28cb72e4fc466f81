#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A tiny option parser: `--name value`, `--name=value`, `-n value` and
/// `--flag`. `-h` or `--help` anywhere prints the command's help and exits 0.
/// Unknown options (with the nearest known one), missing values and
/// leftovers end the program with exit code 2 and the command's usage.
struct Arguments {
    private var remaining: [String]
    /// Every option the command asked for, for "did you mean" suggestions.
    private var known: [String] = ["--help"]
    let command: String
    let usage: String

    init(_ arguments: [String], command: String, usage: String) {
        self.command = command
        self.usage = usage
        remaining = arguments.flatMap { argument -> [String] in
            guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return [argument] }
            return [String(argument[..<equals]), String(argument[argument.index(after: equals)...])]
        }
        if remaining.contains("-h") || remaining.contains("--help") {
            print(usage)
            exit(ExitCode.ok)
        }
    }

    /// Removes `--flag` if present.
    mutating func flag(_ names: String...) -> Bool {
        known += names
        guard let i = remaining.firstIndex(where: names.contains) else { return false }
        remaining.remove(at: i)
        return true
    }

    /// Removes `--name value` and returns the value, or nil when absent.
    mutating func value(_ names: String...) -> String? {
        known += names
        guard let i = remaining.firstIndex(where: names.contains) else { return nil }
        guard i + 1 < remaining.count else { usageError("\(remaining[i]) needs a value") }
        let value = remaining[i + 1]
        remaining.removeSubrange(i...(i + 1))
        return value
    }

    /// Removes every `--name value` (a repeatable option) and returns the values in order.
    mutating func values(_ names: String...) -> [String] {
        known += names
        var found: [String] = []
        while let i = remaining.firstIndex(where: names.contains) {
            guard i + 1 < remaining.count else { usageError("\(remaining[i]) needs a value") }
            found.append(remaining[i + 1])
            remaining.removeSubrange(i...(i + 1))
        }
        return found
    }

    /// A value parsed as an integer within `range`.
    mutating func integer<T: FixedWidthInteger>(_ names: String..., range: ClosedRange<T>) -> T? {
        known += names
        guard let i = remaining.firstIndex(where: names.contains) else { return nil }
        let name = remaining[i]
        guard i + 1 < remaining.count else { usageError("\(name) needs a value") }
        let text = remaining[i + 1]
        remaining.removeSubrange(i...(i + 1))
        guard let n = T(text), range.contains(n) else {
            fail("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return n
    }

    /// Removes and returns the first argument that is not an option, or nil.
    mutating func positional() -> String? {
        guard let i = remaining.firstIndex(where: { !$0.hasPrefix("-") }) else { return nil }
        return remaining.remove(at: i)
    }

    /// Ends parsing: anything left over is a usage error; an unknown option
    /// names the nearest known one. With `SECUREPIN_PARSER_OPTIONS=1` in the environment it
    /// prints, one a line, every option this command asked for, and exits 0: what
    /// `Tests/cli/spec.sh` compares with the help, the completions and the man page.
    func finish() {
        if let flag = getenv("SECUREPIN_PARSER_OPTIONS"), String(cString: flag) == "1" {
            for name in known where name != "--help" { print(name) }
            exit(ExitCode.ok)
        }
        guard let extra = remaining.first else { return }
        guard extra.hasPrefix("-") else { usageError("unexpected argument '\(extra)'") }
        let hint = Help.nearest(to: extra, among: known).map { "; did you mean \($0)?" } ?? ""
        usageError("unknown option '\(extra)'\(hint)")
    }

    /// Bad input (a value out of range, a refused setting): one line, exit 2.
    func fail(_ message: String) -> Never {
        CLI.fail("\(command): \(message)")
    }

    /// A usage error: the line, then the command's usage, exit 2.
    func usageError(_ message: String) -> Never {
        CLI.fail("\(command): \(message)", usage: Help.brief(usage, command: command))
    }
}

/// Parses `64M`, `1G`, `65536K` or a plain number of KiB into KiB.
func parseSizeKiB(_ text: String) -> UInt64? {
    let units: [Character: UInt64] = ["K": 1, "M": 1024, "G": 1024 * 1024]
    if let last = text.last?.uppercased().first, let unit = units[last] {
        return UInt64(text.dropLast()).flatMap { $0.multipliedReportingOverflow(by: unit).overflow ? nil : $0 * unit }
    }
    return UInt64(text)
}

/// Parses hex (even length, 0-9a-fA-F) into bytes; nil when malformed.
func parseHex(_ text: String) -> [UInt8]? {
    let chars = Array(text.utf8)
    guard chars.count % 2 == 0 else { return nil }
    var out: [UInt8] = []
    out.reserveCapacity(chars.count / 2)
    func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x61...0x66: c - 0x61 + 10
        case 0x41...0x46: c - 0x41 + 10
        default: nil
        }
    }
    for i in stride(from: 0, to: chars.count, by: 2) {
        guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
        out.append(hi << 4 | lo)
    }
    return out
}
