import Activation
import ActivationHTTP
import ActivationServer
import ActivationTestSupport
import Foundation
import PowerAuthProtocol
import SecureCore
import Testing
import VaultOPRFProtocol

@testable import ReferenceServer

/// The system clock moved by a fixed offset: an instance whose clock runs fast or slow.
struct OffsetClock: ActivationClock {
    let offset: TimeInterval
    func now() -> Date { Date().addingTimeInterval(offset) }
    func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}

@Suite("Replay protection across instances whose clocks disagree (PostgreSQL)")
struct ReplayClockTests {
    @Test(
        "two instances, one 90 s fast: its sweeps keep every live record, a replay to either is refused",
        .enabled(if: StoreBackend.clusterConnectionString != nil, StoreBackend.skipReason))
    func replayAcrossSkewedClocks() async throws {
        let right = try InProcessServer(backend: .postgres, algorithm: .ecP384)
        defer { right.server.stop() }
        let fast = try InProcessServer(store: right.store, algorithm: .ecP384, clock: OffsetClock(offset: 90))
        defer { fast.server.stop() }
        let configuration = right.server.activationServer.configuration
        let device = try V4TestDevice(
            configuration: configuration,
            transport: try HTTPActivationTransport(
                baseEndpointURL: right.baseURL, client: ActivationClientConfiguration()))
        let prepared = try await right.backOffice.initActivation(userId: "skewed-clocks")
        #expect(try await device.activate(code: prepared.activationCode).statusCode == 200)
        try await right.backOffice.commit(device.activationId)

        // One status request, encrypted under a key the right instance issued, answered there.
        let key = try await device.temporaryKey(activation: true)
        let context = try device.context(key, .genericActivation, activation: true)
        let (request, _) = try context.encryptRequest(
            try V4TestDevice.secure(Array("{}".utf8)), timestampMilliseconds: device.now)
        let body = try WireCoding.encode(request)
        let header = [
            V4EncryptionHeader.name: V4EncryptionHeader(
                applicationKey: device.applicationKey, activationId: device.activationId
            ).value
        ]
        #expect(await device.send(V4API.activationStatus.path, headers: header, body: body).statusCode == 200)

        // The fast instance checks a sweep interval's worth of fresh requests (its store sweeps
        // then): the window and the sweep are the database's, so its clock neither refuses them
        // nor deletes the record above, which by its clock has 90 s less to live.
        for index in 0..<PostgresActivationStore.sweepInterval {
            try fast.server.activationServer.replayCache.accept(
                replayKey: Array("skew|".utf8) + [UInt8(index & 0xFF), UInt8(index >> 8)],
                timestamp: device.now, windowMilliseconds: 600_000,
                now: Int64(Date().timeIntervalSince1970 * 1000) + 90_000)
        }

        // The same request replayed: refused by both, as a replay (not as too old).
        let fastDevice = try V4TestDevice(
            configuration: configuration,
            transport: try HTTPActivationTransport(
                baseEndpointURL: fast.baseURL, client: ActivationClientConfiguration()))
        for target in [device, fastDevice] {
            let replayed = await target.send(V4API.activationStatus.path, headers: header, body: body)
            #expect(replayed.statusCode == 400)
        }
        let nonce = try #require(Base64.decode(request.nonce))
        let replayKey = Array("V4|".utf8) + Array(request.temporaryKeyId.utf8) + [0] + nonce
        for server in [right, fast] {
            #expect(throws: ActivationServerError.replayedRequest) {
                try server.server.activationServer.replayCache.accept(
                    replayKey: replayKey, timestamp: request.timestamp,
                    windowMilliseconds: V4EncryptionContext.timestampWindowMilliseconds,
                    now: Int64(Date().timeIntervalSince1970 * 1000))
            }
        }

        // And a fresh request sent to the fast instance is served: its clock does not decide the window.
        let second = try await device.temporaryKey(activation: true)
        let secondContext = try device.context(second, .genericActivation, activation: true)
        let (fresh, _) = try secondContext.encryptRequest(
            try V4TestDevice.secure(Array("{}".utf8)), timestampMilliseconds: device.now)
        fastDevice.activationId = device.activationId
        #expect(
            await fastDevice.send(V4API.activationStatus.path, headers: header, body: try WireCoding.encode(fresh))
                .statusCode == 200)
    }

    @Test(
        "ECIES 3.3, one instance 90 s fast: its sweep leaves the other's live record, the replay is refused",
        .enabled(if: StoreBackend.clusterConnectionString != nil, StoreBackend.skipReason))
    func eciesReplayAfterAFastSweep() async throws {
        let right = try InProcessServer(backend: .postgres)
        defer { right.server.stop() }
        let fast = try InProcessServer(store: right.store, clock: OffsetClock(offset: 90))
        defer { fast.server.stop() }
        // A temporary key from the right instance, as the SDK fetches and verifies it.
        let sdk = try SDKConfiguration(parsing: try right.server.configurationString())
        let keyRequest = try ApplicationTemporaryKey.Request(configuration: sdk)
        let json = ["Content-Type": "application/json"]
        let (keyStatus, keyBody) = try await right.rawClient().post(
            path: TemporaryKeyAPI.createKey.path,
            body: Data(try WireCoding.encode(RequestEnvelope(requestObject: keyRequest.message))), headers: json)
        #expect(keyStatus == 200)
        let message = try #require(
            try WireCoding.decode(ResponseEnvelope<JWTMessage>.self, Array(keyBody)).responseObject)
        let key = try ApplicationTemporaryKey(verifying: message, request: keyRequest, configuration: sdk, now: Date())
        // One vault-status request (60 s ECIES window) for a vault nobody registered: it opens,
        // passes the replay check, and is answered "unknown-vault".
        let plaintext = try VaultOPRFAPI.request(.status, vaultId: try SecureRandom.bytes(count: 16)) { _ in }
        defer { plaintext.destroy() }
        let (cryptogram, _) = try ECIESEncryptor(
            configuration: try VaultOPRFAPI.eciesConfiguration(sdk, temporaryKeyId: key.temporaryKeyId),
            serverPublicKey: key.publicKey
        ).encryptRequest(plaintext)
        let body = try JSONEncoder().encode(VaultOPRFAPI.Cryptogram(cryptogram))
        func send(_ server: InProcessServer) async throws -> String? {
            let (_, answer) = try await server.rawClient().post(
                path: VaultOPRFAPI.Operation.status.path, body: body, headers: json)
            return try JSONDecoder().decode(VaultOPRFAPI.Failure.self, from: answer).error
        }
        #expect(try await send(right) == "unknown-vault")
        // The fast instance sweeps (a sweep interval's checks). By its clock the record above has
        // passed its time (ts + 60 s < its now); by the database's, the one clock used, it has not.
        for index in 0..<PostgresActivationStore.sweepInterval {
            try fast.server.activationServer.replayCache.accept(
                replayKey: Array("skew3|".utf8) + [UInt8(index & 0xFF), UInt8(index >> 8)],
                timestamp: Int64(Date().timeIntervalSince1970 * 1000), windowMilliseconds: 600_000,
                now: Int64(Date().timeIntervalSince1970 * 1000) + 90_000)
        }
        // Replayed to either instance: refused before the vault is looked at.
        #expect(try await send(right) == "expired")
        #expect(try await send(fast) == "expired")
    }
}
