#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IPv4 or IPv6 network in CIDR form, such as `10.0.0.0/8` or `fd00::/8`: the addresses
/// whose first ``prefixLength`` bits equal those of ``address``.
///
/// Used for ``HTTPServer/Configuration/trustedProxies``. An IPv4 network never contains an IPv6
/// address, IPv4-mapped ones (`::ffff:10.0.0.1`) included: list both forms when a proxy may
/// connect either way.
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// Whether this is an IPv6 network.
    public let isIPv6: Bool
    /// The network's address bytes in network order: 4 for IPv4, 16 for IPv6 (host bits as given).
    public let address: [UInt8]
    /// The number of leading bits that must match: 0...32 for IPv4, 0...128 for IPv6.
    public let prefixLength: Int

    /// Why a network or address did not parse.
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The text given.
        public let text: String
        /// A sentence saying what is wrong.
        public var description: String {
            "\"\(text)\" is not an IP network: give an IPv4 or IPv6 address, optionally with /PREFIX, such as 10.0.0.0/8 or ::1/128"
        }
    }

    /// Parses `ADDRESS` (one host) or `ADDRESS/PREFIX`.
    /// - Parameter text: for example `127.0.0.1`, `10.0.0.0/8`, `::1` or `fd00::/8`.
    /// - Throws: ``ParseError`` for anything else: a bad address, a prefix out of range or with a
    ///   sign or leading zero, or surrounding space.
    public init(parsing text: String) throws(ParseError) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let (ipv6, bytes) = Self.parseAddress(String(parts[0])) else { throw ParseError(text: text) }
        let maximum = ipv6 ? 128 : 32
        var prefix = maximum
        if parts.count == 2 {
            let digits = parts[1]
            guard !digits.isEmpty, digits.count <= 3, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                digits == "0" || digits.first != "0", let value = Int(digits), value <= maximum
            else { throw ParseError(text: text) }
            prefix = value
        }
        isIPv6 = ipv6
        address = bytes
        prefixLength = prefix
    }

    /// Whether `candidate`, an address in text form, lies in this network.
    /// - Parameter candidate: an IPv4 or IPv6 address (no prefix, no brackets, no port).
    /// - Returns: false for text that is not an address, or an address of the other family.
    public func contains(_ candidate: String) -> Bool {
        guard let (ipv6, bytes) = Self.parseAddress(candidate), ipv6 == isIPv6 else { return false }
        let whole = prefixLength / 8
        let rest = prefixLength % 8
        guard bytes[0..<whole] == address[0..<whole] else { return false }
        guard rest > 0 else { return true }
        let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - rest))
        return bytes[whole] & mask == address[whole] & mask
    }

    /// `ADDRESS/PREFIX`, the address as given (host bits kept).
    public var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        address.withUnsafeBytes { raw in
            _ = inet_ntop(isIPv6 ? AF_INET6 : AF_INET, raw.baseAddress, &text, socklen_t(text.count))
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            + "/\(prefixLength)"
    }

    /// Whether `text` is an IPv4 or IPv6 address (no prefix, no brackets, no port).
    /// - Parameter text: the candidate.
    /// - Returns: true for `192.0.2.1` or `2001:db8::1`.
    public static func isAddress(_ text: String) -> Bool { parseAddress(text) != nil }

    /// The family and bytes of an address in text form, or nil.
    static func parseAddress(_ text: String) -> (ipv6: Bool, bytes: [UInt8])? {
        // inet_pton takes no zone index, no brackets and no spaces; the length bound keeps a long
        // header value from reaching it.
        guard !text.isEmpty, text.utf8.count < Int(INET6_ADDRSTRLEN) else { return nil }
        var four = in_addr()
        if inet_pton(AF_INET, text, &four) == 1 {
            return (false, withUnsafeBytes(of: &four) { Array($0) })
        }
        var six = in6_addr()
        if inet_pton(AF_INET6, text, &six) == 1 {
            return (true, withUnsafeBytes(of: &six) { Array($0) })
        }
        return nil
    }
}
