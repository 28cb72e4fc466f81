/// The commands and their options as one description, read from the help texts of ``Help``:
/// the same text `--help` prints drives the shell completions and the man page, so none of
/// them can list an option another lacks. The test `Tests/cli/spec.sh` compares all three
/// with the options the parser itself asks for (``Arguments`` lists them when
/// `SECUREPIN_PARSER_OPTIONS=1` is set).
struct CommandSpec {
    /// One option line of a help text: `--vault DIR   the vault directory`.
    struct Option {
        /// `--vault`, or `-t`.
        var name: String
        /// The value's placeholder (`DIR`, `N`), or nil for a flag.
        var value: String?
        /// The description (the help's wording, continuation lines joined).
        var summary: String
    }

    /// `["vault", "init"]`.
    var path: [String]
    /// The one-line summary from the command list.
    var summary: String
    /// The leaf's help text.
    var help: String
    /// Its options, in the help's order.
    var options: [Option]

    var name: String { path.joined(separator: " ") }

    /// The usage line (the help's first line, without `usage: `).
    var usage: String {
        let first = help.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return first.hasPrefix("usage: ") ? String(first.dropFirst(7)) : first
    }

    /// The prose between the usage line and the options.
    var description: String {
        let blocks = help.components(separatedBy: "\n\n")
        return blocks.count > 1 ? blocks[1] : ""
    }

    /// The example lines, if the help has an `example:` block.
    var example: [String] {
        guard let range = help.range(of: "\nexample:\n") else { return [] }
        return help[range.upperBound...].split(separator: "\n").map { $0.trimmingPrefixSpaces() }
    }

    /// The options every command takes (the parser handles them before any command).
    static let globalOptions = [
        Option(name: "-h", value: nil, summary: "help (also after any command)"),
        Option(name: "--help", value: nil, summary: "help (also after any command)"),
        Option(name: "--version", value: nil, summary: "the versions of securepin and the libraries it uses"),
    ]

    /// Every command that runs (groups are not commands: their subcommands are), in the
    /// order of the help's command list.
    static var all: [CommandSpec] {
        var specs: [CommandSpec] = []
        for (name, summary) in Help.commands where name != "help" {
            if let subs = Help.subcommands[name] {
                for (sub, subSummary) in subs {
                    let help = Help.leaf["\(name) \(sub)"] ?? ""
                    specs.append(
                        CommandSpec(path: [name, sub], summary: subSummary, help: help, options: options(in: help)))
                }
            } else {
                let help = Help.leaf[name] ?? ""
                specs.append(CommandSpec(path: [name], summary: summary, help: help, options: options(in: help)))
            }
        }
        return specs
    }

    /// The options of a help text: the lines of its `options:` block that start with two
    /// spaces and a dash; more-indented lines continue the description. One line may name
    /// several options (`-t N -k KiB [-p N]`), which then share the description.
    static func options(in help: String) -> [Option] {
        var result: [Option] = []
        var inside = false
        var current: [Int] = []
        for raw in help.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(raw)
            if line == "options:" {
                inside = true
                continue
            }
            guard inside else { continue }
            guard line.hasPrefix("  ") else { break }
            let body = line.trimmingPrefixSpaces()
            if line.hasPrefix("  -") {
                let (syntax, summary) = splitColumns(body)
                current = []
                let words = syntax.split(separator: " ").map {
                    $0.trimming(["[", "]", ","])
                }
                var i = 0
                while i < words.count {
                    let word = words[i]
                    i += 1
                    guard word.hasPrefix("-") else { continue }
                    var value: String?
                    if i < words.count, !words[i].hasPrefix("-") {
                        value = words[i]
                        i += 1
                    }
                    current.append(result.count)
                    result.append(Option(name: word, value: value, summary: summary))
                }
            } else {
                for index in current { result[index].summary += " " + body }
            }
        }
        return result
    }

    /// Splits `--vault DIR   the vault directory` at its first run of two or more spaces.
    private static func splitColumns(_ text: String) -> (String, String) {
        guard let gap = text.range(of: "  ") else { return (text, "") }
        return (String(text[..<gap.lowerBound]), String(text[gap.upperBound...]).trimmingPrefixSpaces())
    }
}

extension StringProtocol {
    /// The text without its leading spaces.
    func trimmingPrefixSpaces() -> String { String(drop { $0 == " " }) }

    /// The text without the given characters at either end.
    func trimming(_ set: Set<Character>) -> String {
        var view = Substring(self)
        while let first = view.first, set.contains(first) { view = view.dropFirst() }
        while let last = view.last, set.contains(last) { view = view.dropLast() }
        return String(view)
    }
}
