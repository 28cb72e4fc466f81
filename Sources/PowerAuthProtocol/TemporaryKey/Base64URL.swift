/// Base64url without padding (RFC 7515 §2), the encoding of every JWS segment.
/// Decoding is strict: no padding, no whitespace, no stray bits.
package enum Base64URL {
    /// Encodes `bytes` as base64url without padding.
    /// - Parameter bytes: any bytes.
    /// - Returns: the text.
    package static func encode(_ bytes: [UInt8]) -> String {
        var text = ""
        for character in Base64.encode(bytes) {
            switch character {
            case "+": text.append("-")
            case "/": text.append("_")
            case "=": continue
            default: text.append(character)
            }
        }
        return text
    }

    /// Decodes base64url without padding.
    /// - Parameter text: the segment.
    /// - Returns: the bytes, or `nil` when `text` is not canonical base64url.
    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        guard text.count % 4 != 1 else { return nil }
        var standard = ""
        standard.reserveCapacity(text.count + 3)
        for character in text {
            switch character {
            case "-": standard.append("+")
            case "_": standard.append("/")
            case "+", "/", "=": return nil
            default: standard.append(character)
            }
        }
        standard.append(String(repeating: "=", count: (4 - standard.count % 4) % 4))
        return Base64.decode(standard)
    }
}
