import Activation
import ActivationServer
import Foundation
import PowerAuthProtocol
import SecureCore
import Testing

// snippet.begin activation
/// Activates this device against a PowerAuth server, then signs a request with the PIN.
func activate(
    code: String, pin: Password, configurationString: String, storageDirectory: String,
    transport: any ActivationTransport
) async throws -> String {
    let configuration = try ActivationConfiguration(
        instanceId: "com.example.bank", baseEndpointURL: "https://bank.example/enrollment-server",
        configuration: configurationString,  // the string the server prints; public
        algorithm: "LEGACY_P256")  // a V3.3 server; the default is EC_P384_ML_L3 (keys 02 and 03)
    let service = try ActivationService(
        configuration: configuration, storage: try FileActivationStorage(directory: storageDirectory),
        transport: transport, authenticator: nil)
    let result = try await service.createActivation(activationCode: code, name: "My phone", password: pin)
    // Compare this with what the back office shows before it commits the activation.
    _ = try await service.activationFingerprint()
    return result.activationId
}
// snippet.end

@Test("article: activation against a PowerAuth server") func activating() async throws {
    let server = try ActivationServer(configuration: try ActivationServerConfiguration.generate())
    let prepared = try server.initActivation(userId: "alice")
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("snippet-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let pin = try snippetPIN("2468")
    let id = try await activate(
        code: prepared.activationCode, pin: pin,
        configurationString: try server.configuration.configurationString(), storageDirectory: directory,
        transport: InProcessTransport(server: server))
    #expect(id == prepared.activationId)
}
