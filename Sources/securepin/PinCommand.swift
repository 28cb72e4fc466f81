import PinEntry

/// `securepin pin check`: reads a PIN through the pad (or `--pin-fd N`) and
/// prints its strength flags and the warn/reject verdict.
enum PinCommand {
    static let usage = """
        usage: securepin pin check [--complexity C] [--pin-fd N] [--reject] [--json]
        Exit codes: 0 acceptable, 3 weak (warn), 4 weak (reject), 130 cancelled, 1 bad input.
        """

    static func run(_ arguments: [String]) -> Int32 {
        guard arguments.first == "check" else { CLI.fail("pin: unknown or missing subcommand", usage: usage) }
        var args = Arguments(Array(arguments.dropFirst()), command: "pin check", usage: usage)
        let format = parseComplexity(&args, default: .fourToEightDigits)
        let fd = args.integer("--pin-fd", range: Int32(0)...Int32(65535))
        var policy = PinWarningPolicy()
        if args.flag("--reject") { policy.action = .reject }
        let json = args.flag("--json")
        args.finish()
        let source: PinSource = fd.map { .descriptor($0) } ?? .terminal(TerminalPinPad.Options())
        do {
            let outcome = try PinCheck.run(PinCheckRequest(format: format, source: source, policy: policy))
            print(json ? outcome.json : outcome.text)
            return outcome.exitStatus
        } catch {
            CLI.printError("securepin: pin check: " + PinCheck.message(for: error))
            return PinCheck.exitStatus(for: error)
        }
    }
}
