/// Conversion of ECDSA P-256 (and P-384: `componentByteCount` 48) signatures between DER (`SEQUENCE { INTEGER r, INTEGER s }`,
/// what the secure core signs and verifies) and JOSE (`r ‖ s`, each 32 bytes
/// big-endian, RFC 7518 §3.4, what ES256 puts in a JWS). Signatures are public:
/// ordinary branches are fine here.
package enum ECDSASignatureFormat {
    /// Size of one JOSE component.
    package static let componentByteCount = 32

    /// DER → JOSE.
    /// - Parameters:
    ///   - der: a DER signature with short-form lengths (P-256 and P-384 always fit).
    ///   - componentByteCount: 32 (P-256) or 48 (P-384).
    /// - Returns: `2 × componentByteCount` bytes `r ‖ s`, or `nil` for malformed DER or a wider integer.
    package static func jose(fromDER der: [UInt8], componentByteCount: Int = componentByteCount) -> [UInt8]? {
        guard der.count >= 8, der[0] == 0x30, Int(der[1]) == der.count - 2, der[1] < 0x80 else { return nil }
        var index = 2
        var output: [UInt8] = []
        for _ in 0..<2 {
            guard index + 2 <= der.count, der[index] == 0x02 else { return nil }
            let length = Int(der[index + 1])
            index += 2
            guard length >= 1, length < 0x80, index + length <= der.count else { return nil }
            var integer = Array(der[index..<(index + length)])
            index += length
            guard integer[0] & 0x80 == 0 else { return nil }  // negative: not an ECDSA component
            while integer.count > 1 && integer[0] == 0 { integer.removeFirst() }
            guard integer.count <= componentByteCount else { return nil }
            output += [UInt8](repeating: 0, count: componentByteCount - integer.count) + integer
        }
        return index == der.count ? output : nil
    }

    /// JOSE → DER (minimal integers, a zero byte before a high bit), as the
    /// mobile SDK's `ECDSA_JOSEtoDER` writes it.
    /// - Parameters:
    ///   - jose: `r ‖ s`, `2 × componentByteCount` bytes.
    ///   - componentByteCount: 32 (P-256) or 48 (P-384).
    /// - Returns: the DER signature, or `nil` for another length.
    package static func der(fromJOSE jose: [UInt8], componentByteCount: Int = componentByteCount) -> [UInt8]? {
        guard jose.count == 2 * componentByteCount else { return nil }
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty { value = [0] }
            if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(jose[0..<componentByteCount]) + integer(jose[componentByteCount...])
        return [0x30, UInt8(body.count)] + body
    }
}
