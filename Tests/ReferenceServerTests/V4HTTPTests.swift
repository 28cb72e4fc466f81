import Activation
import ActivationHTTP
import ActivationServer
import ActivationTestSupport
import Foundation
import PowerAuthProtocol
import ReferenceServer
import SecureCore
import TestSupport
import Testing

@Suite("Protocol V4 (EC_P384) over HTTP against the SQLite reference server")
struct V4HTTPTests {
    @Test("activate, status, validate, a counted wrong PIN; a restart keeps the V4 keys, counter and master key")
    func lifecycleAcrossRestart() async throws {
        let first = try InProcessServer(algorithm: .ecP384)
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

        let second = try InProcessServer(directory: first.directory, algorithm: .ecP384)
        #expect(try second.server.configurationString() == configurationString)
        let again = try V4TestDevice(
            configuration: second.server.activationServer.configuration,
            transport: try HTTPActivationTransport(
                baseEndpointURL: second.baseURL, client: ActivationClientConfiguration()))
        again.activationId = device.activationId
        again.keys = device.keys
        again.counter = device.counter
        again.serverPublicKey = device.serverPublicKey
        let ok = try await again.call(V4API.validate, body: Array("{}".utf8), factorSet: .possessionKnowledge)
        #expect(ok.statusCode == 200)
        let after = try await again.status()
        #expect(after.failedAttempts == 0)
        let keys = try #require(again.keys)
        #expect(try after.serverDistance(from: again.counter, counterDataMACKey: keys.counterDataMAC) == 0)
        second.server.stop()
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
}
