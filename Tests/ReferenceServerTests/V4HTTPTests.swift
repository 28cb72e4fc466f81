import Activation
import ActivationHTTP
import ActivationServer
import ActivationTestSupport
import Foundation
import PostgresStore
import PowerAuthProtocol
import ReferenceServer
import SecureCore
import TestSupport
import Testing

@Suite("Protocol V4 (EC_P384 and the hybrid suites) over HTTP against the reference server, on each store")
struct V4HTTPTests {
    @Test(
        "activate, status, validate, a counted wrong PIN; a restart keeps the V4 keys, counter and master keys",
        arguments: StoreBackend.available, [ProtocolAlgorithm.ecP384, .ecP384MLL3, .ecP384MLL5])
    func lifecycleAcrossRestart(backend: StoreBackend, algorithm: ProtocolAlgorithm) async throws {
        let first = try InProcessServer(backend: backend, algorithm: algorithm)
        let configuration = first.server.activationServer.configuration
        let configurationString = try first.server.configurationString()
        let transport = try HTTPActivationTransport(
            baseEndpointURL: first.baseURL, client: ActivationClientConfiguration())
        let device = try V4TestDevice(configuration: configuration, transport: transport)
        let prepared = try first.server.activationServer.initActivation(userId: "http-user")
        let created = try await device.activate(code: prepared.activationCode)
        #expect(created.statusCode == 200)
        #expect(try first.server.activationServer.activationDetail(device.activationId).state == .pendingCommit)
        try first.server.activationServer.commitActivation(device.activationId)
        let confirmed = try await device.call(
            V4API.activationConfirm, body: try WireCoding.encode(V4ConfirmRequest(enableBiometry: false)),
            factorSet: .possessionKnowledge)
        #expect(confirmed.statusCode == 200)
        let wrong = try await device.call(
            V4API.validate, body: Array("{}".utf8), factorSet: .possessionKnowledge,
            knowledge: try SecureBytes.random(count: 32))
        #expect(wrong.statusCode == 401)
        let status = try await device.status()
        #expect(status.state == .active && status.failedAttempts == 1 && !status.isConfirmationPending)
        first.server.stop()

        let second = try InProcessServer(store: first.store, algorithm: algorithm)
        #expect(try second.server.configurationString() == configurationString)
        let again = try V4TestDevice(
            configuration: second.server.activationServer.configuration,
            transport: try HTTPActivationTransport(
                baseEndpointURL: second.baseURL, client: ActivationClientConfiguration()))
        again.activationId = device.activationId
        again.keys = device.keys
        again.counter = device.counter
        again.serverPublicKey = device.serverPublicKey
        again.serverPostQuantumKey = device.serverPostQuantumKey
        let ok = try await again.call(V4API.validate, body: Array("{}".utf8), factorSet: .possessionKnowledge)
        #expect(ok.statusCode == 200)
        let after = try await again.status()
        #expect(after.failedAttempts == 0)
        let keys = try #require(again.keys)
        #expect(try after.serverDistance(from: again.counter, counterDataMACKey: keys.counterDataMAC) == 0)
        second.server.stop()
    }

    @Test(
        "the activation service end to end: activate, status, validate, token, vault unlock, PIN change, remove",
        arguments: StoreBackend.available, [ProtocolAlgorithm.ecP384, .ecP384MLL3, .ecP384MLL5])
    func serviceLifecycle(backend: StoreBackend, algorithm: ProtocolAlgorithm) async throws {
        let s = try InProcessServer(backend: backend, algorithm: algorithm)
        defer { s.server.stop() }
        let keys = try SDKConfiguration(parsing: try s.server.configurationString()).keys.map(\.id)
        #expect(keys.contains(0x02) && keys.contains(0x03) == (algorithm == .ecP384MLL3))
        #expect(keys.contains(0x04) == (algorithm == .ecP384MLL5))
        let (device, id) = try await s.activeDevice(pin: "2580")
        #expect(device.configuration.algorithm == algorithm)
        let service = device.service
        #expect(try await service.fetchActivationStatus().state == .active)
        try await service.validatePassword(try TestSupport.pin("2580"))
        await #expect(throws: ActivationError.authentication) {
            try await service.validatePassword(try TestSupport.pin("0000"))
        }
        #expect(try await service.fetchActivationStatus().failCount == 1)
        let token = try await service.createToken(authentication: .possessionWithPassword(try TestSupport.pin("2580")))
        #expect(token.factorSet == .possessionKnowledge)
        try await service.removeToken(token.tokenId, authentication: .possession())
        let vault = try await service.unlockVault(authentication: .possessionWithPassword(try TestSupport.pin("2580")))
        #expect(vault.count == 32)
        vault.destroy()
        let current = try MutablePassword()
        for scalar in "2580".unicodeScalars { try current.addCharacter(scalar) }
        let change = try await service.beginPasswordChange(currentPassword: current)
        try await service.finishPasswordChange(newPassword: try TestSupport.pin("13579"), data: change)
        await #expect(throws: ActivationError.authentication) {
            try await service.validatePassword(try TestSupport.pin("2580"))
        }
        try await service.validatePassword(try TestSupport.pin("13579"))
        try await service.removeActivation(authentication: .possessionWithPassword(try TestSupport.pin("13579")))
        #expect(try s.server.activationServer.activationDetail(id).state == .removed)
    }

    @Test("a LEGACY_P256 server answers the V4 paths with a 400 naming its algorithm")
    func legacyRefusesV4() async throws {
        let s = try InProcessServer()
        let transport = try HTTPActivationTransport(baseEndpointURL: s.baseURL, client: ActivationClientConfiguration())
        let response = try await transport.send(
            TransportRequest(path: V4API.validate.path, body: Array("{}".utf8)), timeout: .seconds(10))
        #expect(response.statusCode == 400)
        #expect(String(decoding: response.body, as: UTF8.self).contains("LEGACY_P256"))
        s.server.stop()
    }

    @Test(
        "two securepin server EC_P384 processes on one PostgreSQL database: a V4 key from one opens a request at the other",
        .enabled(if: StoreBackend.clusterConnectionString != nil, StoreBackend.skipReason))
    func twoInstancesShareV4Keys() async throws {
        let directory = try ReferenceServerTests.temporaryDirectory()
        let store = try TestStore(.postgres, directory: directory)
        let token = try AdminToken.random()
        try AdminToken.store(token, to: directory + "/admin.token")
        let instances = try (0..<2).map { _ in
            try childServer(
                store: store, tokenFile: directory + "/admin.token", extraArguments: ["--algorithm", "EC_P384"])
        }
        defer { for instance in instances { instance.kill9() } }
        #expect(instances[0].configuration == instances[1].configuration)
        // The device's view of the application: the configuration both instances agreed on, read back.
        let reader = try PostgresActivationStore(
            connectionString: try #require(store.connectionString),
            storageKey: try ServerKeyFile.load(at: directory + "/server.sqlite.key"))
        var configuration = try reader.loadOrStoreConfiguration(
            { () throws(ActivationServerError) in throw .storage(reason: "no stored configuration") },
            restore: { (key, secret, master) throws(ActivationServerError) in
                try ActivationServerConfiguration(restoring: key, applicationSecret: secret, masterKeyPair: master)
            })
        let master = try reader.loadOrStoreV4MasterKey { () throws(ActivationServerError) in
            throw .storage(reason: "no stored V4 master key")
        }
        try configuration.serve(.ecP384, masterKeyPair: master)
        let devices = try instances.map { instance in
            try V4TestDevice(
                configuration: configuration,
                transport: try HTTPActivationTransport(
                    baseEndpointURL: instance.baseURL, client: ActivationClientConfiguration()))
        }
        let office = try BackOfficeClient(baseURL: URL(string: instances[1].baseURL)!, token: token)
        let prepared = try await office.initActivation(userId: "two-instances")
        #expect(try await devices[0].activate(code: prepared.activationCode).statusCode == 200)
        try await office.commit(devices[0].activationId)
        devices[1].activationId = devices[0].activationId
        devices[1].keys = devices[0].keys
        devices[1].serverPublicKey = devices[0].serverPublicKey

        // A status request encrypted under a key instance 0 issued, sent to instance 1.
        let key = try await devices[0].temporaryKey(activation: true)
        let context = try devices[0].context(key, .genericActivation, activation: true)
        let (request, nonce) = try context.encryptRequest(
            try V4TestDevice.secure(Array("{}".utf8)), timestampMilliseconds: devices[0].now)
        let body = try WireCoding.encode(request)
        let header = [
            V4EncryptionHeader.name: V4EncryptionHeader(
                applicationKey: devices[0].applicationKey, activationId: devices[0].activationId
            ).value
        ]
        let answered = await devices[1].send(V4API.activationStatus.path, headers: header, body: body)
        #expect(answered.statusCode == 200)
        let plain = try context.decryptResponse(
            try WireCoding.decode(V4EncryptedResponse.self, answered.body), nonce: nonce)
        let status = try WireCoding.decode(V4StatusResponse.self, V4TestDevice.reveal(plain))
        let blob = try #require(Data(base64Encoded: status.activationStatus).map { [UInt8]($0) })
        let keys = try #require(devices[0].keys)
        #expect(try V4StatusBlob(opening: blob, statusMACKey: keys.statusMAC).state == .active)
        // The same request again, to the instance that issued the key: its nonce was used.
        let replayed = await devices[0].send(V4API.activationStatus.path, headers: header, body: body)
        #expect(replayed.statusCode != 200)
    }
}
