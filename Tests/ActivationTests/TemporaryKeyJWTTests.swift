import Foundation
import PowerAuthProtocol
import SecureCore
import Testing

/// The 3.3 temporary-key JWTs against fixtures made by a second implementation
/// (`Tests/Vectors/temporary-keys/generate.py`: Python `hmac` and `cryptography`).
@Suite("Temporary-key JWTs (3.3)")
struct TemporaryKeyJWTTests {
    struct Fixture: Decodable {
        struct Pair: Decodable {
            let kind: String
            let der: String
            let jose: String
        }
        let applicationKey: String
        let applicationSecret: String
        let transportKey: String
        let activationSigningKey: String
        let challenge: String
        let requestApplicationScope: String
        let requestActivationScope: String
        let activationId: String
        let serverPublicKey: String
        let response: String
        let signaturePairs: [Pair]
    }

    static func fixture() throws -> Fixture {
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Vectors/temporary-keys/temporary-key-jwt.json")
        return try JSONDecoder().decode(Fixture.self, from: Data(contentsOf: url))
    }

    static func secure(_ base64: String) throws -> SecureBytes {
        let bytes = [UInt8](Data(base64Encoded: base64)!)
        return try bytes.withUnsafeBytes { try SecureBytes(copying: $0) }
    }

    /// Just before the fixture response's `exp_ms`.
    static let fixtureNow = Date(timeIntervalSince1970: 1_767_225_900.0)

    @Test("HS256 request in application scope is byte for byte the fixture, and verifies")
    func requestApplicationScope() throws {
        let f = try Self.fixture()
        let key = try TemporaryKeyJWT.applicationSigningKey(applicationSecret: f.applicationSecret)
        let claims = TemporaryKeyRequestClaims(
            applicationKey: f.applicationKey, activationId: nil, challenge: f.challenge)
        #expect(try TemporaryKeyJWT.signRequest(claims, key: key) == f.requestApplicationScope)
        #expect(try TemporaryKeyJWT.verifyRequest(f.requestApplicationScope, key: key) == claims)
        #expect(try TemporaryKeyJWT.requestClaims(f.requestApplicationScope) == claims)
        #expect(f.requestApplicationScope.hasPrefix("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."))
    }

    @Test("HS256 request in activation scope (KDF_INTERNAL(KEY_TRANSPORT, secret)) is byte for byte the fixture")
    func requestActivationScope() throws {
        let f = try Self.fixture()
        let key = try TemporaryKeyJWT.activationSigningKey(
            transportKey: try Self.secure(f.transportKey), applicationSecret: f.applicationSecret)
        #expect(try key.isEqual(to: try Self.secure(f.activationSigningKey)))
        let claims = TemporaryKeyRequestClaims(
            applicationKey: f.applicationKey, activationId: f.activationId, challenge: f.challenge)
        #expect(try TemporaryKeyJWT.signRequest(claims, key: key) == f.requestActivationScope)
        #expect(try TemporaryKeyJWT.verifyRequest(f.requestActivationScope, key: key) == claims)
    }

    @Test("a request with a wrong key or an altered part does not verify")
    func requestTampering() throws {
        let f = try Self.fixture()
        let key = try TemporaryKeyJWT.applicationSigningKey(applicationSecret: f.applicationSecret)
        #expect(throws: JWTError.signatureInvalid) {
            try TemporaryKeyJWT.verifyRequest(f.requestApplicationScope, key: try Self.secure(f.transportKey))
        }
        var parts = f.requestApplicationScope.split(separator: ".").map(String.init)
        let original = parts
        parts[2] = String(parts[2].dropLast()) + (parts[2].last == "A" ? "Q" : "A")
        #expect(throws: JWTError.self) { try TemporaryKeyJWT.verifyRequest(parts.joined(separator: "."), key: key) }
        parts = original
        parts[1] = Base64URL.encode(Array(#"{"applicationKey":"x","challenge":"y"}"#.utf8))
        #expect(throws: JWTError.signatureInvalid) {
            try TemporaryKeyJWT.verifyRequest(parts.joined(separator: "."), key: key)
        }
        parts = original
        parts[0] = Base64URL.encode(Array(#"{"alg":"none","typ":"JWT"}"#.utf8))
        #expect(throws: JWTError.unsupportedAlgorithm("none")) {
            try TemporaryKeyJWT.verifyRequest(parts.joined(separator: "."), key: key)
        }
        for bad in ["", "a.b", "a.b.c.d", original[0] + ".." + original[2], f.requestApplicationScope + "="] {
            #expect(throws: JWTError.self) { try TemporaryKeyJWT.verifyRequest(bad, key: key) }
        }
    }

    @Test("the ES256 response made by Python verifies with the server public key")
    func responseFixture() throws {
        let f = try Self.fixture()
        let request = TemporaryKeyRequestClaims(
            applicationKey: f.applicationKey, activationId: nil, challenge: f.challenge)
        let publicKey = [UInt8](Data(base64Encoded: f.serverPublicKey)!)
        let claims = try TemporaryKeyJWT.verifyResponse(
            f.response, publicKey: publicKey, request: request, now: Self.fixtureNow)
        #expect(claims.temporaryKeyId == "0f3c5a1e-7d2b-4c8e-9a6f-1b2d3e4f5a6b")
        #expect(claims.expiresAtMilliseconds == 1_767_225_900_123)
        #expect(claims.issuedAt == 1_767_225_600)
        #expect(throws: JWTError.expired) {
            try TemporaryKeyJWT.verifyResponse(
                f.response, publicKey: publicKey, request: request, now: Self.fixtureNow.addingTimeInterval(1))
        }
        let other = TemporaryKeyRequestClaims(applicationKey: f.applicationKey, activationId: nil, challenge: "AAAA")
        #expect(throws: JWTError.claimMismatch(claim: "challenge")) {
            try TemporaryKeyJWT.verifyResponse(f.response, publicKey: publicKey, request: other, now: Self.fixtureNow)
        }
        var parts = f.response.split(separator: ".").map(String.init)
        var signature = Base64URL.decode(parts[2])!
        signature[40] ^= 1
        parts[2] = Base64URL.encode(signature)
        #expect(throws: JWTError.signatureInvalid) {
            try TemporaryKeyJWT.verifyResponse(
                parts.joined(separator: "."), publicKey: publicKey, request: request, now: Self.fixtureNow)
        }
    }

    @Test("DER and JOSE signatures convert both ways, as Python writes them")
    func signatureFormats() throws {
        let f = try Self.fixture()
        #expect(Set(f.signaturePairs.map(\.kind)) == ["high", "short", "plain"])
        for pair in f.signaturePairs {
            let der = [UInt8](Data(base64Encoded: pair.der)!)
            let jose = [UInt8](Data(base64Encoded: pair.jose)!)
            #expect(ECDSASignatureFormat.jose(fromDER: der) == jose, "\(pair.kind)")
            #expect(ECDSASignatureFormat.der(fromJOSE: jose) == der, "\(pair.kind)")
        }
        #expect(ECDSASignatureFormat.der(fromJOSE: [UInt8](repeating: 1, count: 63)) == nil)
        #expect(ECDSASignatureFormat.jose(fromDER: [0x30, 0x02, 0x02, 0x00]) == nil)
    }

    @Test("a response signed here verifies; the other scope's key, an activation mismatch, a wrong alg are refused")
    func responseRoundTrip() throws {
        let master = try P256.generateKeyPair()
        let other = try P256.generateKeyPair()
        let request = TemporaryKeyRequestClaims(
            applicationKey: "AAECAwQFBgcICQoLDA0ODw==", activationId: "act-1",
            challenge: try TemporaryKeyJWT.makeChallenge())
        #expect(Data(base64Encoded: request.challenge)?.count == 18)
        let temporary = try P256.generateKeyPair()
        let now = Date()
        let nowMs = Int64(now.timeIntervalSince1970 * 1000)
        let claims = TemporaryKeyResponseClaims(
            temporaryKeyId: "k", request: request, publicKey: Data(temporary.publicKey).base64EncodedString(),
            issuedAtMilliseconds: nowMs, expiresAtMilliseconds: nowMs + 300_000)
        let jwt = try TemporaryKeyJWT.signResponse(claims, privateKey: master.privateKey)
        #expect(
            try TemporaryKeyJWT.verifyResponse(jwt, publicKey: master.publicKey, request: request, now: now) == claims)
        #expect(throws: JWTError.signatureInvalid) {
            try TemporaryKeyJWT.verifyResponse(jwt, publicKey: other.publicKey, request: request, now: now)
        }
        let otherActivation = TemporaryKeyRequestClaims(
            applicationKey: request.applicationKey, activationId: "act-2", challenge: request.challenge)
        #expect(throws: JWTError.claimMismatch(claim: "activationId")) {
            try TemporaryKeyJWT.verifyResponse(jwt, publicKey: master.publicKey, request: otherActivation, now: now)
        }
        // An HS256 token where an ES256 response is expected.
        let key = try TemporaryKeyJWT.applicationSigningKey(applicationSecret: "gIGCg4SFhoeIiYqLjI2Ojw==")
        let hs = try TemporaryKeyJWT.signRequest(request, key: key)
        #expect(throws: JWTError.unsupportedAlgorithm("HS256")) {
            try TemporaryKeyJWT.verifyResponse(hs, publicKey: master.publicKey, request: request, now: now)
        }
    }
}
