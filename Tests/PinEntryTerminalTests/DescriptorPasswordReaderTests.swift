import PinEntry
import PinStrength
import SecureCore
import TestSupport
import Testing

@testable import PinEntryTerminal

#if canImport(Glibc)
    import Glibc
#endif

@Suite("DescriptorPasswordReader")
struct DescriptorPasswordReaderTests {
    /// Writes `bytes` into a fresh pipe, closes the write end, and reads.
    func read(
        _ bytes: [UInt8], _ complexity: PinComplexity = .fourToEightDigits,
        after check: ((Int32) -> Void)? = nil
    ) throws(PinEntryTerminalError) -> Password {
        var fds: [Int32] = [-1, -1]
        precondition(pipe(&fds) == 0)
        defer { close(fds[0]) }
        bytes.withUnsafeBytes { _ = write(fds[1], $0.baseAddress, $0.count) }
        close(fds[1])
        defer { check?(fds[0]) }
        return try DescriptorPasswordReader(descriptor: fds[0], format: PinFormat(complexity)).readPassword()
    }

    @Test("a line is read; the trailing newline is not part of it")
    func readsLine() throws {
        for input in ["2468\n", "2468", "2468\r\n"] {
            let pin = try read(Array(input.utf8))
            defer { pin.destroy() }
            #expect(try holds(pin, "2468"), "\(input.debugDescription)")
        }
    }

    @Test("bytes after the newline stay unread in the descriptor")
    func leavesRest() throws {
        var rest: UInt8 = 0
        let pin = try read(Array("13579\nZ".utf8), after: { fd in _ = Glibc.read(fd, &rest, 1) })
        defer { pin.destroy() }
        #expect(try holds(pin, "13579"))
        #expect(rest == UInt8(ascii: "Z"))
    }

    @Test("alphanumeric input with multi-byte characters")
    func alphanumeric() throws {
        let pin = try read(Array("heslo-žluté\n".utf8), .alphanumeric)
        defer { pin.destroy() }
        #expect(try holds(pin, "heslo-žluté"))
    }

    @Test(
        "bad input is refused",
        arguments: [
            (Array("12a4\n".utf8), PinEntryTerminalError.characterNotAllowed),
            (Array("123456789\n".utf8), .tooLong(maximum: 8)),
            (Array("123\n".utf8), .tooShort(minimum: 4)),
            (Array("\n".utf8), .tooShort(minimum: 4)),
            ([0x31, 0x32, 0xFF, 0x33, 0x34, 0x0A], .malformedInput),
            ([0x31, 0x32, 0x33, 0x34, 0xC3], .malformedInput),  // truncated at end of input
            ([0x31, 0x32, 0x09, 0x33, 0x34], .characterNotAllowed),  // a tab
        ])
    func badInput(_ bytes: [UInt8], _ error: PinEntryTerminalError) {
        #expect(throws: error) { try read(bytes) }
    }

    @Test("a closed descriptor is a read error, not a crash")
    func closedDescriptor() {
        // Not a descriptor this test closed: a parallel test could be handed the same number
        // at once and have its input read here. No descriptor can be at or above the limit.
        var limit = rlimit()
        precondition(getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0)
        let closed = Int32(clamping: min(UInt64(limit.rlim_cur), UInt64(Int32.max - 1)))
        #expect(throws: PinEntryTerminalError.readFailed(errno: EBADF)) {
            try DescriptorPasswordReader(descriptor: closed, format: PinFormat(.fourDigits)).readPassword()
        }
    }

    @Test("the terminal pad refuses a descriptor that is not a terminal")
    func padNeedsTerminal() {
        var fds: [Int32] = [-1, -1]
        precondition(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        #expect(throws: PinEntryTerminalError.notATerminal) {
            try TerminalPinPad(format: PinFormat(.fourDigits), input: fds[0], output: fds[1]).readPassword()
        }
    }

    @Test("the check path judges a descriptor PIN and prints no digit of it")
    func checkPath() throws {
        let pin = try read(Array("147258\n".utf8), .sixDigits)
        defer { pin.destroy() }
        let request = PinCheckRequest(format: PinFormat(.sixDigits), source: .descriptor(-1), today: today)
        let outcome = try PinCheck.judge(pin, request: request)
        #expect(outcome.verdict == .warn)
        #expect(outcome.exitStatus == 3)
        #expect(
            outcome.json
                == #"{"format":"numeric","length":6,"flags":["pattern","frequently-used"],"relevant_flags":["frequently-used"],"verdict":"warn"}"#
        )
        #expect(!outcome.text.contains("147") && !outcome.json.contains("258"))
        var reject = request
        reject.policy.action = .reject
        #expect(try PinCheck.judge(pin, request: reject).exitStatus == 4)
    }
}
