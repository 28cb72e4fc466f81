import Testing

@_spi(Testing) @testable import SecureCore

@Suite("AEAD")
struct AEADTests {
    func unhex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex {
            let j = s.index(i, offsetBy: 2)
            out.append(UInt8(s[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    @Test func xChaChaDraftVector() throws {
        let key = try secureBytes(unhex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"))
        let message = try secureBytes(
            Array(
                "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it."
                    .utf8))
        let box = try AEAD.seal(
            message, using: key, nonce: unhex("404142434445464748494a4b4c4d4e4f5051525354555657"),
            associatedData: unhex("50515253c0c1c2c3c4c5c6c7"), algorithm: .xChaCha20Poly1305)
        #expect(
            box.ciphertext
                == unhex(
                    "bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb"
                        + "731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213b452"
                        + "2f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff9"
                        + "21f9664c97637da9768812f615c68b13b52ec0875924c1c7987947deafd8780acf49"))
        let opened = try AEAD.open(box, using: key, associatedData: unhex("50515253c0c1c2c3c4c5c6c7"))
        #expect(try opened?.isEqual(to: message) == true)
    }

    @Test func aesGCMSpecificationTestCase16() throws {
        guard AEAD.Algorithm.aes256GCM.isAvailable else {
            #expect(throws: SecureCoreError.unsupported) {
                try AEAD.seal(nil, using: SecureBytes.random(count: 32), algorithm: .aes256GCM)
            }
            return
        }
        let key = try secureBytes(unhex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"))
        let plaintext = try secureBytes(
            unhex(
                "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
                    + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"))
        let box = try AEAD.seal(
            plaintext, using: key, nonce: unhex("cafebabefacedbaddecaf888"),
            associatedData: unhex("feedfacedeadbeeffeedfacedeadbeefabaddad2"), algorithm: .aes256GCM)
        #expect(
            box.ciphertext
                == unhex(
                    "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
                        + "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
                        + "76fc6ece0f4e1768cddf8853bb2d551b"))
    }

    @Test(arguments: AEAD.Algorithm.allCases)
    func roundTripAndTampering(algorithm: AEAD.Algorithm) throws {
        guard algorithm.isAvailable else { return }
        let key = try SecureBytes.random(count: 32)
        let secret = try SecureBytes.random(count: 48)
        let header = Array("vault header".utf8)
        let box = try AEAD.seal(secret, using: key, associatedData: header, algorithm: algorithm)
        #expect(box.nonce.count == algorithm.nonceByteCount)
        #expect(box.ciphertext.count == 48 + AEAD.tagByteCount)
        #expect(try AEAD.open(box, using: key, associatedData: header)?.isEqual(to: secret) == true)
        // Fresh nonce every time.
        #expect(try AEAD.seal(secret, using: key, associatedData: header, algorithm: algorithm).nonce != box.nonce)
        for i in stride(from: 0, to: box.ciphertext.count, by: 7) {
            var bad = box
            bad.ciphertext[i] ^= 0x01
            #expect(throws: SecureCoreError.authenticationFailed) {
                try AEAD.open(bad, using: key, associatedData: header)
            }
        }
        var badNonce = box
        badNonce.nonce[0] ^= 1
        #expect(throws: SecureCoreError.authenticationFailed) {
            try AEAD.open(badNonce, using: key, associatedData: header)
        }
        #expect(throws: SecureCoreError.authenticationFailed) { try AEAD.open(box, using: key, associatedData: []) }
        #expect(throws: SecureCoreError.authenticationFailed) {
            try AEAD.open(box, using: SecureBytes.random(count: 32), associatedData: header)
        }
    }

    @Test func emptyMessageAndBadSizes() throws {
        let key = try SecureBytes.random(count: 32)
        let box = try AEAD.seal(nil, using: key)
        #expect(box.ciphertext.count == AEAD.tagByteCount)
        #expect(try AEAD.open(box, using: key) == nil)
        #expect(throws: SecureCoreError.invalidKeyOrNonceSize) {
            try AEAD.seal(nil, using: SecureBytes.random(count: 16))
        }
        var shortNonce = box
        shortNonce.nonce.removeLast()
        #expect(throws: SecureCoreError.invalidKeyOrNonceSize) { try AEAD.open(shortNonce, using: key) }
        var noNonce = box
        noNonce.nonce = []
        #expect(throws: SecureCoreError.invalidKeyOrNonceSize) { try AEAD.open(noNonce, using: key) }
        var truncated = box
        truncated.ciphertext = Array(box.ciphertext.prefix(5))
        #expect(throws: SecureCoreError.authenticationFailed) { try AEAD.open(truncated, using: key) }
        truncated.ciphertext = []
        #expect(throws: SecureCoreError.authenticationFailed) { try AEAD.open(truncated, using: key) }
    }
}
