import ActivationTestSupport
import Foundation
import PowerAuthProtocol
import SecureCore
import Testing

@testable import ActivationServer

@Suite("Temporary keys and ECIES replay protection on the server")
struct TemporaryKeyServerTests {
    @Test("a stored key is valid 300 s, only for its application and activation")
    func storeValidity() throws {
        let store = TemporaryKeyStore()
        let created = try store.create(applicationKey: "app", activationId: nil, now: 1_000)
        #expect(created.expiresAtMilliseconds == 301_000)
        #expect(created.publicKey.count == 65)
        let pair = try store.keyPair(
            temporaryKeyId: created.temporaryKeyId, applicationKey: "app", activationId: nil, now: 300_999)
        #expect(pair.publicKey == created.publicKey)
        #expect(throws: ActivationServerError.temporaryKeyFailure) {
            try store.keyPair(
                temporaryKeyId: created.temporaryKeyId, applicationKey: "other", activationId: nil, now: 2_000)
        }
        #expect(throws: ActivationServerError.temporaryKeyFailure) {
            try store.keyPair(
                temporaryKeyId: created.temporaryKeyId, applicationKey: "app", activationId: "a", now: 2_000)
        }
        #expect(throws: ActivationServerError.temporaryKeyFailure) {
            try store.keyPair(temporaryKeyId: "unknown", applicationKey: "app", activationId: nil, now: 2_000)
        }
        #expect(throws: ActivationServerError.temporaryKeyFailure) {
            try store.keyPair(
                temporaryKeyId: created.temporaryKeyId, applicationKey: "app", activationId: nil, now: 301_000)
        }
        #expect(store.count == 0)
    }

    @Test("a full store drops expired keys, then refuses")
    func storeCapacity() throws {
        let store = TemporaryKeyStore(validityMilliseconds: 10, capacity: 2)
        _ = try store.create(applicationKey: "a", activationId: nil, now: 0)
        _ = try store.create(applicationKey: "a", activationId: nil, now: 0)
        #expect(throws: ActivationServerError.temporaryKeyFailure) {
            try store.create(applicationKey: "a", activationId: nil, now: 5)
        }
        _ = try store.create(applicationKey: "a", activationId: nil, now: 10)
        #expect(store.count == 1)
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

    @Test("replay cache: bounded; a full cache refuses rather than forgets")
    func replayCapacity() throws {
        let cache = ECIESReplayCache(windowMilliseconds: 1_000, capacity: 2)
        try cache.accept(ephemeralPublicKey: [1], nonce: [1], timestamp: 0, now: 0)
        try cache.accept(ephemeralPublicKey: [1], nonce: [2], timestamp: 0, now: 0)
        #expect(throws: ActivationServerError.replayedRequest) {
            try cache.accept(ephemeralPublicKey: [1], nonce: [3], timestamp: 500, now: 500)
        }
        try cache.accept(ephemeralPublicKey: [1], nonce: [3], timestamp: 1_500, now: 1_500)
        #expect(cache.count == 1)
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
        _ = try h.server.temporaryKeys.keyPair(
            temporaryKeyId: verified.temporaryKeyId, applicationKey: appKey, activationId: nil, now: now)
        #expect(throws: ActivationServerError.temporaryKeyFailure) {
            try h.server.temporaryKeys.keyPair(
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
        #expect(h.server.temporaryKeys.count == 0)
    }

    static func request(_ jwt: String) -> TransportRequest {
        let body = try! WireCoding.encode(RequestEnvelope(requestObject: JWTMessage(jwt: jwt)))
        return TransportRequest(method: "POST", path: "/pa/v3/keystore/create", headers: [:], body: body)
    }
}
