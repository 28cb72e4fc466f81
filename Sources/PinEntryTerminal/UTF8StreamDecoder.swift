import SecureCore

/// An incremental UTF-8 decoder fed one byte at a time, so input read with
/// `read(2)` goes straight into a password without ever being gathered in a
/// buffer. It rejects what the Unicode standard calls ill-formed: stray
/// continuation bytes, overlong forms, surrogates, values above U+10FFFF and
/// truncated sequences.
///
/// The partial code point lives in this small value only; ``wipe()`` zeroes it.
struct UTF8StreamDecoder {
    enum Step: Equatable {
        /// A complete scalar.
        case scalar(Unicode.Scalar)
        /// More bytes are needed.
        case pending
        /// The bytes so far are ill-formed and were discarded; if
        /// `reprocess` is true, the last byte starts something new and must be
        /// fed again.
        case invalid(reprocess: Bool)
    }

    private var value: UInt32 = 0
    private var needed = 0
    private var lowerBound: UInt8 = 0x80
    private var upperBound: UInt8 = 0xBF

    /// Whether a sequence is in progress.
    var isPending: Bool { needed > 0 }

    mutating func feed(_ byte: UInt8) -> Step {
        if needed == 0 {
            switch byte {
            case 0x00...0x7F:
                return .scalar(Unicode.Scalar(byte))
            case 0xC2...0xDF:
                start(value: UInt32(byte & 0x1F), needed: 1)
            case 0xE0...0xEF:
                start(value: UInt32(byte & 0x0F), needed: 2)
                if byte == 0xE0 { lowerBound = 0xA0 }  // overlong
                if byte == 0xED { upperBound = 0x9F }  // surrogates
            case 0xF0...0xF4:
                start(value: UInt32(byte & 0x07), needed: 3)
                if byte == 0xF0 { lowerBound = 0x90 }  // overlong
                if byte == 0xF4 { upperBound = 0x8F }  // above U+10FFFF
            default:
                return .invalid(reprocess: false)
            }
            return .pending
        }
        guard byte >= lowerBound && byte <= upperBound else {
            wipe()
            return .invalid(reprocess: true)
        }
        lowerBound = 0x80
        upperBound = 0xBF
        value = (value << 6) | UInt32(byte & 0x3F)
        needed -= 1
        guard needed == 0 else { return .pending }
        let scalar = Unicode.Scalar(value)
        wipe()
        guard let scalar else { return .invalid(reprocess: false) }
        return .scalar(scalar)
    }

    /// Discards a sequence in progress (end of input) and zeroes the state.
    mutating func wipe() {
        // Through an opaque call: a plain `value = 0` before the decoder dies is a dead store
        // the optimiser removes (review L6).
        SecureMemory.wipe(&value)
        needed = 0
        lowerBound = 0x80
        upperBound = 0xBF
    }

    private mutating func start(value: UInt32, needed: Int) {
        self.value = value
        self.needed = needed
    }
}
