import Foundation
import PowerAuthProtocol
import SecureCore
import TestSupport
import Testing

/// The V4 vector files of `Tests/Vectors/powerauth/v4/` (see its README.md), read as free-form
/// JSON: each file holds one array of cases whose values are all strings.
enum V4Vectors {
    struct Missing: Error { let key: String }

    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Vectors/powerauth/v4")

    /// The cases of `name`: the file's one array of objects (nested `input`/`output` objects flattened).
    static func cases(_ name: String) throws -> [[String: String]] {
        let data = try Data(contentsOf: directory.appendingPathComponent(name))
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let list = object.values.compactMap({ $0 as? [[String: Any]] }).first
        else { throw Missing(key: name) }
        return list.map { item in
            var flat: [String: String] = [:]
            for (key, value) in item {
                if let nested = value as? [String: String] {
                    flat.merge(nested) { first, _ in first }
                } else if let text = value as? String {
                    flat[key] = text
                }
            }
            return flat
        }
    }

    /// Runs `body` on every case of `file`, prints the count, requires all to run.
    static func run(_ file: String, _ note: String = "", _ body: ([String: String]) throws -> Void) throws {
        let list = try cases(file)
        var ran = 0
        for item in list {
            try body(item)
            ran += 1
        }
        print("\(file)\(note): \(ran) of \(list.count) cases ran")
        #expect(ran == list.count)
        #expect(ran > 0)
    }

    static func text(_ item: [String: String], _ key: String) throws -> String {
        guard let value = item[key] else { throw Missing(key: key) }
        return value
    }

    static func bytes(_ item: [String: String], _ key: String) throws -> [UInt8] {
        guard let data = Data(base64Encoded: try text(item, key)) else { throw Missing(key: key) }
        return [UInt8](data)
    }

    static func hex(_ item: [String: String], _ key: String) throws -> [UInt8] {
        let digits = Array(try text(item, key).utf8)
        return stride(from: 0, to: digits.count, by: 2).map { index in
            UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) ?? 0
        }
    }

    /// Vector key material, copied into secure memory (the test's own copy is public test data).
    static func secret(_ item: [String: String], _ key: String) throws -> SecureBytes {
        try bytes(item, key).withUnsafeBytes { try SecureBytes(copying: $0) }
    }

    static func reveal(_ key: SecureBytes) -> [UInt8] { key.withUnsafeBytes { Array($0) } }
}

@Suite("PowerAuth V4 vectors")
struct V4VectorTests {
    @Test("SHA3-256 and SHA3-384: every NIST-style case")
    func sha3() throws {
        try V4Vectors.run("SHA3_256_Test_Vectors.json") { item in
            let digest = try SHA3.hash256(try V4Vectors.hex(item, "msg"))
            let want = try V4Vectors.hex(item, "digest")
            #expect(digest == want)
        }
        try V4Vectors.run("SHA3_384_Test_Vectors.json") { item in
            let digest = try SHA3.hash384(try V4Vectors.hex(item, "msg"))
            let want = try V4Vectors.hex(item, "digest")
            #expect(digest == want)
        }
    }

    @Test("Hash-based counter: CTR_DATA moves by SHA3-256, 10 chains of 20 steps")
    func hashCounter() throws {
        var steps = 0
        try V4Vectors.run("Hash_Based_Counter_Test_Vectors.json", " (chains)") { item in
            var counter = try V4HashCounter(base64: try V4Vectors.text(item, "ctrData[0]"))
            for step in 1...20 {
                counter = try counter.next()
                let want = try V4Vectors.text(item, "ctrData[\(step)]")
                #expect(counter.base64 == want)
                steps += 1
            }
            let jumped = try V4HashCounter(base64: try V4Vectors.text(item, "ctrData[0]")).advanced(by: 20)
            #expect(jumped == counter)
        }
        print("Hash_Based_Counter_Test_Vectors.json: \(steps) steps checked")
        #expect(steps == 200)
    }

    @Test("KDF: KMAC256 with \"PA4KDF:\" + label, keys of 16 ... 64 bytes")
    func kdf() throws {
        try V4Vectors.run("v4-kdf.json") { item in
            let key = try V4Vectors.secret(item, "key")
            let count = Int(try V4Vectors.text(item, "outSize")) ?? 0
            let derived = try V4KDF.derive(
                key, label: try V4Vectors.text(item, "label"), custom: try V4Vectors.bytes(item, "custom"), count: count
            )
            #expect(V4Vectors.reveal(derived) == (try V4Vectors.bytes(item, "derivedKey")))
        }
        // A protocol label gives the same key as its text.
        let key = try SecureBytes.random(count: 32)
        #expect(
            V4Vectors.reveal(try V4KDF.derive(key, label: .statusMAC))
                == V4Vectors.reveal(try V4KDF.derive(key, label: "util/mac/status")))
        #expect(throws: ProtocolError.invalidLength(field: "label", expected: 128, actual: 0)) {
            try V4KDF.derive(key, label: "")
        }
        #expect(throws: ProtocolError.invalidLength(field: "count", expected: 32, actual: 65)) {
            try V4KDF.derive(key, label: "auth", count: 65)
        }
    }

    @Test("Password KDF: KMAC256 \"PA4PBKDF\" of the UTF-8 password")
    func passwordKDF() throws {
        try V4Vectors.run("pbkdf-v4.json") { item in
            let derived = try V4KDF.derivePassword(
                try password(try V4Vectors.text(item, "password")), salt: try V4Vectors.bytes(item, "salt"),
                count: Int(try V4Vectors.text(item, "outSize")) ?? 0)
            #expect(V4Vectors.reveal(derived) == (try V4Vectors.bytes(item, "derivedKey")))
        }
        let salt = [UInt8](repeating: 7, count: 32)
        #expect(throws: ProtocolError.invalidLength(field: "password", expected: 4, actual: 3)) {
            try V4KDF.derivePassword(try pin("123"), salt: salt)
        }
        #expect(throws: ProtocolError.invalidLength(field: "salt", expected: 32, actual: 31)) {
            try V4KDF.derivePassword(try pin("1234"), salt: Array(salt.dropLast()))
        }
        #expect(throws: ProtocolError.emptyPIN) { try V4KDF.derivePassword(try pin(""), salt: salt) }
    }

    @Test("Token digest: KMAC256 \"PA4DIGEST\" over nonce & timestamp & 4.0")
    func tokenDigest() throws {
        try V4Vectors.run("Token_Digest_Test_Vectors.json") { item in
            let secret = try V4Vectors.secret(item, "tokenSecret")
            let nonce = try V4Vectors.bytes(item, "nonce")
            let timestamp = UInt64(String(decoding: try V4Vectors.bytes(item, "timestamp"), as: UTF8.self)) ?? 0
            let want = try V4Vectors.bytes(item, "tokenDigest")
            #expect(
                try V4TokenDigest.compute(tokenSecret: secret, nonce: nonce, timestampMilliseconds: timestamp) == want)
            #expect(try V4TokenDigest.verify(want, tokenSecret: secret, nonce: nonce, timestampMilliseconds: timestamp))
            #expect(
                !(try V4TokenDigest.verify(
                    want, tokenSecret: secret, nonce: nonce, timestampMilliseconds: timestamp + 1)))
        }
    }

    /// One E2EE case: the client's request and the server's response are reproduced byte for byte
    /// and open on the other side; a changed timestamp does not open.
    private func e2eeCase(_ item: [String: String], activation: Bool) throws {
        let scope: V4EncryptionScope =
            activation
            ? .activation(
                activationId: try V4Vectors.text(item, "activationId"),
                sharedInfo2Key: try V4Vectors.secret(item, "sharedInfo2Key"))
            : .application
        let context = try V4EncryptionContext(
            sharedSecret: try V4Vectors.secret(item, "envelopeKey"),
            temporaryKeyId: try V4Vectors.text(item, "temporaryKeyId"),
            applicationKey: try V4Vectors.text(item, "applicationKey"),
            applicationSecret: try V4Vectors.text(item, "applicationSecret"),
            sharedInfo1: (activation ? V4SharedInfo1.genericActivation : .genericApplication).rawValue, scope: scope)
        let nonce = try V4Vectors.bytes(item, "nonce")
        let requestTime = UInt64(try V4Vectors.text(item, "timestampRequest")) ?? 0
        let responseTime = UInt64(try V4Vectors.text(item, "timestampResponse")) ?? 0
        let request = try secret(try V4Vectors.text(item, "requestData"))
        let response = try secret(try V4Vectors.text(item, "responseData"))
        let sealedRequest = try context.sealRequest(request, nonce: nonce, timestampMilliseconds: requestTime)
        #expect(sealedRequest == (try V4Vectors.bytes(item, "encryptedDataRequest")))
        let opened = try context.openRequest(sealedRequest, nonce: nonce, timestampMilliseconds: requestTime)
        #expect(opened.map(text) == (try V4Vectors.text(item, "requestData")))
        let sealedResponse = try context.sealResponse(response, nonce: nonce, timestampMilliseconds: responseTime)
        #expect(sealedResponse == (try V4Vectors.bytes(item, "encryptedDataResponse")))
        let answer = try context.openResponse(sealedResponse, nonce: nonce, timestampMilliseconds: responseTime)
        #expect(answer.map(text) == (try V4Vectors.text(item, "responseData")))
        #expect(throws: ProtocolError.core(.authenticationFailed)) {
            try context.openResponse(sealedResponse, nonce: nonce, timestampMilliseconds: responseTime + 1)
        }
        // Each direction has its own nonce half: a request is no response.
        #expect(throws: ProtocolError.self) {
            try context.openResponse(sealedRequest, nonce: nonce, timestampMilliseconds: requestTime)
        }
    }

    @Test("E2EE application scope (V4 AEAD, SH2 = SHA3-256 of the app secret)")
    func e2eeApplication() throws {
        try V4Vectors.run("E2ee_Application_Scope_Test_Vectors_40.json", " (request + response)") { item in
            try e2eeCase(item, activation: false)
        }
    }

    @Test("E2EE activation scope (V4 AEAD, SH2 = KMAC256 \"PA4SH2\")")
    func e2eeActivation() throws {
        try V4Vectors.run("E2ee_Activation_Scope_Test_Vectors_40.json", " (request + response)") { item in
            try e2eeCase(item, activation: true)
        }
    }

    @Test("P-384 ECDH: the raw step of ECDHE_P384 (its KDF step is the OBSOLETE May-2025 derivation)")
    func ecdhP384ObsoleteDerivation() throws {
        try V4Vectors.run("ECDHE_P384_Test_Vectors.json", " (raw ECDH, obsolete KDF step)") { item in
            let pair = try ECP384KeyPair(privateKey: try V4Vectors.secret(item, "ecClientPrivateKey"))
            let x = try pair.sharedSecret(with: try V4Vectors.bytes(item, "ecServerPublicKey"))
            #expect(x.count == 48)
            let legacy = try V4KDF.derive(x, label: "shared-secret/ec-p384")
            #expect(V4Vectors.reveal(legacy) == (try V4Vectors.bytes(item, "sharedSecret")))
        }
    }

    @Test("ECDSA-SHA384: upstream's ES384 keystore responses verify (their payloads are an obsolete layout)")
    func es384() throws {
        var verified = 0
        try V4Vectors.run("TemporaryKeyTest_JWS_Vectors.json", " (cases)") { item in
            guard let response = item["responsePayload"] else { return }
            let publicKey = try V4Vectors.bytes(item, "publicKeyEs384")
            let object = try JSONSerialization.jsonObject(with: Data(response.utf8)) as? [String: Any]
            let payload = object?["payload"] as? String ?? ""
            let signatures = object?["signatures"] as? [[String: String]] ?? []
            for entry in signatures where entry["protected"] == "eyJhbGciOiJFUzM4NCJ9" {
                let signature = try #require(base64URL(entry["signature"] ?? ""))
                let input = Array("\(entry["protected"] ?? "").\(payload)".utf8)
                #expect(try ECP384KeyPair.verify(signature: signature, message: input, publicKey: publicKey))
                #expect(
                    !(try ECP384KeyPair.verify(signature: signature, message: input + [0x2E], publicKey: publicKey)))
                verified += 1
            }
        }
        print("TemporaryKeyTest_JWS_Vectors.json: \(verified) ES384 signatures verified")
        #expect(verified == 2)
    }

    @Test("P-384 keys: sign, verify, ECDH agreement, refusals")
    func p384Keys() throws {
        let alice = try ECP384KeyPair.generate()
        let bob = try ECP384KeyPair.generate()
        #expect(alice.publicKey.count == 97 && alice.publicKey[0] == 4)
        #expect(try ECP384KeyPair(privateKey: alice.privateKey).publicKey == alice.publicKey)
        #expect(
            V4Vectors.reveal(try alice.sharedSecret(with: bob.publicKey))
                == V4Vectors.reveal(try bob.sharedSecret(with: alice.publicKey)))
        let message = Array("activation data".utf8)
        let signature = try alice.sign(message)
        #expect(signature.count == 96)
        #expect(try ECP384KeyPair.verify(signature: signature, message: message, publicKey: alice.publicKey))
        #expect(!(try ECP384KeyPair.verify(signature: signature, message: message, publicKey: bob.publicKey)))
        #expect(
            !(try ECP384KeyPair.verify(
                signature: Array(signature.dropLast()), message: message, publicKey: alice.publicKey)))
        var offCurve = bob.publicKey
        offCurve[96] ^= 1
        #expect(throws: ProtocolError.invalidKey(field: "publicKey")) { try alice.sharedSecret(with: offCurve) }
        #expect(throws: ProtocolError.invalidKey(field: "publicKey")) {
            try ECP384KeyPair.validate(publicKey: offCurve)
        }
        let zero = try SecureBytes(count: 48)
        #expect(throws: ProtocolError.invalidKey(field: "privateKey")) { try ECP384KeyPair(privateKey: zero) }
        #expect(!alice.description.contains(Base64Probe.of(alice.privateKey)))
    }

    @Test("DHKEM(P-384) with the HPKE export: both sides agree; not the bare ECDH value (spec only, no vector)")
    func dhkem() throws {
        let recipient = try ECP384KeyPair.generate()
        let (encapsulation, secret) = try DHKEMP384.encapsulate(to: recipient.publicKey)
        #expect(encapsulation.count == 97 && secret.count == 48)
        let received = try DHKEMP384.decapsulate(encapsulation, keyPair: recipient)
        #expect(V4Vectors.reveal(received) == V4Vectors.reveal(secret))
        #expect(V4Vectors.reveal(try recipient.sharedSecret(with: encapsulation)) != V4Vectors.reveal(secret))
        let other = try DHKEMP384.decapsulate(encapsulation, keyPair: try ECP384KeyPair.generate())
        #expect(V4Vectors.reveal(other) != V4Vectors.reveal(secret))
        let again = try DHKEMP384.encapsulate(to: recipient.publicKey)
        #expect(again.encapsulation != encapsulation)
        #expect(throws: ProtocolError.invalidKey(field: "encapsulatedKey")) {
            try DHKEMP384.decapsulate(Array(encapsulation.prefix(49)), keyPair: recipient)
        }
    }

    @Test("V4 AEAD: key context and associated data bind; short or altered data is refused")
    func aead() throws {
        let key = try SecureBytes.random(count: 32)
        let nonce = [UInt8](repeating: 3, count: 12)
        let plain = try secret("{\"activationStatus\":\"…\"}")
        let sealed = try V4AEAD.seal(plain, key: key, keyContext: [1], nonce: nonce, associatedData: [2])
        #expect(sealed.count == plain.count + 44 && V4AEAD.nonce(of: sealed) == nonce)
        let opened = try V4AEAD.open(sealed, key: key, keyContext: [1], associatedData: [2])
        #expect(opened.map(text) == text(plain))
        #expect(throws: ProtocolError.core(.authenticationFailed)) {
            try V4AEAD.open(sealed, key: key, keyContext: [9], associatedData: [2])
        }
        #expect(throws: ProtocolError.core(.authenticationFailed)) {
            try V4AEAD.open(sealed, key: key, keyContext: [1], associatedData: [])
        }
        #expect(throws: ProtocolError.invalidLength(field: "encryptedData", expected: 44, actual: 43)) {
            try V4AEAD.open(Array(sealed.prefix(43)), key: key, keyContext: [1], associatedData: [2])
        }
        let empty = try V4AEAD.seal(nil, key: key, keyContext: [], nonce: nonce, associatedData: [])
        #expect(empty.count == 44)
        #expect(try V4AEAD.open(empty, key: key, keyContext: [], associatedData: []) == nil)
        #expect(throws: ProtocolError.invalidLength(field: "nonce", expected: 12, actual: 11)) {
            try V4AEAD.seal(plain, key: key, keyContext: [], nonce: Array(nonce.dropLast()), associatedData: [])
        }
        let nonce24 = try V4EncryptionContext.randomNonce()
        #expect(nonce24.count == 24 && nonce24[0..<12] != nonce24[12..<24])
    }
}

/// The Base64 of a secret's bytes, only to prove a description does not contain it.
enum Base64Probe {
    static func of(_ secret: SecureBytes) -> String { Data(V4Vectors.reveal(secret)).base64EncodedString() }
}

/// Base64url without padding (JWS) to bytes.
private func base64URL(_ text: String) -> [UInt8]? {
    var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while standard.count % 4 != 0 { standard += "=" }
    return Data(base64Encoded: standard).map { [UInt8]($0) }
}
