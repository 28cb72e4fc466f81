import PinEntry
import PinEntryTerminal
import PinStrength

/// `securepin pin check`: reads a PIN through the pad (or `--pin-fd N`) and
/// prints its strength flags and the warn/reject verdict. Exit codes follow
/// the one table: 0 acceptable or warn, 1 reject, 2 bad input, 130 cancelled.
enum PinCommand {
    static func run(_ arguments: [String]) -> Int32 {
        guard let sub = arguments.first else { CLI.fail("pin: missing command", usage: Help.briefGroup("pin")) }
        if ["-h", "--help", "help"].contains(sub) {
            print(Help.group("pin"))
            return ExitCode.ok
        }
        guard sub == "check" else { CLI.unknownSubcommand("pin", sub) }
        var args = Arguments(Array(arguments.dropFirst()), command: "pin check", usage: Help.of("pin check"))
        let format = parseComplexity(&args, default: .fourToEightDigits)
        let fd = args.integer("--pin-fd", range: Int32(0)...Int32(65535))
        var policy = PinWarningPolicy()
        if args.flag("--reject") { policy.action = .reject }
        let json = args.flag("--json")
        args.finish()
        let input: PinInput = fd.map { .descriptor($0, option: "--pin-fd") } ?? .terminal(prompt: "Enter PIN")
        input.checkAvailable(command: "pin check")
        let source: PinSource = fd.map { .descriptor($0) } ?? .terminal(TerminalPinPad.Options())
        do throws(PinEntryTerminalError) {
            let outcome = try PinCheck.run(PinCheckRequest(format: format, source: source, policy: policy))
            print(json ? outcome.json : outcome.text)
            return outcome.verdict == .reject ? ExitCode.refused : ExitCode.ok
        } catch .cancelled {
            CLI.printError("securepin: pin check: cancelled; nothing was entered")
            return ExitCode.cancelled
        } catch {
            CLI.printError("securepin: pin check: " + input.describe(error, format: format, command: "pin check"))
            return ExitCode.usage
        }
    }
}
