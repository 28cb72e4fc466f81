import SecureCore
import Testing

/// The mask-computed digits agree with the tables they replace, for every input value.
@Suite("Constant-time hex and Base64 digits")
struct ConstantTimeEncodingTests {
    @Test func hexDigitsMatchTheTable() {
        let table = Array("0123456789abcdef".utf8)
        for nibble in 0..<16 { #expect(ConstantTimeEncoding.hexDigit(UInt8(nibble)) == table[nibble]) }
        #expect(ConstantTimeEncoding.hexDigit(0xFA) == UInt8(ascii: "a"), "only the low 4 bits count")
    }

    @Test func base64CharactersMatchTheAlphabet() {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        for sextet in 0..<64 {
            #expect(ConstantTimeEncoding.base64Character(UInt8(sextet)) == alphabet[sextet])
        }
        #expect(ConstantTimeEncoding.base64Character(0xC1) == UInt8(ascii: "B"), "only the low 6 bits count")
    }
}
