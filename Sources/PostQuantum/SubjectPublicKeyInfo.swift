/// The X.509 SubjectPublicKeyInfo (DER) that ML-KEM and ML-DSA public keys travel in on the wire
/// (PowerAuth V4 sends them so): `SEQUENCE { SEQUENCE { OID }, BIT STRING { 0x00 ‖ key } }`, no
/// algorithm parameters, as RFC 9881 (ML-DSA) and the ML-KEM certificate profile define it. For the
/// sizes here (1,184 … 2,592 bytes) the encoding is a fixed 22-byte prefix and the raw key.
enum SubjectPublicKeyInfo {
    /// The prefix for a key of `length` bytes under OID `2.16.840.1.101.3.4.{arc}.{leaf}`.
    static func prefix(arc: UInt8, leaf: UInt8, length: Int) -> [UInt8] {
        let algorithm: [UInt8] = [0x30, 0x0B, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, arc, leaf]
        let bits = length + 1
        let bitString: [UInt8] = [0x03, 0x82, UInt8(bits >> 8), UInt8(bits & 0xFF), 0x00]
        let total = algorithm.count + bitString.count + length
        return [0x30, 0x82, UInt8(total >> 8), UInt8(total & 0xFF)] + algorithm + bitString
    }

    /// `prefix ‖ key`.
    static func encode(_ key: [UInt8], arc: UInt8, leaf: UInt8) -> [UInt8] {
        prefix(arc: arc, leaf: leaf, length: key.count) + key
    }

    /// The raw key of `der`, which must be exactly the prefix for `length` bytes followed by them.
    static func decode(_ der: [UInt8], arc: UInt8, leaf: UInt8, length: Int) throws(PostQuantumError) -> [UInt8] {
        let expected = prefix(arc: arc, leaf: leaf, length: length)
        guard der.count == expected.count + length, Array(der.prefix(expected.count)) == expected else {
            throw .malformedPublicKeyInfo
        }
        return Array(der.dropFirst(expected.count))
    }
}
