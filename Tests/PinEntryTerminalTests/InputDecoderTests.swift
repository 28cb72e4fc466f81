import Testing

@testable import PinEntryTerminal

@Suite("Input decoders")
struct InputDecoderTests {
    func decode(_ bytes: [UInt8]) -> [UTF8StreamDecoder.Step] {
        var decoder = UTF8StreamDecoder()
        var steps: [UTF8StreamDecoder.Step] = []
        for byte in bytes {
            var step = decoder.feed(byte)
            steps.append(step)
            if case .invalid(reprocess: true) = step {
                step = decoder.feed(byte)
                steps.append(step)
            }
        }
        return steps
    }

    @Test("well-formed UTF-8 decodes one scalar per character")
    func wellFormed() {
        #expect(decode([0x31]) == [.scalar("1")])
        #expect(decode([0xC3, 0xA9]) == [.pending, .scalar("é")])
        #expect(decode([0xE2, 0x82, 0xAC]) == [.pending, .pending, .scalar("€")])
        #expect(decode([0xF0, 0x9F, 0x98, 0x80]) == [.pending, .pending, .pending, .scalar("😀")])
    }

    @Test(
        "ill-formed UTF-8 is rejected",
        arguments: [
            [UInt8(0x80)],  // stray continuation
            [0xC0, 0x80],  // overlong NUL
            [0xE0, 0x80, 0x80],  // overlong
            [0xED, 0xA0, 0x80],  // surrogate U+D800
            [0xF4, 0x90, 0x80, 0x80],  // above U+10FFFF
            [0xF5],  // never valid
            [0xFF],
        ])
    func illFormed(_ bytes: [UInt8]) {
        #expect(decode(bytes).contains { if case .invalid = $0 { true } else { false } })
        #expect(!decode(bytes).contains { if case .scalar = $0 { true } else { false } })
    }

    @Test("a truncated sequence does not swallow the next character")
    func truncatedThenAscii() {
        #expect(decode([0xC3, 0x35]) == [.pending, .invalid(reprocess: true), .scalar("5")])
    }

    func keys(_ bytes: [UInt8]) -> [TerminalKey] {
        var decoder = TerminalInputDecoder()
        var keys: [TerminalKey] = []
        for byte in bytes {
            var next: UInt8? = byte
            while let current = next {
                if let key = decoder.feed(current) { keys.append(key) }
                next = decoder.takeReprocess()
            }
        }
        if let key = decoder.flushEscape() { keys.append(key) }
        return keys
    }

    @Test("terminal bytes become keys")
    func terminalKeys() {
        #expect(keys([0x31, 0x7F, 0x08, 0x0D, 0x0A]) == [.character("1"), .backspace, .backspace, .enter, .enter])
        #expect(keys([0x03]) == [.interrupt])
        #expect(keys([0x1C]) == [.interrupt])
        #expect(keys([0x1A]) == [.suspend])
        #expect(keys([0x04]) == [.cancel])
        #expect(
            keys([0x1B, 0x5B, 0x41, 0x1B, 0x5B, 0x42, 0x1B, 0x4F, 0x43, 0x1B, 0x5B, 0x44])
                == [.arrow(.up), .arrow(.down), .arrow(.right), .arrow(.left)])
        #expect(keys([0x1B, 0x5B, 0x33, 0x7E]) == [.ignored])  // Delete key: ignored
        #expect(keys([0x1B]) == [.cancel])  // lone Escape
        #expect(keys([0x20]) == [.space])
        #expect(keys([0x01, 0x15]) == [.ignored, .ignored])  // other controls
        #expect(keys([0xC2, 0x85]) == [.ignored])  // C1 control
        #expect(keys([0xFF, 0x32]) == [.ignored, .character("2")])
        #expect(keys([0xC3, 0x33]) == [.ignored, .character("3")])
    }
}
