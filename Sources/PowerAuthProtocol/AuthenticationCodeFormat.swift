/// How the authentication-code components are written.
public enum AuthenticationCodeFormat: Sendable, Equatable {
    /// Each component decimalised to `componentLength` digits (4 ... 8) and
    /// joined with `-`: protocol 3.0 online codes (8 digits) and offline codes.
    case decimal(componentLength: Int)
    /// Base64 of the last 16 bytes of each component, concatenated: protocol
    /// 3.1 and later online codes.
    case base64

    /// Offline codes with the SDK's default 8-digit components.
    public static let offline = AuthenticationCodeFormat.decimal(
        componentLength: ProtocolConstants.decimalComponentLength)

    /// Checks the component length.
    /// - Throws: ``ProtocolError/invalidComponentLength(_:)``.
    package func validate() throws(ProtocolError) {
        if case .decimal(let length) = self, !ProtocolConstants.offlineComponentLengths.contains(length) {
            throw .invalidComponentLength(length)
        }
    }

    /// Renders raw 32-byte components.
    func render(_ components: [UInt8], count: Int) -> String {
        switch self {
        case .base64:
            var tail: [UInt8] = []
            for i in 0..<count { tail += components[(i * 32 + 16)..<(i * 32 + 32)] }
            return Base64.encode(tail)
        case .decimal(let length):
            return (0..<count).map { i in Self.decimalise(components[(i * 32)..<(i * 32 + 32)], digits: length) }
                .joined(separator: "-")
        }
    }

    /// Last four bytes as a big-endian integer, top bit cleared, modulo
    /// 10^digits, zero-padded to `digits`.
    static func decimalise(_ bytes: ArraySlice<UInt8>, digits: Int) -> String {
        let tail = bytes.suffix(4)
        let value = tail.reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7FFF_FFFF
        var modulus: UInt32 = 1
        for _ in 0..<digits { modulus *= 10 }
        let text = String(value % modulus)
        return String(repeating: "0", count: digits - text.count) + text
    }

    /// Whether `code` has the shape this format gives `count` components.
    func matchesShape(_ code: String, count: Int) -> Bool {
        switch self {
        case .base64:
            return Base64.decode(code)?.count == count * ProtocolConstants.base64ComponentByteCount
        case .decimal(let length):
            let parts = code.split(separator: "-", omittingEmptySubsequences: false)
            return parts.count == count
                && parts.allSatisfy { part in
                    part.utf8.count == length
                        && part.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
                }
        }
    }
}
