import PinEntry
import PinEntryTerminal
import PinStrength

// pinpad-demo: reads a PIN through the terminal pad or `--pin-fd N`, and
// prints its strength flags and the warn/reject verdict. All logic lives in
// PinEntryTerminal (PinCheck); this file only parses arguments.
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

let usage = """
    usage: pinpad-demo [--complexity digits-4|digits-6|digits-4-8|alphanumeric]
                       [--length N | --length MIN-MAX] [--pin-fd N] [--keypad] [--shuffled]
                       [--progress] [--reject] [--today YYYY-MM-DD] [--json]
    Reads a PIN (the terminal pad on standard input, or one line from descriptor N),
    prints its strength flags and the verdict. Exit status: 0 acceptable, 3 warn,
    4 reject, 130 cancelled, 1 bad input or failure, 64 usage.
    """

func fail(_ message: String) -> Never {
    FileHandleless.printError("pinpad-demo: \(message)\n\(usage)")
    exit(64)
}

enum FileHandleless {
    static func printError(_ text: String) {
        var line = text + "\n"
        line.withUTF8 { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
    }
}

func parseLength(_ text: Substring) -> PinLengthPolicy? {
    let parts = text.split(separator: "-", omittingEmptySubsequences: false)
    guard let minimum = parts.first.flatMap({ Int($0) }), parts.count <= 2 else { return nil }
    let maximum = parts.count == 2 ? Int(parts[1]) : minimum
    guard let maximum else { return nil }
    return try? PinLengthPolicy(minimum: minimum, maximum: maximum)
}

func parseDay(_ text: String) -> CalendarDay? {
    let parts = text.split(separator: "-").compactMap { Int($0) }
    guard parts.count == 3, (1...12).contains(parts[1]), (1...31).contains(parts[2]) else { return nil }
    return CalendarDay(year: parts[0], month: parts[1], day: parts[2])
}

var format = PinFormat(.fourDigits)
var descriptor: Int32?
var options = TerminalPinPad.Options()
var policy = PinWarningPolicy()
var today: any TodayProvider = SystemToday()
var json = false

var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--complexity":
        guard let value = arguments.popFirst(), let complexity = PinComplexity(rawValue: value) else {
            fail("--complexity needs one of digits-4, digits-6, digits-4-8, alphanumeric")
        }
        format = PinFormat(complexity)
        if !complexity.isNumeric { options.prompt = "Enter password" }
    case "--length":
        guard let value = arguments.popFirst(), let policy = parseLength(Substring(value)) else {
            fail("--length needs N or MIN-MAX within 1-\(PinLengthPolicy.absoluteMaximum)")
        }
        format = PinFormat(isNumeric: format.isNumeric, lengthPolicy: policy)
    case "--pin-fd":
        guard let value = arguments.popFirst(), let fd = Int32(value), fd >= 0 else {
            fail("--pin-fd needs a descriptor number")
        }
        descriptor = fd
    case "--keypad": options.showsKeypad = true
    case "--shuffled":
        options.showsKeypad = true
        options.keypadLayout = .shuffledDigits
    case "--progress": options.showsProgressText = true
    case "--reject": policy.action = .reject
    case "--today":
        guard let value = arguments.popFirst(), let day = parseDay(value) else { fail("--today needs YYYY-MM-DD") }
        today = FixedToday(day)
    case "--json": json = true
    case "--help", "-h":
        print(usage)
        exit(0)
    default:
        fail("unknown argument \(argument)")
    }
}

let request = PinCheckRequest(
    format: format, source: descriptor.map { .descriptor($0) } ?? .terminal(options),
    policy: policy, today: today)
do {
    let outcome = try PinCheck.run(request)
    print(json ? outcome.json : outcome.text)
    exit(outcome.exitStatus)
} catch {
    if json {
        print("{\"error\":\"\(PinCheck.message(for: error))\"}")
    } else {
        FileHandleless.printError("pinpad-demo: " + PinCheck.message(for: error))
    }
    exit(PinCheck.exitStatus(for: error))
}
