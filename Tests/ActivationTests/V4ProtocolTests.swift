import Foundation
import PowerAuthProtocol
import SecureCore
import TestSupport
import Testing

/// The V4 protocol layer above the primitives: the final shared secret, the key tree, the
/// authentication codes, the status blob, the temporary-key JWTs, the envelope and the
/// fingerprint. Where no upstream vector exists the test name says "spec only" and the test
/// asserts the byte layout of `powerauth-v4.md`, computed independently from the primitives.
@Suite("PowerAuth V4 protocol layer")
struct V4ProtocolTests {
    static func secure(_ bytes: [UInt8]) throws -> SecureBytes {
        try bytes.withUnsafeBytes { try SecureBytes(copying: $0) }
    }

    static func reveal(_ value: SecureBytes?) -> [UInt8] {
        guard let value else { return [] }
        return value.withUnsafeBytes { Array($0) }
    }

    static func be32(_ n: Int) -> [UInt8] {
        [UInt8(n >> 24 & 0xFF), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
    }

    static func random(_ count: Int) throws -> [UInt8] { try SecureRandom.bytes(count: count) }

    // MARK: - Shared secret

    @Test("spec only (no vector): the shared-secret combiner input X is u32be(1) ‖ LV(ss) ‖ LV(label) ‖ LV(\"4.0\")")
    func combinerLayout() throws {
        let ss = try Self.random(48)
        let x = try V4SharedSecret.combinerInput(kemSecrets: [try Self.secure(ss)], algorithm: .ecP384)
        let label = Array("shared-secret/EC_P384".utf8)
        let expected =
            Self.be32(1) + Self.be32(48) + ss + Self.be32(label.count) + label + Self.be32(3) + Array("4.0".utf8)
        #expect(Self.reveal(x) == expected)
    }

    @Test("spec only (no vector): SECRET = KMAC256(salt, X, 32, \"KDF\"), checked with an independent KMAC call")
    func combinerKMAC() throws {
        let ss = try Self.random(48)
        let salt = try Self.random(32)
        let secret = try V4SharedSecret.combine(kemSecrets: [try Self.secure(ss)], salt: salt, algorithm: .ecP384)
        let x = Self.reveal(try V4SharedSecret.combinerInput(kemSecrets: [try Self.secure(ss)], algorithm: .ecP384))
        let independent = try KMAC256.authenticate(
            x, key: try Self.secure(salt), customization: Array("KDF".utf8), count: 32)
        #expect(Self.reveal(secret) == independent)
        #expect(secret.count == 32)
        #expect(throws: ProtocolError.invalidLength(field: "salt", expected: 32, actual: 31)) {
            try V4SharedSecret.combine(
                kemSecrets: [try Self.secure(ss)], salt: Array(salt.prefix(31)), algorithm: .ecP384)
        }
    }

    @Test("shared secret: client and server agree; the JSON has the final field names; refusals")
    func sharedSecretExchange() throws {
        let (context, request) = try V4SharedSecret.makeRequest(algorithm: .ecP384)
        let json = String(decoding: try WireCoding.encode(request), as: UTF8.self)
        #expect(json.hasPrefix(#"{"algorithm":"EC_P384","encapsulationKeys":[""#))
        #expect(Data(base64Encoded: request.encapsulationKeys[0])?.count == 97)
        let (response, serverSecret) = try V4SharedSecret.respond(to: request, algorithm: .ecP384)
        #expect(Data(base64Encoded: response.salt)?.count == 32)
        #expect(Data(base64Encoded: response.encapsulatedKeys[0])?.count == 97)
        let clientSecret = try V4SharedSecret.finish(context, response: response)
        #expect(Self.reveal(clientSecret) == Self.reveal(serverSecret))

        // Another exchange gives another secret.
        let (_, other) = try V4SharedSecret.respond(to: request, algorithm: .ecP384)
        #expect(Self.reveal(other) != Self.reveal(serverSecret))

        #expect(throws: ProtocolError.self) { try V4SharedSecret.makeRequest(algorithm: .legacyP256) }
        let renamed = V4SharedSecretRequest(algorithm: "EC_P384_ML_L3", encapsulationKeys: request.encapsulationKeys)
        #expect(throws: ProtocolError.self) { try V4SharedSecret.respond(to: renamed, algorithm: .ecP384) }
        let twoKeys = V4SharedSecretRequest(
            algorithm: "EC_P384", encapsulationKeys: request.encapsulationKeys + request.encapsulationKeys)
        #expect(throws: ProtocolError.self) { try V4SharedSecret.respond(to: twoKeys, algorithm: .ecP384) }
        let offCurve = V4SharedSecretRequest(
            algorithm: "EC_P384", encapsulationKeys: [Base64Helper.encode([0x04] + [UInt8](repeating: 1, count: 96))])
        #expect(throws: ProtocolError.self) { try V4SharedSecret.respond(to: offCurve, algorithm: .ecP384) }
        let shortSalt = V4SharedSecretResponse(
            salt: Base64Helper.encode(try Self.random(31)), encapsulatedKeys: response.encapsulatedKeys)
        #expect(throws: ProtocolError.self) { try V4SharedSecret.finish(context, response: shortSalt) }
    }

    // MARK: - Key tree

    @Test("spec only (no vector): the key tree uses the exact labels of powerauth-v4.md §3")
    func keyTreeLabels() throws {
        let secret = try SecureBytes.random(count: 32)
        let keys = try V4ActivationKeys(activationSecret: secret)
        func kdf(_ key: SecureBytes, _ label: String) throws -> SecureBytes { try V4KDF.derive(key, label: label) }
        let auth = try kdf(secret, "auth")
        let vault = try kdf(secret, "vault")
        let util = try kdf(secret, "util")
        let expected: [(SecureBytes, SecureBytes)] = [
            (keys.possession, try kdf(auth, "auth/possession")),
            (keys.knowledge, try kdf(auth, "auth/knowledge")),
            (keys.biometry, try kdf(auth, "auth/biometry")),
            (keys.devicePrivateKEK, try kdf(vault, "vault/kek-device-private")),
            (keys.appVaultKnowledge, try kdf(vault, "vault/kdk-app-vault-knowledge")),
            (keys.appVault2FA, try kdf(vault, "vault/kdk-app-vault-2fa")),
            (keys.counterDataMAC, try kdf(util, "util/mac/ctr-data")),
            (keys.statusMAC, try kdf(util, "util/mac/status")),
            (keys.activationTemporaryKeyMAC, try kdf(util, "util/mac/get-act-temp-key")),
            (keys.personalizedDataMAC, try kdf(util, "util/mac/personalized-data")),
            (keys.sharedInfo2, try kdf(util, "util/key-e2ee-sh2")),
        ]
        for (got, want) in expected {
            #expect(got.count == 32)
            #expect(Self.reveal(got) == Self.reveal(want))
        }
        #expect(Set(expected.map { Self.reveal($0.0) }).count == expected.count)
        let appSecret = try Self.random(16)
        let appKey = try V4ActivationKeys.applicationTemporaryKeyMAC(applicationSecret: Base64Helper.encode(appSecret))
        #expect(Self.reveal(appKey) == Self.reveal(try kdf(try Self.secure(appSecret), "util/mac/get-app-temp-key")))
        #expect("\(keys)" == "V4ActivationKeys(redacted)")
        #expect(throws: ProtocolError.self) {
            try V4ActivationKeys(activationSecret: try SecureBytes.random(count: 16))
        }
    }

    // MARK: - Authentication codes

    /// component_i = KMAC(D_i, data), D_1 = KMAC(k1, ctr), D_j = KMAC(k_j, ctr ‖ D_{j-1}), with
    /// public-output KMAC calls on revealed intermediates (test only).
    static func independentComponents(_ keys: [[UInt8]], ctr: [UInt8], data: [UInt8]) throws -> [UInt8] {
        let custom = Array("PA4CODE".utf8)
        var d: [UInt8] = []
        var out: [UInt8] = []
        for key in keys {
            d = try KMAC256.authenticate(ctr + d, key: try secure(key), customization: custom, count: 32)
            out += try KMAC256.authenticate(data, key: try secure(d), customization: custom, count: 32)
        }
        return out
    }

    @Test("spec only (no vector): V4 codes chain KMAC(k_j, CTR_DATA ‖ D) with 32-byte components, online and offline")
    func authenticationCodeLayout() throws {
        let raw = try (0..<3).map { _ in try Self.random(32) }
        let counter = V4HashCounter.random()
        let data = Array("POST&L3BhL3NpZ25hdHVyZS92YWxpZGF0ZQ==&AAAA&e30=&c2VjcmV0".utf8)
        let keys = V4FactorKeys(
            possession: try Self.secure(raw[0]), knowledge: try Self.secure(raw[1]), biometry: try Self.secure(raw[2]))
        let sets: [(FactorSet, [Int])] = [
            (.possession, [0]), (.possessionKnowledge, [0, 1]), (.possessionBiometry, [0, 2]),
            (.possessionKnowledgeBiometry, [0, 1, 2]),
        ]
        for (set, indices) in sets {
            let expected = try Self.independentComponents(indices.map { raw[$0] }, ctr: counter.bytes, data: data)
            #expect(expected.count == 32 * indices.count)
            let online = try V4AuthenticationCode.compute(factorSet: set, keys: keys, counter: counter, data: data)
            #expect(online == Data(expected).base64EncodedString())
            let offline = try V4AuthenticationCode.compute(
                factorSet: set, keys: keys, counter: counter, data: data, format: .offline(digits: 8))
            let digits = stride(from: 0, to: expected.count, by: 32).map { start -> String in
                let tail = expected[(start + 28)..<(start + 32)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                return String(format: "%08u", (tail & 0x7FFF_FFFF) % 100_000_000)
            }
            #expect(offline == digits.joined(separator: "-"))
        }
        #expect(throws: ProtocolError.self) {
            try V4AuthenticationCode.compute(factorSet: .knowledge, keys: keys, counter: counter, data: data)
        }
        #expect(throws: ProtocolError.missingFactorKey(.knowledge)) {
            try V4AuthenticationCode.compute(
                factorSet: .possessionKnowledge, keys: V4FactorKeys(possession: keys.possession), counter: counter,
                data: data)
        }
        #expect(throws: ProtocolError.invalidComponentLength(9)) {
            try V4AuthenticationCode.compute(
                factorSet: .possession, keys: keys, counter: counter, data: data, format: .offline(digits: 9))
        }
    }

    @Test("OBSOLETE Auth_Code_Test_Vectors.json (Feb-2025 scheme): the final algorithm gives 0 of 100, as expected")
    func obsoleteAuthCodeVectorsDisagree() throws {
        var matched = 0
        try V4Vectors.run("Auth_Code_Test_Vectors.json", " (final algorithm, expected to differ)") { item in
            let keys = try ["key1", "key2", "key3"].map { try Self.secure(try V4Vectors.bytes(item, $0)) }
            let counter = try V4HashCounter(bytes: try V4Vectors.bytes(item, "ctrData"))
            let raw = try V4AuthenticationCode.components(
                keys: keys, counter: counter, data: try V4Vectors.bytes(item, "inputData"))
            if Data(raw).base64EncodedString() == (try V4Vectors.text(item, "authCodeOnline")) { matched += 1 }
        }
        #expect(matched == 0)
    }

    @Test("code validation: look-ahead window, next knowledge key, wrong and malformed codes")
    func authenticationCodeValidation() throws {
        let possession = try SecureBytes.random(count: 32)
        let knowledge = try SecureBytes.random(count: 32)
        let nextKnowledge = try SecureBytes.random(count: 32)
        let counter = V4HashCounter.random()
        let data = Array("data".utf8)
        let ahead = try counter.advanced(by: 3)
        let code = try V4AuthenticationCode.compute(
            factorSet: .possessionKnowledge, keys: V4FactorKeys(possession: possession, knowledge: nextKnowledge),
            counter: ahead, data: data)
        let match = try V4AuthenticationCode.validate(
            code, factorSet: .possessionKnowledge, format: .online, possession: possession,
            knowledgeCandidates: [knowledge, nextKnowledge], counter: counter, lookAhead: 20, data: data)
        #expect(match?.steps == 3 && match?.knowledgeIndex == 1 && match?.biometryIndex == nil)
        let outside = try V4AuthenticationCode.validate(
            code, factorSet: .possessionKnowledge, format: .online, possession: possession,
            knowledgeCandidates: [knowledge, nextKnowledge], counter: counter, lookAhead: 3, data: data)
        #expect(outside == nil)
        let wrongPIN = try V4AuthenticationCode.validate(
            code, factorSet: .possessionKnowledge, format: .online, possession: possession,
            knowledgeCandidates: [knowledge], counter: counter, lookAhead: 20, data: data)
        #expect(wrongPIN == nil)
        let malformed = try V4AuthenticationCode.validate(
            "not a code", factorSet: .possession, format: .online, possession: possession, counter: counter,
            lookAhead: 20, data: data)
        #expect(malformed == nil)
        #expect(throws: ProtocolError.invalidLookAhead(0)) {
            try V4AuthenticationCode.validate(
                code, factorSet: .possession, format: .online, possession: possession, counter: counter, lookAhead: 0,
                data: data)
        }
        #expect(throws: ProtocolError.missingFactorKey(.knowledge)) {
            try V4AuthenticationCode.validate(
                code, factorSet: .possessionKnowledge, format: .online, possession: possession, counter: counter,
                lookAhead: 5, data: data)
        }
    }

    // MARK: - Status blob

    @Test("spec only (no vector): the 48-byte status data layout, its KMAC, the counter hash and sync distance")
    func statusBlob() throws {
        let statusKey = try SecureBytes.random(count: 32)
        let ctrKey = try SecureBytes.random(count: 32)
        let client = V4HashCounter.random()
        let server = try client.advanced(by: 2)
        let hash = try V4StatusBlob.counterDataHash(server, counterDataMACKey: ctrKey)
        #expect(
            hash
                == (try KMAC256.authenticate(
                    server.bytes, key: ctrKey, customization: Array("PA4MAC-CTR".utf8), count: 32)))
        let status = try V4StatusBlob(
            state: .active, flags: V4StatusBlob.flagBiometryEnabled, counterByte: 7, failedAttempts: 1,
            maxFailedAttempts: 5, counterLookAhead: 20, counterDataHash: hash)
        let blob = try status.seal(statusMACKey: statusKey)
        #expect(blob.count == 80)
        #expect(Array(blob[0..<16]) == [0xDE, 0xC0, 0xDE, 0xD4, 3, 4, 4, 0x08, 0, 0, 0, 0, 7, 1, 5, 20])
        #expect(Array(blob[16..<48]) == hash)
        let mac = try KMAC256.authenticate(
            Array(blob[0..<48]), key: statusKey, customization: Array("PA4MAC-STATUS".utf8), count: 32)
        #expect(Array(blob[48...]) == mac)
        let opened = try V4StatusBlob(opening: blob, statusMACKey: statusKey)
        #expect(opened == status)
        #expect(opened.isBiometryEnabled && !opened.isConfirmationPending && opened.remainingAttempts == 4)
        #expect(try opened.serverDistance(from: client, counterDataMACKey: ctrKey) == 2)
        #expect(try opened.serverDistance(from: try server.next(), counterDataMACKey: ctrKey) == nil)

        var tampered = blob
        tampered[13] ^= 1
        #expect(throws: ProtocolError.self) { try V4StatusBlob(opening: tampered, statusMACKey: statusKey) }
        #expect(throws: ProtocolError.self) {
            try V4StatusBlob(opening: blob, statusMACKey: try SecureBytes.random(count: 32))
        }
        #expect(throws: ProtocolError.self) {
            try V4StatusBlob(opening: Array(blob.prefix(79)), statusMACKey: statusKey)
        }
    }

    // MARK: - Temporary keys

    @Test("V4 keystore: HS384 request and ES384 JWS-JSON response round trip with echoed claims")
    func temporaryKeyRoundTrip() throws {
        let appSecret = Base64Helper.encode(try Self.random(16))
        let macKey = try V4ActivationKeys.applicationTemporaryKeyMAC(applicationSecret: appSecret)
        let (context, sharedRequest) = try V4SharedSecret.makeRequest(algorithm: .ecP384)
        let claims = V4TemporaryKeyRequestClaims(
            applicationKey: "YXBwbGljYXRpb25LZXk=", activationId: nil, challenge: try V4TemporaryKeyJWT.makeChallenge(),
            sharedSecretRequest: sharedRequest, iat: 1_800_000_000, exp: 1_800_000_300)
        let token = try V4TemporaryKeyJWT.signRequest(claims, key: macKey)
        #expect(token.hasPrefix("eyJhbGciOiJIUzM4NCJ9."))
        #expect(try V4TemporaryKeyJWT.requestClaims(token) == claims)
        #expect(try V4TemporaryKeyJWT.verifyRequest(token, key: macKey) == claims)
        #expect(throws: JWTError.signatureInvalid) {
            try V4TemporaryKeyJWT.verifyRequest(token, key: try SecureBytes.random(count: 32))
        }

        let master = try ECP384KeyPair.generate()
        let (shared, serverSecret) = try V4SharedSecret.respond(to: claims.sharedSecretRequest, algorithm: .ecP384)
        let now = Date()
        let nowMs = Int64(now.timeIntervalSince1970 * 1000)
        let responseClaims = V4TemporaryKeyResponseClaims(
            temporaryKeyId: UUID().uuidString, request: claims, sharedSecretResponse: shared,
            issuedAtMilliseconds: nowMs, expiresAtMilliseconds: nowMs + 300_000)
        let json = try V4TemporaryKeyJWT.signResponse(responseClaims, keyPair: master)
        let verified = try V4TemporaryKeyJWT.verifyResponse(
            json, publicKey: master.publicKey, request: claims, now: now)
        #expect(verified == responseClaims)
        let clientSecret = try V4SharedSecret.finish(context, response: verified.sharedSecretResponse)
        #expect(Self.reveal(clientSecret) == Self.reveal(serverSecret))
        #expect(throws: JWTError.expired) {
            try V4TemporaryKeyJWT.verifyResponse(
                json, publicKey: master.publicKey, request: claims, now: now.addingTimeInterval(301))
        }
        #expect(throws: JWTError.signatureInvalid) {
            try V4TemporaryKeyJWT.verifyResponse(
                json, publicKey: try ECP384KeyPair.generate().publicKey, request: claims, now: now)
        }
        let otherChallenge = V4TemporaryKeyRequestClaims(
            applicationKey: claims.applicationKey, activationId: nil, challenge: "b3RoZXI=",
            sharedSecretRequest: sharedRequest, iat: claims.iat, exp: claims.exp)
        #expect(throws: JWTError.claimMismatch(claim: "challenge")) {
            try V4TemporaryKeyJWT.verifyResponse(json, publicKey: master.publicKey, request: otherChallenge, now: now)
        }
    }

    @Test(
        "OBSOLETE payloads in TemporaryKeyTest: HS256 request MACs and the ES384-only response verify; claims refused")
    func temporaryKeyVectors() throws {
        var macs = 0
        var responses = 0
        try V4Vectors.run("TemporaryKeyTest_JWS_Vectors.json", " (V4TemporaryKeyJWT)") { item in
            if let token = item["expectedJwtRequest"] {
                let key = try Self.secure(try V4Vectors.bytes(item, "signingKey"))
                let payload = try V4TemporaryKeyJWT.verifyRequestMAC(token, key: key)
                #expect(!payload.isEmpty)
                #expect(throws: JWTError.malformed(reason: "payload claims")) {
                    try V4TemporaryKeyJWT.verifyRequest(token, key: key)
                }
                macs += 1
            }
            if let response = item["responsePayload"], item["publicKeyMlDsa65"] == nil {
                let payload = try V4TemporaryKeyJWT.verifyResponseSignature(
                    response, publicKey: try V4Vectors.bytes(item, "publicKeyEs384"))
                #expect(String(decoding: payload, as: UTF8.self).contains("\"sub\""))
                responses += 1
            } else if let response = item["responsePayload"] {
                // The hybrid response carries an ML-DSA signature too: refused for EC_P384.
                #expect(throws: JWTError.self) {
                    try V4TemporaryKeyJWT.verifyResponseSignature(
                        response, publicKey: try V4Vectors.bytes(item, "publicKeyEs384"))
                }
            }
        }
        #expect(macs == 2)
        #expect(responses == 1)
    }

    // MARK: - Envelope

    @Test("V4 envelope: request and response round trip in both scopes; tampering, another key, header")
    func envelope() throws {
        let secret = try SecureBytes.random(count: 32)
        let appSecret = Base64Helper.encode(try Self.random(16))
        let sh2Key = try SecureBytes.random(count: 32)
        for scope in [V4EncryptionScope.application, .activation(activationId: "act-1", sharedInfo2Key: sh2Key)] {
            let context = try V4EncryptionContext(
                sharedSecret: secret, temporaryKeyId: "tk-1", applicationKey: "YXBw", applicationSecret: appSecret,
                sharedInfo1: V4SharedInfo1.tokenCreate.rawValue, scope: scope)
            let body = try Self.secure(Array(#"{"hello":"world"}"#.utf8))
            let (request, nonce) = try context.encryptRequest(body, timestampMilliseconds: 1_800_000_000_000)
            #expect(Data(base64Encoded: request.nonce)?.count == 24)
            #expect(Self.reveal(try context.decryptRequest(request)) == Self.reveal(body))
            let reply = try Self.secure(Array("{}".utf8))
            let response = try context.encryptResponse(reply, to: request, timestampMilliseconds: 1_800_000_000_100)
            #expect(Self.reveal(try context.decryptResponse(response, nonce: nonce)) == Array("{}".utf8))

            let moved = V4EncryptedRequest(
                temporaryKeyId: request.temporaryKeyId, encryptedData: request.encryptedData, nonce: request.nonce,
                timestamp: request.timestamp + 1)
            #expect(throws: ProtocolError.self) { try context.decryptRequest(moved) }
            let otherKey = V4EncryptedRequest(
                temporaryKeyId: "tk-2", encryptedData: request.encryptedData, nonce: request.nonce,
                timestamp: request.timestamp)
            #expect(throws: ProtocolError.self) { try context.decryptRequest(otherKey) }
            let late = V4EncryptedResponse(encryptedData: response.encryptedData, timestamp: response.timestamp + 1)
            #expect(throws: ProtocolError.self) { try context.decryptResponse(late, nonce: nonce) }
        }
        let header = V4EncryptionHeader(applicationKey: "YXBw", activationId: "act-1")
        #expect(header.value == #"PowerAuth version="4.0", application_key="YXBw", activation_id="act-1""#)
        #expect(try V4EncryptionHeader.parse(header.value) == header)
        #expect(throws: ProtocolError.unsupportedProtocolVersion("3.3")) {
            try V4EncryptionHeader.parse(#"PowerAuth version="3.3", application_key="YXBw""#)
        }
        #expect(V4EncryptionContext.isFresh(timestamp: 1_000_000, now: 1_000_000 + 300_000))
        #expect(!V4EncryptionContext.isFresh(timestamp: 1_000_000, now: 1_000_000 + 300_001))
    }

    // MARK: - Fingerprint

    /// One case of `Fingerprint_V4_Upstream_Java.json` (computed by upstream's own code).
    struct FingerprintCase: Decodable {
        struct Expected: Decodable {
            let fingerprint: String?
            let error: String?
        }
        let algorithm: String
        let activationId: String
        let deviceEcdsa: String
        let serverEcdsa: String
        let deviceMldsa: String?
        let serverMldsa: String?
        let expected: Expected
    }

    struct FingerprintFile: Decodable {
        let count: Int
        let cases: [FingerprintCase]
    }

    @Test("upstream's fingerprint vectors: affine X of each P-384 key, ML-DSA keys as SPKI, every suite")
    func fingerprintVectors() throws {
        let url = V4Vectors.directory.appendingPathComponent("Fingerprint_V4_Upstream_Java.json")
        let file = try JSONDecoder().decode(FingerprintFile.self, from: Data(contentsOf: url))
        var ran: [String: Int] = [:]
        for item in file.cases {
            let algorithm = try #require(ProtocolAlgorithm(rawValue: item.algorithm))
            let bytes = { (text: String?) -> [UInt8]? in text.flatMap { Data(base64Encoded: $0) }.map { [UInt8]($0) } }
            let value = try V4Fingerprint.compute(
                algorithm: algorithm, devicePublicKey: try #require(bytes(item.deviceEcdsa)),
                activationId: item.activationId, serverPublicKey: try #require(bytes(item.serverEcdsa)),
                devicePostQuantumKey: bytes(item.deviceMldsa), serverPostQuantumKey: bytes(item.serverMldsa))
            #expect(item.expected.error == nil)
            #expect(value == item.expected.fingerprint, "\(item.algorithm) \(item.activationId)")
            ran[item.algorithm, default: 0] += 1
        }
        let total = ran.values.reduce(0, +)
        print(
            "Fingerprint_V4_Upstream_Java.json: \(total) of \(file.cases.count) cases ran ("
                + ran.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")")
        #expect(total == file.count && total == file.cases.count && total > 0)
        // The short-X case (a key whose X starts with a zero byte) is among them.
        #expect(
            file.cases.contains { Data(base64Encoded: $0.deviceEcdsa).map { $0[1] == 0 } ?? false })
    }

    @Test("a key that is not a 97-byte P-384 point is refused")
    func fingerprintRefusesBadKeys() throws {
        let server = try ECP384KeyPair.generate().publicKey
        let device = try ECP384KeyPair.generate().publicKey
        #expect(throws: ProtocolError.self) {
            try V4Fingerprint.compute(
                algorithm: .ecP384, devicePublicKey: Array(device.prefix(49)), activationId: "a",
                serverPublicKey: server)
        }
        var offCurve = device
        offCurve[96] ^= 1
        #expect(throws: ProtocolError.self) {
            try V4Fingerprint.compute(
                algorithm: .ecP384, devicePublicKey: offCurve, activationId: "a", serverPublicKey: server)
        }
    }
}

/// Base64 for tests (the module's own encoder is package-internal).
enum Base64Helper {
    static func encode(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }
}
