import Activation
import ActivationHTTP
import ActivationTestSupport
import Foundation
import PowerAuthProtocol
import ReferenceServer
import SecureCore
import Testing

/// Wraps the HTTP transport and flips one bit of the response JWT's signature.
struct TamperingTransport: ActivationTransport {
    let inner: HTTPActivationTransport

    func send(_ request: TransportRequest, timeout: Duration) async throws(TransportError) -> TransportResponse {
        let response = try await inner.send(request, timeout: timeout)
        guard var envelope = try? WireCoding.decode(ResponseEnvelope<JWTMessage>.self, response.body) else {
            return response
        }
        var parts = (envelope.responseObject?.jwt ?? "").split(separator: ".").map(String.init)
        var signature = [UInt8](Data(base64Encoded: Self.standard(parts[2]))!)
        signature[10] ^= 0x01
        parts[2] = Data(signature).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        envelope.responseObject = JWTMessage(jwt: parts.joined(separator: "."))
        return TransportResponse(statusCode: response.statusCode, body: (try? WireCoding.encode(envelope)) ?? [])
    }

    static func standard(_ text: String) -> String {
        let base = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        return base + String(repeating: "=", count: (4 - base.count % 4) % 4)
    }
}

@Suite("Temporary keys (3.3) over real HTTP")
struct TemporaryKeyHTTPTests {
    static func nowMilliseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    @Test(
        "application scope: the client fetches, verifies and caches a key the server can use",
        arguments: StoreBackend.available)
    func applicationScope(_ backend: StoreBackend) async throws {
        let s = try InProcessServer(backend: backend)
        defer { s.server.stop() }
        let device = try s.device()
        // The server's lifetime is 300 s from the moment it issues the key, which lies between these
        // two readings of the clock however slow the machine is; the JWT carries whole seconds.
        let before = Date()
        let key = try await device.service.temporaryEncryptionKey(scope: .application)
        let after = Date()
        #expect(key.scope == .application && key.activationId == nil)
        #expect(key.expiresAt >= before.addingTimeInterval(300 - 1))
        #expect(key.expiresAt <= after.addingTimeInterval(300 + 1))
        let appKey = device.configuration.sdkConfiguration.applicationKey
        let privateKey = try s.server.activationServer.temporaryKeys.privateKey(
            temporaryKeyId: key.temporaryKeyId, applicationKey: appKey, activationId: nil, now: Self.nowMilliseconds())
        #expect(try p256KeysMatch(privateKey, key.publicKey))
        privateKey.destroy()
        // Cached until shortly before expiry: no second key.
        #expect(try await device.service.temporaryEncryptionKey(scope: .application) == key)
        // Expired: the server no longer uses it.
        #expect(throws: (any Error).self) {
            try s.server.activationServer.temporaryKeys.privateKey(
                temporaryKeyId: key.temporaryKeyId, applicationKey: appKey, activationId: nil,
                now: Int64(key.expiresAt.timeIntervalSince1970 * 1000))
        }
        // Activation scope without an activation.
        #expect(
            await failure { _ = try await device.service.temporaryEncryptionKey(scope: .activation) }
                == .missingActivation)
    }

    @Test(
        "activation scope: HS256 with KEY_TRANSPORT, ES256 by the activation's server key",
        arguments: StoreBackend.available)
    func activationScope(_ backend: StoreBackend) async throws {
        let s = try InProcessServer(backend: backend)
        defer { s.server.stop() }
        let (device, id) = try await s.activeDevice()
        let key = try await device.service.temporaryEncryptionKey(scope: .activation)
        #expect(key.activationId == id)
        let appKey = device.configuration.sdkConfiguration.applicationKey
        let privateKey = try s.server.activationServer.temporaryKeys.privateKey(
            temporaryKeyId: key.temporaryKeyId, applicationKey: appKey, activationId: id, now: Self.nowMilliseconds())
        #expect(try p256KeysMatch(privateKey, key.publicKey))
        privateKey.destroy()
        #expect(throws: (any Error).self) {
            try s.server.activationServer.temporaryKeys.privateKey(
                temporaryKeyId: key.temporaryKeyId, applicationKey: appKey, activationId: nil,
                now: Self.nowMilliseconds())
        }
    }

    @Test(
        "bad HS256 signature, wrong application key, garbage: 400 ERR_TEMPORARY_KEY, server keeps serving",
        arguments: StoreBackend.available)
    func refusals(_ backend: StoreBackend) async throws {
        let s = try InProcessServer(backend: backend)
        defer { s.server.stop() }
        let device = try s.device()
        let sdk = device.configuration.sdkConfiguration
        let wrongSecret = Data(repeating: 9, count: 16).base64EncodedString()
        let bodies: [String] = [
            try Self.body(applicationKey: sdk.applicationKey, secret: wrongSecret),
            try Self.body(applicationKey: wrongSecret, secret: sdk.applicationSecret),
            #"{"requestObject":{"jwt":"eyJhbGciOiJub25lIn0.e30."}}"#,
        ]
        for body in bodies {
            let (status, answer) = try await s.rawClient().post(
                path: "/pa/v3/keystore/create", body: Data(body.utf8), headers: ["Content-Type": "application/json"])
            #expect(status == 400)
            let error = try WireCoding.decode(ResponseEnvelope<ErrorResponse>.self, Array(answer))
            #expect(error.status == "ERROR")
            #expect(error.responseObject?.code == "ERR_TEMPORARY_KEY")
            #expect(error.responseObject?.message == "POWER_AUTH_TEMPORARY_KEY_FAILURE")
        }
        _ = try await device.service.temporaryEncryptionKey(scope: .application)
    }

    @Test("a response whose signature was altered is refused by the client", arguments: StoreBackend.available)
    func tamperedResponse(_ backend: StoreBackend) async throws {
        let s = try InProcessServer(backend: backend)
        defer { s.server.stop() }
        let plain = try s.device()
        let service = try ActivationService(
            configuration: plain.configuration,
            storage: try FileActivationStorage(directory: s.directory + "/tamper-\(UUID().uuidString)"),
            transport: TamperingTransport(inner: plain.transport))
        let error = await failure { _ = try await service.temporaryEncryptionKey(scope: .application) }
        guard case .invalidResponse = error else {
            Issue.record("expected invalidResponse, got \(String(describing: error))")
            return
        }
    }

    static func body(applicationKey: String, secret: String) throws -> String {
        let claims = TemporaryKeyRequestClaims(
            applicationKey: applicationKey, activationId: nil, challenge: try TemporaryKeyJWT.makeChallenge())
        let jwt = try TemporaryKeyJWT.signRequest(
            claims, key: try TemporaryKeyJWT.applicationSigningKey(applicationSecret: secret))
        return String(
            decoding: try WireCoding.encode(RequestEnvelope(requestObject: JWTMessage(jwt: jwt))), as: UTF8.self)
    }
}
