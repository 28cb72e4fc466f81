import Foundation
import PowerAuthProtocol
import SecureCore
import Testing

@Suite("X-PowerAuth-Authorization")
struct AuthorizationHeaderTests {
    static let appKey = "AAECAwQFBgcICQoLDA0ODw=="
    static let nonce = [UInt8](repeating: 0x5A, count: 16)

    private func sample(_ version: ProtocolVersion = .v3_1, factors: FactorSet = .possessionKnowledge) throws
        -> AuthorizationHeader
    {
        let crypto = try ActivationCrypto()
        let keys = try crypto.factorKeys(masterSecret: try SecureBytes.random(count: 16))
        let request = try RequestData(method: "POST", uriIdentifier: "/pa/test", nonce: Self.nonce, body: [1, 2, 3])
        let code = try crypto.authenticationCode(
            data: try request.normalized(applicationSecret: Self.appKey), factors: factors, keys: keys.signingKeys,
            counter: HashCounter.random(), format: version.authenticationCodeFormat)
        return try AuthorizationHeader(
            activationId: "7a24c6e9-48e9-43c2-ab4a-aed6270e924d", applicationKey: Self.appKey, nonce: Self.nonce,
            factorSet: factors, authenticationCode: code, version: version)
    }

    @Test("build then parse gives the same header, for every version and factor set")
    func roundTrip() throws {
        for version in ProtocolVersion.allCases {
            for factors in FactorSet.allCases {
                let header = try sample(version, factors: factors)
                #expect(try AuthorizationHeader.parse(header.value) == header)
            }
        }
        let header = try sample()
        #expect(header.value.hasPrefix("PowerAuth pa_activation_id=\"7a24c6e9-48e9-43c2-ab4a-aed6270e924d\", "))
        #expect(header.value.hasSuffix(", pa_version=\"3.1\""))
        #expect(AuthorizationHeader.name == "X-PowerAuth-Authorization")
    }

    @Test("folded whitespace, another order and a lower-case scheme parse")
    func tolerantWhitespace() throws {
        let header = try sample()
        let code = header.authenticationCode
        let text =
            "  powerauth\tpa_version=\"3.1\" ,\r\n\tpa_signature=\"\(code)\",pa_signature_type=\"possession_knowledge\",\n"
            + " pa_nonce=\"WlpaWlpaWlpaWlpaWlpaWg==\", pa_application_key=\"\(Self.appKey)\", "
            + "pa_activation_id=\"7a24c6e9-48e9-43c2-ab4a-aed6270e924d\"  "
        #expect(try AuthorizationHeader.parse(text) == header)
    }

    @Test("the Android SDK's space separators, the iOS SDK's \", \" and a mix parse to the same header")
    func sdkSeparators() throws {
        let header = try sample()
        let fields = [
            ("pa_activation_id", header.activationId), ("pa_application_key", header.applicationKey),
            ("pa_nonce", Base64.encode(header.nonce)), ("pa_signature_type", header.factorSet.rawValue),
            ("pa_signature", header.authenticationCode), ("pa_version", header.version.rawValue),
        ].map { "\($0.0)=\"\($0.1)\"" }
        for separator in [" ", ", ", ",", "  ", "\t", " , "] {
            #expect(try AuthorizationHeader.parse("PowerAuth " + fields.joined(separator: separator)) == header)
        }
        let mixed = "PowerAuth " + fields[0] + " " + fields[1] + ", " + fields[2..<6].joined(separator: " ")
        #expect(try AuthorizationHeader.parse(mixed) == header)
    }

    @Test("the encryption and token headers, V3 and V4, take the Android and iOS separators")
    func otherHeaders() throws {
        let appKey = Self.appKey
        let id = "7a24c6e9-48e9-43c2-ab4a-aed6270e924d"
        for separator in [" ", ", "] {
            let v3 = try EncryptionHeader.parse(
                "PowerAuth version=\"3.3\"\(separator)application_key=\"\(appKey)\"\(separator)activation_id=\"\(id)\"")
            #expect(v3 == EncryptionHeader(version: .v3_3, applicationKey: appKey, activationId: id))
            let v4 = try V4EncryptionHeader.parse(
                "PowerAuth version=\"4.0\"\(separator)application_key=\"\(appKey)\"")
            #expect(v4 == V4EncryptionHeader(applicationKey: appKey, activationId: nil))
            let nonce = Base64.encode(Self.nonce)
            let digest3 = Base64.encode([UInt8](repeating: 7, count: 32))
            let tokenFields = [
                "token_id=\"\(id)\"", "token_digest=\"\(digest3)\"", "nonce=\"\(nonce)\"",
                "timestamp=\"1700000000000\"", "version=\"3.3\"",
            ]
            let token3 = try TokenHeader.parse("PowerAuth " + tokenFields.joined(separator: separator))
            #expect(token3.tokenId == id && token3.timestamp == "1700000000000" && token3.version == .v3_3)
            let digest4 = [UInt8](repeating: 9, count: V4TokenDigest.byteCount)
            let token4 = V4TokenHeader(
                tokenId: id, digest: digest4, nonce: Self.nonce, timestampMilliseconds: 1_700_000_000_000)
            #expect(
                try V4TokenHeader.parse(token4.value.replacingOccurrences(of: "\", ", with: "\"\(separator)")) == token4
            )
            // Duplicates stay refused however the fields are separated.
            #expect(throws: ProtocolError.duplicateHeaderField("version")) {
                try EncryptionHeader.parse("PowerAuth version=\"3.3\"\(separator)version=\"3.3\"")
            }
        }
    }

    @Test("garbage and malformed fields are typed errors")
    func rejected() throws {
        let good = try sample().value
        let cases: [(String, ProtocolError)] = [
            ("", .malformedHeader(reason: "missing the PowerAuth scheme")),
            ("Basic abc", .malformedHeader(reason: "missing the PowerAuth scheme")),
            ("PowerAuth", .malformedHeader(reason: "no space after the scheme")),
            ("PowerAuthpa_nonce=\"x\"", .malformedHeader(reason: "no space after the scheme")),
            ("PowerAuth pa_nonce=x", .malformedHeader(reason: "expected =\" after pa_nonce")),
            ("PowerAuth pa_nonce=\"abc", .malformedHeader(reason: "unterminated value")),
            ("PowerAuth pa_nonce=\"a b\"", .malformedHeader(reason: "invalid character in the value of pa_nonce")),
            ("PowerAuth pa_nonce=\"a\\\"\"", .malformedHeader(reason: "invalid character in the value of pa_nonce")),
            ("PowerAuth =\"a\"", .malformedHeader(reason: "expected a parameter name at offset 10")),
            (
                "PowerAuth pa_nonce=\"a\"pa_version=\"3.1\"",
                .malformedHeader(reason: "expected a comma or a space at offset 22")
            ),
            ("PowerAuth pa_nonce=\"a,b\"", .malformedHeader(reason: "invalid character in the value of pa_nonce")),
            (
                "PowerAuth pa_nonce=\"a, pa_version=\"3.1\"",
                .malformedHeader(reason: "invalid character in the value of pa_nonce")
            ),
            (
                "PowerAuth pa_nonce=\"a\",,pa_version=\"3.1\"",
                .malformedHeader(reason: "expected a parameter name at offset 23")
            ),
            ("PowerAuth pa_nonce=\"a\" pa_nonce=\"a\"", .duplicateHeaderField("pa_nonce")),
            ("PowerAuth pa_nonce=\"a\",", .malformedHeader(reason: "expected a parameter name at offset 23")),
            ("PowerAuth pa_token=\"a\"", .unknownHeaderField("pa_token")),
            ("PowerAuth pa_nonce=\"a\", pa_nonce=\"a\"", .duplicateHeaderField("pa_nonce")),
            ("PowerAuth pa_nonce=\"WlpaWlpaWlpaWlpaWlpaWg==\"", .missingHeaderField("pa_activation_id")),
            (
                good.replacingOccurrences(of: "pa_version=\"3.1\"", with: "pa_version=\"4.0\""),
                .unsupportedProtocolVersion("4.0")
            ),
            (
                good.replacingOccurrences(of: "\"possession_knowledge\"", with: "\"possession_knowledge_x\""),
                .unknownFactorSet("possession_knowledge_x")
            ),
            (
                good.replacingOccurrences(of: "\"possession_knowledge\"", with: "\"possession\""),
                .malformedAuthenticationCode
            ),
            (
                good.replacingOccurrences(of: "WlpaWlpaWlpaWlpaWlpaWg==", with: "WlpaWlpaWlpaWlpaWlpaWg="),
                .malformedBase64(field: "pa_nonce")
            ),
            (
                good.replacingOccurrences(of: "WlpaWlpaWlpaWlpaWlpaWg==", with: "WlpaWlpaWlpaWlpaWlpaWh=="),
                .malformedBase64(field: "pa_nonce")
            ),
            (
                good.replacingOccurrences(of: "WlpaWlpaWlpaWlpaWlpaWg==", with: "WlpaWlpaWlpaWlpaWlpa"),
                .invalidLength(field: "pa_nonce", expected: 16, actual: 15)
            ),
            (
                good.replacingOccurrences(of: Self.appKey, with: "AAEC"),
                .invalidLength(field: "pa_application_key", expected: 16, actual: 3)
            ),
            (
                good.replacingOccurrences(of: "7a24c6e9-48e9-43c2-ab4a-aed6270e924d", with: "7a24/c6e9"),
                .invalidActivationId
            ),
            (good.replacingOccurrences(of: "7a24c6e9-48e9-43c2-ab4a-aed6270e924d", with: ""), .invalidActivationId),
            ("PowerAuth " + String(repeating: "a", count: 5000), .malformedHeader(reason: "too long")),
        ]
        for (text, expected) in cases {
            #expect(throws: expected, "\(text)") { try AuthorizationHeader.parse(text) }
        }
    }

    @Test("V3.0 decimal codes: groups and digits are checked")
    func decimalShape() throws {
        let header = try sample(.v3_0, factors: .possessionKnowledgeBiometry)
        #expect(header.authenticationCode.split(separator: "-").count == 3)
        for bad in [
            "12345678-12345678", "12345678-1234567-12345678", "1234567a-12345678-12345678", "12345678--12345678",
        ] {
            #expect(throws: ProtocolError.malformedAuthenticationCode) {
                try AuthorizationHeader.parse(
                    header.value.replacingOccurrences(of: header.authenticationCode, with: bad))
            }
        }
    }

    @Test("no input traps: every truncation and every byte substitution gives a header or a typed error")
    func total() throws {
        let good = Array(try sample().value.utf8)
        var generator = SplitMix(seed: 0x5EC0_4E01)
        var outcomes = [0, 0]
        for cut in 0...good.count {
            outcomes[parses(good[0..<cut]) ? 0 : 1] += 1
        }
        let specials: [UInt8] = [0x00, 0x09, 0x20, 0x22, 0x2C, 0x3D, 0x5C, 0x7F, 0xC3, 0xFF]
        for position in 0..<good.count {
            for byte in specials {
                var mutated = good
                mutated[position] = byte
                outcomes[parses(mutated[...]) ? 0 : 1] += 1
            }
        }
        for _ in 0..<2000 {
            let length = Int(generator.next() % 96)
            let noise = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            outcomes[parses(Array("PowerAuth ".utf8)[...] + noise) ? 0 : 1] += 1
        }
        #expect(outcomes[0] >= 1)  // the untruncated header
        #expect(outcomes[1] > 2000)
    }

    private func parses(_ bytes: ArraySlice<UInt8>) -> Bool {
        do {
            _ = try AuthorizationHeader.parse(String(decoding: bytes, as: UTF8.self))
            return true
        } catch {
            // The error is typed: reaching here means an ProtocolError, never a trap.
            return false
        }
    }
}

/// A small deterministic generator so the noise inputs repeat run to run.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
