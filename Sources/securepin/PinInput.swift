import PinEntry
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a command reads a PIN: a descriptor (`--pin-fd N`) or the terminal
/// pad on the controlling terminal, so standard input stays free for data.
enum PinInput {
    case descriptor(Int32)
    case terminal(prompt: String)

    /// Reads one PIN in `format`; exits with a one-line message on failure.
    func read(format: PinFormat, command: String) -> Password {
        do throws(PinEntryError) {
            switch self {
            case .descriptor(let fd):
                return try DescriptorPasswordReader(descriptor: fd, format: format).readPassword()
            case .terminal(let prompt):
                let tty = open("/dev/tty", O_RDWR | O_CLOEXEC)
                guard tty >= 0 else { CLI.fail("\(command): no terminal to read the PIN from (use --pin-fd N)") }
                defer { close(tty) }
                let pad = TerminalPinPad(
                    format: format, input: tty, output: tty, options: .init(prompt: prompt, showsProgressText: false))
                return try pad.readPassword()
            }
        } catch .cancelled {
            CLI.printError("securepin: \(command): cancelled; nothing was entered")
            exit(PinCheck.cancelledExitStatus)
        } catch {
            CLI.fail("\(command): \(PinCheck.message(for: error))")
        }
    }
}

/// Parses `digits-4`, `digits-6`, `digits-4-8` or `alphanumeric`.
func parseComplexity(_ args: inout Arguments, default fallback: PinComplexity) -> PinFormat {
    guard let text = args.value("--complexity") else { return PinFormat(fallback) }
    guard let complexity = PinComplexity(rawValue: text) else {
        args.fail("--complexity must be digits-4, digits-6, digits-4-8 or alphanumeric, not '\(text)'")
    }
    return PinFormat(complexity)
}

/// Any PIN or password up to the pad's maximum, for reading a PIN whose
/// format the vault does not record (it stores no fact about the PIN).
let anyPINFormat = PinFormat(
    isNumeric: false,
    lengthPolicy: (try? PinLengthPolicy(minimum: 1, maximum: PinLengthPolicy.absoluteMaximum))
        ?? PinComplexity.alphanumeric.lengthPolicy)
