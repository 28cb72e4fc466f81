import PowerAuthProtocol
import SecureCore
import Testing

@Suite("MOBILE_SDK_CONFIG: the configuration string a PowerAuth mobile SDK takes")
struct ConfigurationStringTests {
    /// From the mobile SDK's own test, powerauth-mobile-sdk
    /// `src/PowerAuthTests/pa2SessionSetupTests.cpp` `testSimplifiedConfiguration`
    /// (SDK 1.9.2): the string, its three values, and that saving gives the string back.
    static let upstream =
        "ARDDj6EB6iAUtNmNxKM/BsbaEEs5bP+yVmyjfhQDoox3LDwBAUEEQQ7CWNKAi0EgCfOvd/srfqz4oqhTMLwsT4r7sPLRfqICRw9cCMs/Uoo/F2rIz+KKEcBxbnH9bMk8Ju3K1wmjbA=="

    private func failure(_ text: String) -> ConfigurationError? {
        do throws(ProtocolError) {
            _ = try SDKConfiguration(parsing: text)
            return nil
        } catch {
            guard case .invalidConfiguration(let reason) = error else { return nil }
            return reason
        }
    }

    @Test("the SDK's test string parses to its values and re-encodes byte for byte")
    func upstreamString() throws {
        let config = try SDKConfiguration(parsing: Self.upstream)
        #expect(config.applicationKey == "w4+hAeogFLTZjcSjPwbG2g==")
        #expect(config.applicationSecret == "Szls/7JWbKN+FAOijHcsPA==")
        #expect(
            Base64.encode(config.masterServerPublicKey)
                == "BEEOwljSgItBIAnzr3f7K36s+KKoUzC8LE+K+7Dy0X6iAkcPXAjLP1KKPxdqyM/iihHAcW5x/WzJPCbtytcJo2w=")
        #expect(config.keys.map(\.id) == [0x01])
        #expect(config.encoded == Self.upstream)
    }

    @Test("pa2SessionSetupTests.cpp generated vectors: the valid ones pass the structure, the invalid ones fail")
    func generatedVectors() {
        // validV3 and validV4 carry 65 random bytes as key 0x01: the SDK only checks the
        // structure here and refuses the key later; we check the point at once.
        let validV3 =
            "ARCerSCymKwmdXXakCxpvGpHEBSiMV5W2w/mCR3vLm3IM0sBAUGwfOPQqq6lO0ZXPzh/zwlIKnJ3wW1eM2rXk+WF/5U91oNrQCFr4DUtc+BdaN/sagyN12Gm8s5VKkahsOuzIjOt5Q=="
        let validV4 =
            "ARBR33RUAsQ38ndQYmtJZmodEDmzLdrLNLkhjajpUBwaxYYCIEFQoJW4sLvDAp3DOzSvJb9q6YG0jzSG1mfNDGzW9+70vcsCZon+cYcN8bIZ3sXHfLmcRumie+wA8hFe5/RVkCqq7QFBHF507ViMB9o2GdDm+DEGvJY2PP6z+bHS/SOWPIvb1RwGjksD1rFSYWqlA5hM8PY2VnevJ3vJAHm32TdCQbfyI6g="
        #expect(failure(validV3) == .invalidMasterKey)
        #expect(failure(validV4) == .invalidMasterKey)
        let invalid: [(String, ConfigurationError)] = [
            (
                "AhBQnJ1yWytWB13ARL3AqSxEEPBBidKT92P07ABl9u+UBNcBAUHu6k/wJH8c/qbczBbreF6Gui6X0gyOZYugN77sOCaDXN8r4q6MnsxNb31Xy95ZTrZrPSxEVR77oBJGhus9T9XG0w==",
                .unsupportedVersion(2)
            ),
            (
                "ARG2IueSajHNVygx6z42bHEE7hDpI+naUifMSpBF4IAUu9NEAQFB+giPcnJr4ZDPocgEtNLHzh4Z9L1XhCrmUzBjKNliDPqycwllAdwy2K1y+2mvYLgtlzNpGXbAzV1eQkruCE5wOQw=",
                .invalidLength(field: "applicationKey", expected: 16, actual: 17)
            ),
            (
                "AQ9MKVSquvEs7PFEoiLe9QAQIyCEpjnnw+JoAdEpqRAKBgEBQRIuf1EegLTc+6I7tjWZT/Kno6+PbX0w+GA8a1XERHbR2QSOIsoVhLHTUKn9cFWWYtOvXmXTjWzhbOojFEILzlLI",
                .invalidLength(field: "applicationKey", expected: 16, actual: 15)
            ),
            ("ARCEuVTbQw3ESdve/M/K9W0=", .truncated(field: "applicationKey")),
            (
                "ARCuz73FKX3tC4fOtPSoNGN6EfFcGuES+0e74QmfC/A9e/7uAQFBih2QT11pTEBvfAWDVcCg3cLDGK4JKP2XIb23WW2Zqo1r+9pPpG3RWER50M7iHjmjNhL2JNl1UORjFA9qoua23oo=",
                .invalidLength(field: "applicationSecret", expected: 16, actual: 17)
            ),
            (
                "ARA0Bo5m7wqALKWT/YfGg2jgD+47wy2aDInhst2BNv5sAwEBQd1Ry6YtFCaA6dyOR/BMkUigHIBdYoSLgT5ncIUJMJDYI/CGRGQq/4TSdtRKV8K69hWx/K125GjPYJnQnTVn7/G+",
                .invalidLength(field: "applicationSecret", expected: 16, actual: 15)
            ),
            ("ARAjrzYiRGpMWNm60rTEMSl9ECCqHMjRfeTvSWwnOZ+6yQ==", .truncated(field: "applicationSecret")),
            ("ARDBboKaM9dnPiYR9PEvYHNMEEe0apJ3QQijoU/Wairll6EA", .missingMasterKey),
            (
                "ARB7Qu2aH82o+LFF88cIDZClEBAZwMgStK1EXjub7mUQJKIBIEEkiSrBgaTZmn4H8p0NEXwmhfZrmwnHUwoaaAaSsAmoBEa1W69As59VISJMREMLUNFXdUdZALEHR1mjKDlNnVuR4g==",
                .missingMasterKey
            ),
            (
                "ARAqPe4+Jnc0qpoZ96akrJWvEGVD2W4BgMYCLqN0+py/Qa0BAUHYLlvVDSRWspVFPVLOei+VVmWg34hZr4ibQgDghxG8WPUBqvseDZJUmrCuEWK41AIUwc6PAV1FB86NVFZCg+3F",
                .truncated(field: "key")
            ),
        ]
        for (text, expected) in invalid { #expect(failure(text) == expected, "\(text)") }
        print("pa2SessionSetupTests.cpp: 1 + 2 valid, \(invalid.count) invalid configurations checked")
    }

    @Test("a V4-style string: unknown key ids are kept in order and written back")
    func otherKeysRoundTrip() throws {
        let crypto = try ActivationCrypto(algorithm: .legacyP256)
        let master = try crypto.generateKeyPair().publicKey
        let extra = SDKConfiguration.Key(id: 0x02, bytes: [UInt8](repeating: 7, count: 97))
        let big = SDKConfiguration.Key(id: 0x03, bytes: [UInt8](repeating: 9, count: 1952))
        let config = try SDKConfiguration(
            applicationKey: [UInt8](repeating: 1, count: 16), applicationSecret: [UInt8](repeating: 2, count: 16),
            masterServerPublicKey: master, otherKeys: [extra, big])
        let bytes = try #require(Base64.decode(config.encoded))
        // 0x01, Data(16), Data(16), Count 3, key 0x01 with Count 65, …, key 0x03 with the two-byte Count 0x87A0.
        #expect(Array(bytes[0...1]) == [0x01, 0x10])
        #expect(bytes[18] == 0x10)
        #expect(Array(bytes[35...38]) == [0x03, 0x01, 0x41, 0x04])
        #expect(Array(bytes[(39 + 64)...(39 + 64 + 2)]) == [0x02, 0x61, 7])
        #expect(Array(bytes[(39 + 64 + 2 + 97)...(39 + 64 + 2 + 97 + 2)]) == [0x03, 0x87, 0xA0])
        let parsed = try SDKConfiguration(parsing: config.encoded)
        #expect(parsed == config)
        #expect(parsed.masterServerPublicKey == master)
    }

    @Test("malformed strings give typed errors")
    func malformed() throws {
        let crypto = try ActivationCrypto(algorithm: .legacyP256)
        let master = try crypto.generateKeyPair().publicKey
        let good = try SDKConfiguration(
            applicationKey: [UInt8](repeating: 1, count: 16), applicationSecret: [UInt8](repeating: 2, count: 16),
            masterServerPublicKey: master)
        let bytes = try #require(Base64.decode(good.encoded))
        #expect(failure("") == .truncated(field: "version"))
        #expect(failure("not base64!") == .malformedBase64)
        #expect(failure(good.encoded + " ") == .malformedBase64)
        #expect(failure(String(repeating: "A", count: 8196)) == .tooLong)
        #expect(failure(Base64.encode(Array(bytes.prefix(35)))) == .truncated(field: "keyCount"))
        #expect(failure(Base64.encode(Array(bytes.prefix(36)))) == .truncated(field: "keyId"))
        #expect(failure(Base64.encode(Array(bytes.prefix(37)))) == .truncated(field: "key"))
        #expect(failure(Base64.encode(Array(bytes.dropLast()))) == .truncated(field: "key"))
        #expect(failure(Base64.encode(bytes + [0])) == .trailingBytes)
        // Two-byte Count in the key count that claims more keys than there are.
        #expect(
            failure(Base64.encode(Array(bytes.prefix(35)) + [0x80, 0x02] + bytes[36...])) == .truncated(field: "keyId"))
        // Four-byte Count cut short.
        #expect(failure(Base64.encode(Array(bytes.prefix(35)) + [0xC0, 0x00])) == .truncated(field: "keyCount"))
        // The master key twice.
        var twice = bytes
        twice[35] = 2
        twice += bytes[36...]
        #expect(failure(Base64.encode(twice)) == .duplicateKey(id: 1))
        // The master key off the curve.
        var off = bytes
        off[bytes.count - 1] ^= 1
        #expect(failure(Base64.encode(off)) == .invalidMasterKey)
        #expect(throws: ProtocolError.invalidConfiguration(.invalidMasterKey)) {
            try SDKConfiguration(
                applicationKey: [UInt8](repeating: 1, count: 16), applicationSecret: [UInt8](repeating: 2, count: 16),
                masterServerPublicKey: [4] + [UInt8](repeating: 0, count: 64))
        }
    }

    @Test("a compressed master key is accepted, as the SDK accepts it")
    func compressedMaster() throws {
        let crypto = try ActivationCrypto(algorithm: .legacyP256)
        let compressed = try PublicKeyEncoding.compressed(try crypto.generateKeyPair().publicKey)
        let config = try SDKConfiguration(
            applicationKey: [UInt8](repeating: 1, count: 16), applicationSecret: [UInt8](repeating: 2, count: 16),
            masterServerPublicKey: compressed)
        #expect(try SDKConfiguration(parsing: config.encoded).masterServerPublicKey == compressed)
    }
}

@Suite("Public key encodings: compressed device keys, uncompressed server keys")
struct PublicKeyEncodingTests {
    @Test("compression keeps X and the parity of Y, and is what ECDH and the fingerprint accept")
    func compression() throws {
        let crypto = try ActivationCrypto(algorithm: .legacyP256)
        for _ in 0..<16 {
            let device = try crypto.generateKeyPair()
            let server = try crypto.generateKeyPair()
            #expect(PublicKeyEncoding.isUncompressed(device.publicKey))
            let compressed = try PublicKeyEncoding.compressed(device.publicKey)
            #expect(compressed.count == 33)
            #expect(compressed[0] == 0x02 | (device.publicKey[64] & 1))
            #expect(Array(compressed[1...]) == Array(device.publicKey[1...32]))
            #expect(try PublicKeyEncoding.compressed(compressed) == compressed)
            #expect(!PublicKeyEncoding.isUncompressed(compressed))
            let a = try crypto.masterSecret(privateKey: server.privateKey, peerPublicKey: compressed)
            let b = try crypto.masterSecret(privateKey: server.privateKey, peerPublicKey: device.publicKey)
            #expect(try Vec.reveal(a) == Vec.reveal(b))
            #expect(
                try crypto.fingerprint(
                    devicePublicKey: compressed, serverPublicKey: server.publicKey, activationId: "a")
                    == crypto.fingerprint(
                        devicePublicKey: device.publicKey, serverPublicKey: server.publicKey, activationId: "a"))
        }
        #expect(throws: ProtocolError.invalidKey(field: "publicKey")) {
            try PublicKeyEncoding.compressed([4] + [UInt8](repeating: 0, count: 64))
        }
    }
}
