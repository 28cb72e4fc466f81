import Foundation
import PowerAuthProtocol
import SecureCore
import Testing

/// What a server's JSON writer may do to the Base64 of a secret member: NSJSONSerialization
/// writes `/` as `\/`, Gson writes `=` as `\u003d` (and may write `+` or `/` as `\u002b`, `\u002f`).
@Suite("Secret members written with JSON escapes open as the plain ones")
struct EscapedSecretJSONTests {
    static func secure(_ text: String) throws -> SecureBytes {
        try Array(text.utf8).withUnsafeBytes { try SecureBytes(copying: $0) }
    }

    static func reveal(_ bytes: SecureBytes) -> [UInt8] { bytes.withUnsafeBytes { Array($0) } }

    /// The plain JSON and its escaped forms.
    static func dialects(_ plain: String) -> [String] {
        [
            plain,
            plain.replacingOccurrences(of: "/", with: "\\/"),
            plain.replacingOccurrences(of: "=", with: "\\u003d"),
            plain.replacingOccurrences(of: "=", with: "\\u003D").replacingOccurrences(of: "+", with: "\\u002b")
                .replacingOccurrences(of: "/", with: "\\u002F"),
        ]
    }

    @Test("token/create's tokenSecret, in every dialect, for secrets with and without / and +")
    func tokenPayload() throws {
        var generator = SystemRandomNumberGenerator()
        var escapedSlashes = 0
        for _ in 0..<200 {
            let raw = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let secret = try raw.withUnsafeBytes { try SecureBytes(copying: $0) }
            let json = try TokenPayload.encode(tokenId: "7a24c6e9-48e9-43c2-ab4a-aed6270e924d", secret: secret)
            let plain = String(decoding: Self.reveal(json), as: UTF8.self)
            if plain.contains("/") { escapedSlashes += 1 }
            for text in Self.dialects(plain) {
                let (id, opened) = try TokenPayload.decode(try Self.secure(text))
                #expect(id == "7a24c6e9-48e9-43c2-ab4a-aed6270e924d")
                #expect(Self.reveal(opened) == raw, "\(text)")
            }
        }
        #expect(escapedSlashes > 0)
    }

    @Test("V4 vaultEncryptionKey and tokenSecret (32 bytes), in every dialect")
    func v4Secrets() throws {
        for _ in 0..<100 {
            let secret = try SecureBytes.random(count: 32)
            let json = try V4SecretJSON.encode(fields: [("tokenId", "t-1")], secretName: "tokenSecret", secret: secret)
            for text in Self.dialects(String(decoding: Self.reveal(json), as: UTF8.self)) {
                let opened = try V4SecretJSON.decodeSecret(try Self.secure(text), secretName: "tokenSecret", count: 32)
                #expect(Self.reveal(opened) == Self.reveal(secret))
            }
        }
    }

    @Test("unknown escapes, a cut escape and a quote escape are refused")
    func refused() throws {
        let secret = try SecureBytes.random(count: 32)
        let plain = String(
            decoding: Self.reveal(try V4SecretJSON.encode(fields: [], secretName: "k", secret: secret)), as: UTF8.self)
        let value = try #require(plain.split(separator: "\"").dropFirst(3).first)
        for bad in ["\\n", "\\u0041", "\\u003", "\\", "\\u00zz"] {
            let text = plain.replacingOccurrences(of: value, with: bad + value.dropFirst(bad.count))
            #expect(throws: ProtocolError.self, "\(bad)") {
                try V4SecretJSON.decodeSecret(try Self.secure(text), secretName: "k", count: 32)
            }
        }
    }
}
