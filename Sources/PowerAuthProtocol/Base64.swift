/// Strict standard Base64 (RFC 4648 §4, padded). The decoder is total: any
/// input gives bytes or `nil`, and it accepts only the canonical encoding —
/// no whitespace, padding only at the end, unused bits zero — so one value
/// has exactly one text form (what a signed header needs).
package enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Encodes with padding.
    package static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let b0 = UInt32(bytes[i])
            let b1 = i + 1 < bytes.count ? UInt32(bytes[i + 1]) : 0
            let b2 = i + 2 < bytes.count ? UInt32(bytes[i + 2]) : 0
            let n = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(i + 1 < bytes.count ? alphabet[Int(n >> 6 & 63)] : UInt8(ascii: "="))
            out.append(i + 2 < bytes.count ? alphabet[Int(n & 63)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes canonical padded Base64, or returns `nil`.
    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 4 * 3)
        var index = 0
        // Quad by quad into `out`, with no allocation per quad (this runs on every signed request).
        while index < chars.count {
            let isLast = index + 4 == chars.count
            let (c0, c1, c2, c3) = (chars[index], chars[index + 1], chars[index + 2], chars[index + 3])
            let pad = UInt8(ascii: "=")
            let padding = c3 == pad ? (c2 == pad ? 2 : 1) : 0
            guard padding == 0 || isLast, c0 != pad, c1 != pad, padding == 2 || c2 != pad,
                let v0 = value(c0), let v1 = value(c1)
            else { return nil }
            var n = v0 << 18 | v1 << 12
            if padding < 2 {
                guard let v2 = value(c2) else { return nil }
                n |= v2 << 6
            }
            if padding == 0 {
                guard let v3 = value(c3) else { return nil }
                n |= v3
            }
            // Canonical form: the bits below the last full byte must be zero.
            if padding == 2, n & 0xFFFF != 0 { return nil }
            if padding == 1, n & 0xFF != 0 { return nil }
            out.append(UInt8(n >> 16 & 0xFF))
            if padding < 2 { out.append(UInt8(n >> 8 & 0xFF)) }
            if padding == 0 { out.append(UInt8(n & 0xFF)) }
            index += 4
        }
        return out
    }

    /// Decodes `field`, throwing a typed error when it is not canonical
    /// Base64 or (if `count` is given) not exactly that many bytes.
    package static func decode(_ text: some StringProtocol, field: String, count: Int? = nil) throws(ProtocolError)
        -> [UInt8]
    {
        guard let bytes = decode(text) else { throw .malformedBase64(field: field) }
        if let count, bytes.count != count { throw .invalidLength(field: field, expected: count, actual: bytes.count) }
        return bytes
    }

    private static func value(_ c: UInt8) -> UInt32? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return UInt32(c - UInt8(ascii: "A"))
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return UInt32(c - UInt8(ascii: "a") + 26)
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(c - UInt8(ascii: "0") + 52)
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
}
