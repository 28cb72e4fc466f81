import Foundation
import Testing

@testable import PowerAuthProtocol

@Suite("Base64 decoding of the wire's public fields")
struct Base64Tests {
    @Test("every length 0 ... 64 round-trips and agrees with Foundation's decoder")
    func agreesWithFoundation() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...64 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Data(bytes).base64EncodedString()
            #expect(Base64.decode(text) == bytes)
            #expect(Base64.decode(text).map { Data($0) } == Data(base64Encoded: text))
            #expect(Base64.encode(bytes) == text)
        }
    }

    @Test("non-canonical or malformed text is refused")
    func refusals() {
        #expect(Base64.decode("QQ==") == [0x41])
        #expect(Base64.decode("QUI=") == [0x41, 0x42])
        for bad in [
            "QR==",  // bits below the last byte set
            "QUJ=",  // likewise with one pad
            "QQ==QUJD",  // padding before the last quad
            "=QQQ", "Q=QQ", "QQ=Q",  // padding out of place
            "QUJ", "QUJDR",  // not a multiple of four
            "QU J", "QUJ-", "QUJ_", "QUJ\u{00E9}",  // outside the alphabet
        ] {
            #expect(Base64.decode(bad) == nil, "\(bad)")
        }
        #expect(Base64.decode("") == [])
    }
}
