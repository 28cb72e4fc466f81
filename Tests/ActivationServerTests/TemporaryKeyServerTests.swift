import ActivationTestSupport
import Foundation
import PowerAuthProtocol
import SecureCore
import Testing

@testable import ActivationServer
@testable import PowerAuthProtocol

@Suite("Temporary keys and ECIES replay protection on the server")
struct TemporaryKeyServerTests {
    static func master() throws -> SecureBytes { try SecureBytes.random(count: 32) }

    @Test("a key is valid 300 s, only for its generation, application and activation; nothing is stored")
    func storeValidity() throws {
        let store = try TemporaryKeyStore(masterPrivateKey: try Self.master())
        let created = try store.create(applicationKey: "app", activationId: nil, now: 1_000)
        #expect(created.expiresAtMilliseconds == 301_000)
        #expect(created.publicKey.count == 65)
        let key = try store.privateKey(
            temporaryKeyId: created.temporaryKeyId, applicationKey: "app", activationId: nil, now: 300_999)
        #expect(try p256KeysMatch(key, created.publicKey))
        key.destroy()
        let refusals: [(String, String, String?, Int64, TemporaryKeyStore.Generation)] = [
            (created.temporaryKeyId, "other", nil, 2_000, .v3),
            (created.temporaryKeyId, "app", "a", 2_000, .v3),
            (created.temporaryKeyId, "app", nil, 2_000, .v4),
            ("unknown", "app", nil, 2_000, .v3),
            ("", "app", nil, 2_000, .v3),
            (created.temporaryKeyId, "app", nil, 301_000, .v3),
        ]
        for (id, app, activation, now, generation) in refusals {
            #expect(throws: ActivationServerError.temporaryKeyFailure) {
                try store.open(id, generation: generation, applicationKey: app, activationId: activation, now: now)
            }
        }
        // Every byte of the identifier counts: the expiry, the nonce, the sealed key, the tag.
        let bytes = try #require(Base64URL.decode(created.temporaryKeyId))
        for index in bytes.indices {
            var tampered = bytes
            tampered[index] ^= 0x01
            #expect(throws: ActivationServerError.temporaryKeyFailure) {
                try store.privateKey(
                    temporaryKeyId: Base64URL.encode(tampered), applicationKey: "app", activationId: nil, now: 2_000)
            }
        }
    }

    @Test("stateless keys: every instance with the same master key opens them, another master key does not")
    func storeAcrossInstances() throws {
        let master = try Self.master()
        let issuer = try TemporaryKeyStore(masterPrivateKey: master)
        let other = try TemporaryKeyStore(masterPrivateKey: master)
        let stranger = try TemporaryKeyStore(masterPrivateKey: try Self.master())
        let secret = try SecureBytes.random(count: 32)
        let (id, expires) = try issuer.issue(secret, generation: .v4, applicationKey: "app", activationId: "A", now: 0)
        #expect(expires == 300_000)
        let opened = try other.open(id, generation: .v4, applicationKey: "app", activationId: "A", now: 1)
        #expect(try opened.isEqual(to: secret))
        // The opened copy is the caller's: destroying it leaves the key usable for the next request.
        opened.destroy()
        let again = try issuer.open(id, generation: .v4, applicationKey: "app", activationId: "A", now: 2)
        #expect(try again.isEqual(to: secret))
        #expect(throws: ActivationServerError.temporaryKeyFailure) {
            try stranger.open(id, generation: .v4, applicationKey: "app", activationId: "A", now: 1)
        }
        #expect(
            throws: ActivationServerError.protocolFailure(
                .invalidLength(field: "temporary key", expected: 32, actual: 16))
        ) {
            try issuer.issue(
                try SecureBytes.random(count: 16), generation: .v4, applicationKey: "app", activationId: nil, now: 0)
        }
    }

    @Test("replay cache: a pair is accepted once, timestamps outside ±60 s are refused")
    func replayCache() throws {
        let cache = ECIESReplayCache()
        let key = [UInt8](repeating: 2, count: 33)
        let nonce = [UInt8](repeating: 7, count: 16)
        let now: Int64 = 1_800_000_000_000
        try cache.accept(ephemeralPublicKey: key, nonce: nonce, timestamp: now, now: now)
        #expect(throws: ActivationServerError.replayedRequest) {
            try cache.accept(ephemeralPublicKey: key, nonce: nonce, timestamp: now, now: now + 1)
        }
        // Same key, another nonce; same nonce, another key: both new.
        try cache.accept(ephemeralPublicKey: key, nonce: [UInt8](repeating: 8, count: 16), timestamp: now, now: now)
        try cache.accept(ephemeralPublicKey: [UInt8](repeating: 3, count: 33), nonce: nonce, timestamp: now, now: now)
        // Stale and future timestamps.
        #expect(throws: ActivationServerError.requestExpired) {
            try cache.accept(ephemeralPublicKey: key, nonce: [9], timestamp: now - 60_001, now: now)
        }
        #expect(throws: ActivationServerError.requestExpired) {
            try cache.accept(ephemeralPublicKey: key, nonce: [9], timestamp: now + 60_001, now: now)
        }
        try cache.accept(ephemeralPublicKey: key, nonce: [10], timestamp: now - 60_000, now: now)
        try cache.accept(ephemeralPublicKey: key, nonce: [11], timestamp: now + 60_000, now: now)
        // After the window the replay is still refused, by its timestamp.
        #expect(throws: ActivationServerError.requestExpired) {
            try cache.accept(ephemeralPublicKey: key, nonce: nonce, timestamp: now, now: now + 60_001)
        }
        #expect(throws: ActivationServerError.requestExpired) {
            try cache.accept(ephemeralPublicKey: key, nonce: nonce, timestamp: Int64.min, now: now)
        }
    }

    @Test("replay cache: bounded; a full cache forgets the earliest ends and refuses what it forgot")
    func replayCapacity() throws {
        let cache = ECIESReplayCache(windowMilliseconds: 1_000, capacity: 8)
        // Eight pairs whose windows end at 1_000 ... 1_007.
        for n in 0..<8 { try cache.accept(ephemeralPublicKey: [1], nonce: [UInt8(n)], timestamp: Int64(n), now: 0) }
        #expect(cache.count == 8)
        // A ninth: the earliest end goes (down to seven eighths), the floor rises to 1_000.
        try cache.accept(ephemeralPublicKey: [1], nonce: [100], timestamp: 50, now: 50)
        #expect(cache.count == 8)
        // The forgotten pair replayed inside its window: refused, as expired, never accepted twice.
        #expect(throws: ActivationServerError.requestExpired) {
            try cache.accept(ephemeralPublicKey: [1], nonce: [0], timestamp: 0, now: 60)
        }
        // A remembered one is still a replay, and a fresh request still passes.
        #expect(throws: ActivationServerError.replayedRequest) {
            try cache.accept(ephemeralPublicKey: [1], nonce: [1], timestamp: 1, now: 60)
        }
        try cache.accept(ephemeralPublicKey: [1], nonce: [101], timestamp: 60, now: 60)
        // A flood stays within capacity, and the request after it passes.
        for n in 0..<1_000 {
            let at = Int64(100 + n)
            try cache.accept(ephemeralPublicKey: [2], nonce: [UInt8(n & 0xFF), UInt8(n >> 8)], timestamp: at, now: at)
        }
        #expect(cache.count <= 8)
        try cache.accept(ephemeralPublicKey: [3], nonce: [1], timestamp: 1_200, now: 1_200)
    }

    @Test("keystore/create in application scope: verified, signed by the master key, key usable until expiry")
    func endpointApplicationScope() throws {
        let h = try Harness()
        let appKey = Base64.encode(h.serverConfiguration.applicationKey)
        let secret = Base64.encode(h.serverConfiguration.applicationSecret)
        let claims = TemporaryKeyRequestClaims(
            applicationKey: appKey, activationId: nil, challenge: try TemporaryKeyJWT.makeChallenge())
        let jwt = try TemporaryKeyJWT.signRequest(
            claims, key: try TemporaryKeyJWT.applicationSigningKey(applicationSecret: secret))
        let response = h.server.respond(to: Self.request(jwt))
        #expect(response.statusCode == 200)
        let message = try WireCoding.decode(ResponseEnvelope<JWTMessage>.self, response.body)
        #expect(message.status == "OK")
        let verified = try TemporaryKeyJWT.verifyResponse(
            try #require(message.responseObject).jwt, publicKey: h.serverConfiguration.masterKeyPair.publicKey,
            request: claims,
            now: h.clock.now())
        let now = Int64(h.clock.now().timeIntervalSince1970 * 1000)
        #expect(verified.expiresAtMilliseconds - verified.issuedAtMilliseconds == 300_000)
        let key = try h.server.temporaryKeys.privateKey(
            temporaryKeyId: verified.temporaryKeyId, applicationKey: appKey, activationId: nil, now: now)
        #expect(try p256KeysMatch(key, try #require(Base64.decode(verified.publicKey))))
        key.destroy()
        #expect(throws: ActivationServerError.temporaryKeyFailure) {
            try h.server.temporaryKeys.privateKey(
                temporaryKeyId: verified.temporaryKeyId, applicationKey: appKey, activationId: nil, now: now + 300_000)
        }
    }

    @Test("keystore/create refuses a bad signature, an unknown application key, an unknown activation")
    func endpointRefusals() throws {
        let h = try Harness()
        let appKey = Base64.encode(h.serverConfiguration.applicationKey)
        let wrongSecret = Base64.encode([UInt8](repeating: 1, count: 16))
        let secret = Base64.encode(h.serverConfiguration.applicationSecret)
        let cases: [(TemporaryKeyRequestClaims, String)] = [
            (TemporaryKeyRequestClaims(applicationKey: appKey, activationId: nil, challenge: "AAAA"), wrongSecret),
            (TemporaryKeyRequestClaims(applicationKey: wrongSecret, activationId: nil, challenge: "AAAA"), secret),
            (TemporaryKeyRequestClaims(applicationKey: appKey, activationId: "nope", challenge: "AAAA"), secret),
        ]
        for (claims, key) in cases {
            let jwt = try TemporaryKeyJWT.signRequest(
                claims, key: try TemporaryKeyJWT.applicationSigningKey(applicationSecret: key))
            let response = h.server.respond(to: Self.request(jwt))
            #expect(response.statusCode == 400)
            let error = try WireCoding.decode(ResponseEnvelope<ErrorResponse>.self, response.body).responseObject
            #expect(error == ErrorResponse(code: "ERR_TEMPORARY_KEY", message: "POWER_AUTH_TEMPORARY_KEY_FAILURE"))
        }
        let garbage = h.server.respond(to: Self.request("not.a.jwt"))
        #expect(garbage.statusCode == 400)
    }

    static func request(_ jwt: String) -> TransportRequest {
        let body = try! WireCoding.encode(RequestEnvelope(requestObject: JWTMessage(jwt: jwt)))
        return TransportRequest(method: "POST", path: "/pa/v3/keystore/create", headers: [:], body: body)
    }
}
