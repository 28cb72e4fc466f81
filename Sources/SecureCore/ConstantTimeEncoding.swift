/// Hex and Base64 digits computed with masks instead of a table lookup, for encoding secret
/// bytes (a generated token, a derived key printed for a script): a table indexed by a secret
/// nibble or sextet touches a secret-dependent cache line. The arithmetic follows libsodium's
/// `sodium_bin2hex` and `sodium_bin2base64`. Swift code is not covered by the C core's ctgrind
/// audit; these functions contain no comparison the source could turn into a branch.
public enum ConstantTimeEncoding {
    /// The lower-case hex digit of `nibble` (0 ... 15): `0`–`9`, `a`–`f`.
    /// - Parameter nibble: the value; only its low 4 bits are used.
    /// - Returns: the ASCII digit.
    @inline(__always)
    public static func hexDigit(_ nibble: UInt8) -> UInt8 {
        let n = Int32(nibble & 0x0F)
        // (9 - n) >> 8 is all ones exactly when n > 9: then add 'a' - '0' - 10 = 39.
        return UInt8(truncatingIfNeeded: 48 + n + (((9 &- n) >> 8) & 39))
    }

    /// The standard Base64 character of `sextet` (0 ... 63): `A`–`Z`, `a`–`z`, `0`–`9`, `+`, `/`.
    /// - Parameter sextet: the value; only its low 6 bits are used.
    /// - Returns: the ASCII character.
    @inline(__always)
    public static func base64Character(_ sextet: UInt8) -> UInt8 {
        let x = Int32(sextet & 0x3F)
        let below26 = lessThan(x, 26)
        let below52 = lessThan(x, 52)
        let below62 = lessThan(x, 62)
        let result =
            (below26 & (x + 65)) | (~below26 & below52 & (x + 71)) | (~below52 & below62 & (x - 4))
            | (equal(x, 62) & 43) | (equal(x, 63) & 47)
        return UInt8(truncatingIfNeeded: result)
    }

    /// All ones when `x < y`, else 0 (both in 0 ... 255): a comparison of secret bytes
    /// without a branch.
    @inline(__always)
    public static func lessThan(_ x: Int32, _ y: Int32) -> Int32 { (x &- y) >> 8 }

    /// All ones when `x == y`, else 0 (both in 0 ... 255): an equality test of secret bytes
    /// without a branch.
    @inline(__always)
    public static func equal(_ x: Int32, _ y: Int32) -> Int32 { ((x ^ y) &- 1) >> 8 }
}
