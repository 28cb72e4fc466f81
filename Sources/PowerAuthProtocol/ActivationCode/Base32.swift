/// RFC 4648 Base32 (alphabet `A-Z2-7`, no padding), the text of an activation code.
/// Public data only.
enum Base32 {
    /// The 32 characters, in value order.
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// Encodes without padding; the last character carries zero bits where the input ends.
    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[Int((buffer >> UInt32(bits)) & 31)])
            }
        }
        if bits > 0 { out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// The value of one character, or `nil` outside the alphabet (lower case included).
    static func value(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return character - UInt8(ascii: "A")
        case UInt8(ascii: "2")...UInt8(ascii: "7"): return character - UInt8(ascii: "2") + 26
        default: return nil
        }
    }

    /// Decodes unpadded Base32 whose characters were already checked with ``value(_:)``.
    /// - Returns: the bytes, or `nil` when the unused low bits of the last character
    ///   are not zero (a second spelling of the same bytes).
    static func decode(values: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for value in values {
            buffer = (buffer << 5) | UInt32(value & 31)
            bits += 5
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        guard buffer & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }
}
