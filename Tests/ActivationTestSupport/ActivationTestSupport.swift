import Activation
import ActivationServer
import Foundation
import PinVault
import PowerAuthProtocol
import SecureCore
import Synchronization

/// Test support shared by the activation client and server test targets.

/// A clock the test moves by hand; `sleep` advances it and runs a hook.
package final class TestClock: ActivationClock, @unchecked Sendable {
    private let state = Mutex((now: Date(timeIntervalSince1970: 1_800_000_000), sleeps: [Duration]()))
    private let hook = Mutex<(@Sendable (Int) async -> Void)?>(nil)

    package func now() -> Date { state.withLock { $0.now } }
    package func advance(seconds: TimeInterval) { state.withLock { $0.now = $0.now.addingTimeInterval(seconds) } }
    package var sleeps: [Duration] { state.withLock { $0.sleeps } }
    package func onSleep(_ body: @escaping @Sendable (Int) async -> Void) { hook.withLock { $0 = body } }

    package func sleep(for duration: Duration) async throws {
        try Task.checkCancellation()
        let count = state.withLock { s in
            s.sleeps.append(duration)
            s.now = s.now.addingTimeInterval(TimeInterval(duration.components.seconds))
            return s.sleeps.count
        }
        if let body = hook.withLock({ $0 }) { await body(count) }
        await Task.yield()
        try Task.checkCancellation()
    }
}

/// The in-process transport with a switch that makes the network fail, and
/// a log of what was sent.
package final class TestTransport: ActivationTransport, @unchecked Sendable {
    package let inner: InProcessTransport
    private let state = Mutex((offline: false, failuresLeft: 0, sent: [TransportRequest]()))

    package init(server: ActivationServer) { inner = InProcessTransport(server: server) }

    package func setOffline(_ offline: Bool) { state.withLock { $0.offline = offline } }
    package func failNext(_ count: Int) { state.withLock { $0.failuresLeft = count } }
    package var sent: [TransportRequest] { state.withLock { $0.sent } }

    package func send(_ request: TransportRequest, timeout: Duration) async throws(TransportError) -> TransportResponse
    {
        let fail = state.withLock { s in
            if s.offline { return true }
            if s.failuresLeft > 0 {
                s.failuresLeft -= 1
                return true
            }
            s.sent.append(request)
            return false
        }
        if fail { throw .network(reason: "the test network is down") }
        return try await inner.send(request, timeout: timeout)
    }
}

/// Storage that can be told to refuse writes, over a real directory.
package final class FlakyStorage: DeviceActivationStorage, @unchecked Sendable {
    package let inner: FileActivationStorage
    private let failing = Mutex(false)

    package init(_ inner: FileActivationStorage) { self.inner = inner }
    package func setFailing(_ on: Bool) { failing.withLock { $0 = on } }

    package func read(_ name: String) throws(ActivationError) -> [UInt8]? { try inner.read(name) }
    package func readSecret(_ name: String) throws(ActivationError) -> SecureBytes? { try inner.readSecret(name) }
    package func remove(_ name: String) throws(ActivationError) { try inner.remove(name) }
    package func tokenNames(instanceId: String) throws(ActivationError) -> [String] {
        try inner.tokenNames(instanceId: instanceId)
    }
    package func withExclusiveAccess<R>(_ body: () throws(ActivationError) -> R) throws(ActivationError) -> R {
        try inner.withExclusiveAccess(body)
    }
    package func write(_ name: String, _ bytes: [UInt8]) throws(ActivationError) {
        if failing.withLock({ $0 }) { throw .storage(operation: "write", errno: 28) }
        try inner.write(name, bytes)
    }
    package func writeSecret(_ name: String, _ bytes: SecureBytes) throws(ActivationError) {
        if failing.withLock({ $0 }) { throw .storage(operation: "write", errno: 28) }
        try inner.writeSecret(name, bytes)
    }
}

package func pin(_ digits: String) throws -> Password {
    let p = try MutablePassword()
    for s in digits.unicodeScalars { try p.addCharacter(s) }
    defer { p.destroy() }
    return try p.copyToImmutable()
}

package func mutablePin(_ digits: String) throws -> MutablePassword {
    let p = try MutablePassword()
    for s in digits.unicodeScalars { try p.addCharacter(s) }
    return p
}

package func temporaryDirectory() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("spc-activation-\(UUID().uuidString)").path
}

/// Expects `body` to throw exactly `expected`.
package func expectError<R>(
    _ expected: ActivationError, _ body: () async throws(ActivationError) -> R
) async -> Bool {
    do {
        _ = try await body()
        return false
    } catch {
        return error == expected
    }
}

/// A server, a transport, a storage directory and a configuration, wired
/// together; ``makeService()`` opens the client as an application would.
package struct Harness {
    package let clock = TestClock()
    package let serverConfiguration: ActivationServerConfiguration
    package let server: ActivationServer
    package let transport: TestTransport
    package let directory: String
    package let storage: FlakyStorage
    package let configuration: ActivationConfiguration

    /// The suite the server serves and the client activates with.
    package let algorithm: ProtocolAlgorithm

    package init(
        algorithm: ProtocolAlgorithm = .legacyP256, maxFailedAttempts: Int = 5,
        failureBlockDuration: TimeInterval? = nil, lookAhead: Int = 20,
        biometric: BiometricConfiguration = BiometricConfiguration(),
        statusCustomObject: ActivationServer.StatusCustomObject? = nil
    ) throws {
        self.algorithm = algorithm
        var serverConfiguration = try ActivationServerConfiguration.generate(
            lookAhead: lookAhead, maxFailedAttempts: maxFailedAttempts, failureBlockDuration: failureBlockDuration)
        try serverConfiguration.serve(algorithm)
        self.serverConfiguration = serverConfiguration
        server = try ActivationServer(
            configuration: serverConfiguration, clock: clock, statusCustomObject: statusCustomObject)
        transport = TestTransport(server: server)
        directory = temporaryDirectory()
        storage = FlakyStorage(try FileActivationStorage(directory: directory))
        configuration = try ActivationConfiguration(
            instanceId: "com.example.bank", baseEndpointURL: "https://bank.example/enrollment-server",
            configuration: try serverConfiguration.configurationString(), algorithm: algorithm.rawValue,
            biometricConfiguration: biometric, knowledgeKeyParameters: .testing)
    }

    package func makeService(authenticator: (any BiometricAuthenticator)? = nil) throws -> ActivationService {
        try ActivationService(
            configuration: configuration, storage: storage, transport: transport, authenticator: authenticator,
            clock: clock)
    }

    /// Prepares an activation on the server, creates it on the device and
    /// (by default) commits it, then confirms it where the generation has the step (V4).
    @discardableResult
    package func activate(
        _ service: ActivationService, pin text: String = "1234", commit: Bool = true, biometry: Bool = false
    )
        async throws -> String
    {
        let prepared = try server.initActivation(userId: "alice")
        let result = try await service.createActivation(
            activationCode: prepared.activationCode, name: "test phone", password: try pin(text),
            enableBiometry: biometry)
        if commit {
            try server.commitActivation(result.activationId)
            // A V4 activation is confirmed as an app does after the commit (activation/confirm
            // also turns on biometry requested at activation); V3.3 has no such step.
            if await service.needsConfirmation() { try await service.confirmActivation(password: try pin(text)) }
        }
        return result.activationId
    }
}
