import PowerAuthProtocol
import SecureCore
import Testing

@Suite("Protocol behaviour")
struct ProtocolTests {
    let crypto: ActivationCrypto

    init() throws { crypto = try ActivationCrypto() }

    @Test("V4 algorithm names are recognised and refused with what is missing")
    func algorithms() throws {
        #expect(try ActivationCrypto(algorithmName: "LEGACY_P256").algorithm == .legacyP256)
        for name in ["EC_P384", "EC_P384_ML_L3", "EC_P384_ML_L5"] {
            do {
                _ = try ActivationCrypto(algorithmName: name)
                Issue.record("\(name) must not be accepted")
            } catch {
                guard case .unsupportedAlgorithm(let reported, let missing) = error else {
                    Issue.record("unexpected \(error)")
                    continue
                }
                #expect(reported == name)
                #expect(missing.contains("protocol V4"))
                if name.contains("_ML_") { #expect(missing.contains("ML-KEM")) }
            }
        }
        #expect(throws: ProtocolError.unknownAlgorithm("legacy_p256")) {
            try ActivationCrypto(algorithmName: "legacy_p256")
        }
        #expect(throws: ProtocolError.unknownAlgorithm("")) { try ProtocolAlgorithm(name: "") }
    }

    @Test("key pairs agree on the master secret; invalid keys are typed errors")
    func keyAgreement() throws {
        let device = try crypto.generateKeyPair()
        let server = try crypto.generateKeyPair()
        #expect(device.publicKey.count == 65 && device.publicKey[0] == 4)
        let a = try crypto.masterSecret(privateKey: device.privateKey, peerPublicKey: server.publicKey)
        let b = try crypto.masterSecret(privateKey: server.privateKey, peerPublicKey: device.publicKey)
        #expect(try a.isEqual(to: b))
        var offCurve = server.publicKey
        offCurve[64] ^= 1
        #expect(throws: ProtocolError.invalidKey(field: "peerPublicKey")) {
            try crypto.masterSecret(privateKey: device.privateKey, peerPublicKey: offCurve)
        }
        #expect(throws: ProtocolError.invalidKey(field: "privateKey")) {
            try crypto.masterSecret(privateKey: try SecureBytes(count: 32), peerPublicKey: server.publicKey)
        }
        #expect(throws: ProtocolError.invalidKey(field: "devicePublicKey")) {
            try crypto.fingerprint(devicePublicKey: [4, 1, 2], serverPublicKey: server.publicKey, activationId: "a")
        }
        #expect(String(describing: device).contains("private: redacted"))
    }

    @Test("compressed public keys give the same secret and fingerprint as uncompressed ones")
    func compressedKeys() throws {
        let device = try crypto.generateKeyPair()
        let server = try crypto.generateKeyPair()
        let compressed = [UInt8(2 + (server.publicKey[64] & 1))] + server.publicKey[1..<33]
        let a = try crypto.masterSecret(privateKey: device.privateKey, peerPublicKey: server.publicKey)
        let b = try crypto.masterSecret(privateKey: device.privateKey, peerPublicKey: compressed)
        #expect(try a.isEqual(to: b))
        let id = "6ae8cd16-67a7-4840-8d37-33d9aab6ea51"
        #expect(
            try crypto.fingerprint(devicePublicKey: device.publicKey, serverPublicKey: compressed, activationId: id)
                == crypto.fingerprint(
                    devicePublicKey: device.publicKey, serverPublicKey: server.publicKey, activationId: id))
        // The other parity is -Q, and x(d·(-Q)) = x(d·Q): the x-only shared
        // secret cannot tell a point from its negation, so both agree.
        let negated = [compressed[0] ^ 1] + compressed[1...]
        #expect(try crypto.masterSecret(privateKey: device.privateKey, peerPublicKey: negated).isEqual(to: a))
        // A compressed key whose x is not on the curve is refused.
        var offCurve = compressed
        var refused = false
        for delta: UInt8 in 1...40 where !refused {
            offCurve[32] = compressed[32] &+ delta
            do { try P256Check.validate(crypto, offCurve) } catch {
                refused = error == .invalidKey(field: "peerPublicKey")
            }
        }
        #expect(refused)
    }

    @Test("ECDSA signatures verify and a changed message does not")
    func signatures() throws {
        let pair = try crypto.generateKeyPair()
        let message = Array("activation data".utf8)
        let signature = try crypto.sign(message, privateKey: pair.privateKey)
        #expect(try crypto.verifySignature(signature, message: message, publicKey: pair.publicKey))
        #expect(try !crypto.verifySignature(signature, message: message + [0], publicKey: pair.publicKey))
        #expect(try !crypto.verifySignature([0x30, 0x02, 0x01], message: message, publicKey: pair.publicKey))
        #expect(try !crypto.verifySignature([], message: message, publicKey: pair.publicKey))
    }

    @Test("the counter moves by folded SHA-256 and verification looks ahead")
    func counterLookAhead() throws {
        let keys = try crypto.factorKeys(masterSecret: try SecureBytes.random(count: 16))
        let data = Array("GET&L2FwaS9wYXltZW50&AAAAAAAAAAAAAAAAAAAAAA==&&offline".utf8)
        let server = HashCounter.random()
        let client = try server.advanced(by: 5)
        #expect(try client == server.next().next().next().next().next())
        let code = try crypto.authenticationCode(
            data: data, factors: .possessionKnowledgeBiometry, keys: keys.signingKeys, counter: client, format: .base64)
        let match = try crypto.verifyAuthenticationCode(
            code, data: data, factors: .possessionKnowledgeBiometry, keys: keys.signingKeys, counter: server,
            format: .base64, lookAhead: 20)
        #expect(match?.distance == 5)
        #expect(try match?.nextCounter == client.next())
        #expect(
            try crypto.verifyAuthenticationCode(
                code, data: data, factors: .possessionKnowledgeBiometry, keys: keys.signingKeys, counter: server,
                format: .base64, lookAhead: 5) == nil)
        #expect(throws: ProtocolError.invalidLookAhead(0)) {
            try crypto.verifyAuthenticationCode(
                code, data: data, factors: .possession, keys: keys.signingKeys, counter: server, format: .base64,
                lookAhead: 0)
        }
        let hash = try crypto.counterHash(client, transportKey: keys.transport)
        #expect(
            try crypto.counterDistance(from: server, toServerHash: hash, transportKey: keys.transport, lookAhead: 6)
                == 5)
        #expect(
            try crypto.counterDistance(from: server, toServerHash: hash, transportKey: keys.transport, lookAhead: 5)
                == nil)
    }

    @Test("codes need their keys and a valid component length")
    func codeInputs() throws {
        let keys = try crypto.factorKeys(masterSecret: try SecureBytes.random(count: 16))
        let counter = HashCounter.random()
        #expect(throws: ProtocolError.missingFactorKey(.knowledge)) {
            try crypto.authenticationCode(
                data: [1], factors: .possessionKnowledge, keys: SigningKeys(possession: keys.possession),
                counter: counter, format: .base64)
        }
        for length in [3, 9, 0, -1] {
            #expect(throws: ProtocolError.invalidComponentLength(length)) {
                try crypto.authenticationCode(
                    data: [1], factors: .possession, keys: keys.signingKeys, counter: counter,
                    format: .decimal(componentLength: length))
            }
        }
        let offline = try crypto.authenticationCode(
            data: [], factors: .possessionKnowledge, keys: keys.signingKeys, counter: counter,
            format: .decimal(componentLength: 4))
        #expect(offline.count == 9 && offline.split(separator: "-").count == 2)
        #expect(throws: ProtocolError.invalidLength(field: "counter", expected: 16, actual: 15)) {
            try HashCounter(bytes: Array(repeating: 0, count: 15))
        }
        #expect(throws: ProtocolError.malformedBase64(field: "counter")) { try HashCounter(base64: "AAAA=AAA") }
    }

    @Test("status blobs round-trip; bad lengths, magic and states are typed errors")
    func statusBlob() throws {
        let keys = try crypto.factorKeys(masterSecret: try SecureBytes.random(count: 16))
        let challenge = [UInt8](repeating: 7, count: 16)
        let nonce = [UInt8](repeating: 9, count: 16)
        let blob = try ActivationStatusBlob(
            state: .active, reserved: [1, 2, 3, 4, 5], counterByte: 42, failedAttempts: 1, maxFailedAttempts: 5,
            counterLookAhead: 20,
            counterDataHash: try crypto.counterHash(HashCounter.random(), transportKey: keys.transport))
        let sealed = try crypto.encryptStatusBlob(
            blob, transportKey: keys.transport, challenge: challenge, nonce: nonce)
        #expect(
            try crypto.decryptStatusBlob(sealed, transportKey: keys.transport, challenge: challenge, nonce: nonce)
                == blob)
        #expect(blob.remainingAttempts == 4)
        #expect(throws: ProtocolError.invalidLength(field: "status blob", expected: 32, actual: 31)) {
            try crypto.decryptStatusBlob(
                Array(sealed.dropLast()), transportKey: keys.transport, challenge: challenge, nonce: nonce)
        }
        #expect(throws: ProtocolError.invalidLength(field: "nonce", expected: 16, actual: 15)) {
            try crypto.decryptStatusBlob(
                sealed, transportKey: keys.transport, challenge: challenge, nonce: Array(nonce.dropLast()))
        }
        // A wrong key decrypts to noise, which fails the magic check.
        #expect(throws: ProtocolError.invalidStatusBlobMagic) {
            try crypto.decryptStatusBlob(sealed, transportKey: keys.vault, challenge: challenge, nonce: nonce)
        }
        var plain = blob.plaintext
        plain[4] = 9
        #expect(throws: ProtocolError.unknownActivationState(9)) { try ActivationStatusBlob(plaintext: plain) }
        plain[3] = 0xD4
        #expect(throws: ProtocolError.invalidStatusBlobMagic) { try ActivationStatusBlob(plaintext: plain) }
        #expect(throws: ProtocolError.invalidLength(field: "status blob", expected: 32, actual: 0)) {
            try ActivationStatusBlob(plaintext: [])
        }
    }

    @Test("normalised request data")
    func requestData() throws {
        let nonce = [UInt8](0..<16)
        let request = try RequestData(
            method: "post", uriIdentifier: "/pa/signature/validate", nonce: nonce, body: Array("{}".utf8))
        #expect(request.requestData == "POST&L3BhL3NpZ25hdHVyZS92YWxpZGF0ZQ==&AAECAwQFBgcICQoLDA0ODw==&e30=")
        let secret = "AAECAwQFBgcICQoLDA0ODw=="
        #expect(
            try String(decoding: request.normalized(applicationSecret: secret), as: UTF8.self) == request.requestData
                + "&" + secret)
        #expect(
            try String(
                decoding: RequestData.offline(uriIdentifier: "/op", nonce: nonce, body: []).normalizedOffline,
                as: UTF8.self)
                == "POST&L29w&AAECAwQFBgcICQoLDA0ODw==&&offline")
        #expect(throws: ProtocolError.invalidHTTPMethod("GE T")) {
            try RequestData(method: "GE T", uriIdentifier: "/", nonce: nonce, body: [])
        }
        #expect(throws: ProtocolError.malformedBase64(field: "applicationSecret")) {
            try request.normalized(applicationSecret: "not base64!")
        }
    }
}

/// Validates a public key through the public API (an ECDH with a throwaway key).
enum P256Check {
    static func validate(_ crypto: ActivationCrypto, _ publicKey: [UInt8]) throws(ProtocolError) {
        let probe = try crypto.generateKeyPair()
        _ = try crypto.masterSecret(privateKey: probe.privateKey, peerPublicKey: publicKey)
    }
}
