import PinEntry
import PinEntryTerminal
import PinVault
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a command reads a PIN: a descriptor (`--pin-fd N`) or the terminal
/// pad on the controlling terminal, so standard input stays free for data.
enum PinInput {
    case descriptor(Int32, option: String)
    case terminal(prompt: String)

    /// Checks, before anything is read or asked, that the PIN can be read:
    /// the descriptor is open, or there is a terminal. Exits 2 otherwise.
    func checkAvailable(command: String) {
        switch self {
        case .descriptor(let fd, let option):
            if fcntl(fd, F_GETFD) < 0 {
                CLI.fail(
                    "\(command): descriptor \(fd) (\(option) \(fd)) is not open: open it, as in \(option) 3 3<FILE")
            }
        case .terminal:
            let tty = open("/dev/tty", O_RDWR | O_CLOEXEC)
            guard tty >= 0 else {
                CLI.fail("\(command): no terminal to ask for the PIN: give it on a descriptor with --pin-fd N")
            }
            close(tty)
        }
    }

    /// Reads one PIN in `format`; exits with a one-line message on failure
    /// (2 for bad input, 130 when cancelled). Nothing has been counted then.
    func read(format: PinFormat, command: String) -> Password {
        do throws(PinEntryTerminalError) {
            switch self {
            case .descriptor(let fd, _):
                return try DescriptorPasswordReader(descriptor: fd, format: format).readPassword()
            case .terminal(let prompt):
                let tty = open("/dev/tty", O_RDWR | O_CLOEXEC)
                guard tty >= 0 else {
                    CLI.fail("\(command): no terminal to ask for the PIN: give it on a descriptor with --pin-fd N")
                }
                defer { close(tty) }
                let pad = TerminalPinPad(
                    format: format, input: tty, output: tty, options: .init(prompt: prompt, showsProgressText: false))
                return try pad.readPassword()
            }
        } catch .cancelled {
            CLI.printError("securepin: \(command): cancelled; nothing was entered")
            exit(ExitCode.cancelled)
        } catch {
            CLI.fail("\(command): \(describe(error, format: format, command: command))")
        }
    }

    /// Why a PIN was refused, naming where it came from and the rule.
    func describe(_ error: PinEntryTerminalError, format: PinFormat, command: String) -> String {
        let counted = command == "vault unlock" || command == "vault change-pin"
        let nothing = counted ? "nothing was counted" : "nothing was kept"
        let source: String
        switch self {
        case .descriptor(let fd, _): source = "the PIN on descriptor \(fd)"
        case .terminal: source = "the PIN"
        }
        let rule = "and the PIN format is \(describeFormat(format))"
        let unit = format.isNumeric ? "digits" : "characters"
        switch error {
        case .characterNotAllowed, .strength(.characterNotAllowed):
            let what = format.isNumeric ? "a character other than the digits 0-9" : "a control character"
            return "\(source) has \(what), \(rule); \(nothing)"
        case .tooLong(let maximum):
            return "\(source) has more than \(maximum) \(unit), \(rule); \(nothing)"
        case .tooShort(let minimum):
            return "\(source) has fewer than \(minimum) \(unit), \(rule); \(nothing)"
        case .strength(.empty): return "\(source) is empty, \(rule); \(nothing)"
        case .malformedInput: return "\(source) is not valid UTF-8; \(nothing)"
        case .notATerminal: return "no terminal to ask for the PIN: give it on a descriptor with --pin-fd N"
        case .readFailed(let code): return "could not read \(source): \(String(cString: strerror(code)))"
        case .terminalFailure(let code): return "could not set up the terminal: \(String(cString: strerror(code)))"
        case .secureMemory, .entry(.secureMemory), .strength(.secureMemory):
            return "secure memory failed (securepin doctor tells what this machine allows)"
        case .entry(.randomSourceFailed): return "the system random source failed"
        case .cancelled: return "cancelled; nothing was entered"
        case .entry(.editOutOfRange), .entry(.invalidLengthPolicy): return "internal error while reading the PIN"
        }
    }

    /// Reads a new PIN: on the terminal typed twice, asked again when the
    /// two differ (three tries); from a descriptor once.
    static func readNew(_ input: PinInput, repeatPrompt: String, format: PinFormat, command: String) -> Password {
        guard case .terminal = input else { return input.read(format: format, command: command) }
        let tries = 3
        for attempt in 1...tries {
            let pin = input.read(format: format, command: command)
            let again = PinInput.terminal(prompt: repeatPrompt).read(format: format, command: command)
            defer { again.destroy() }
            if (try? pin.isEqual(to: again)) == true { return pin }
            pin.destroy()
            if attempt < tries {
                CLI.printError("securepin: \(command): the two PINs differ; again (\(tries - attempt) tries left)")
            }
        }
        CLI.fail("\(command): the two PINs differed \(tries) times; nothing was changed")
    }

    /// Warns about a weak PIN, or with `reject` refuses it (exit 1).
    static func checkStrength(_ pin: Password, format: PinFormat, reject: Bool, command: String) {
        let request = PinCheckRequest(format: format, source: .descriptor(-1))
        guard let outcome = try? PinCheck.judge(pin, request: request), outcome.verdict != .acceptable else { return }
        let why = outcome.relevantFlags.joined(separator: ", ")
        if reject {
            CLI.printError("securepin: \(command): refused: this PIN is weak (\(why)); choose another")
            exit(ExitCode.refused)
        }
        CLI.printError("securepin: \(command): warning: this PIN is weak (\(why)); --reject-weak refuses such PINs")
    }
}

/// Parses `digits-4`, `digits-6`, `digits-4-8` or `alphanumeric`.
func parseComplexity(_ args: inout Arguments, default fallback: PinComplexity) -> PinFormat {
    guard let text = args.value("--complexity") else { return PinFormat(fallback) }
    guard let complexity = PinComplexity(rawValue: text) else {
        let hint = Help.nearest(to: text, among: PinComplexity.allCases.map(\.rawValue)).map {
            " (did you mean \($0)?)"
        }
        args.fail("--complexity must be digits-4, digits-6, digits-4-8 or alphanumeric, not '\(text)'\(hint ?? "")")
    }
    return PinFormat(complexity)
}

/// `digits-4-8 (4 to 8 digits)`, or for another format `4 to 8 digits`.
func describeFormat(_ format: PinFormat) -> String {
    let policy = format.lengthPolicy
    let unit = format.isNumeric ? "digits" : "characters"
    let count = policy.isFixed ? "exactly \(policy.minimum) \(unit)" : "\(policy.minimum) to \(policy.maximum) \(unit)"
    guard let named = PinComplexity.allCases.first(where: { PinFormat($0) == format }) else { return count }
    return "\(named.rawValue) (\(count))"
}

extension PinFormat {
    /// The pad's format for the one a vault records.
    init(_ recorded: VaultPinFormat) {
        let policy =
            (try? PinLengthPolicy(minimum: recorded.minimumLength, maximum: recorded.maximumLength))
            ?? PinComplexity.alphanumeric.lengthPolicy
        self.init(isNumeric: recorded.characters == .digits, lengthPolicy: policy)
    }
}

extension VaultPinFormat {
    /// The format to record for the pad's format.
    init(_ format: PinFormat) {
        self =
            VaultPinFormat(
                characters: format.isNumeric ? .digits : .printable,
                minimumLength: format.lengthPolicy.minimum, maximumLength: format.lengthPolicy.maximum)
            ?? .unrecorded
    }
}
