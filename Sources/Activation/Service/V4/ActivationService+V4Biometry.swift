import Biometry
import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore

// V4 biometry on the client.
extension ActivationService {
    // MARK: - Biometry

    /// `biometry/add` with the PIN: the server's new biometry key goes into the authenticator
    /// (never into the state files). When biometry was on already, the server keeps the new
    /// key as "next" until its first use.
    func v4AddBiometry(password: Password) async throws(ActivationError) {
        guard let authenticator else { throw .biometryNotAvailable(.notSupported) }
        guard authenticator.systemStatus == .available else { throw .biometryNotAvailable(authenticator.systemStatus) }
        guard let suite = v4?.state.suite else { throw .missingActivation }
        let (kem, shared) = try protocolStep { () throws(ProtocolError) in
            try V4SharedSecret.makeRequest(algorithm: suite)
        }
        defer {
            kem.keyPair.privateKey.destroy()
            kem.destroy()
        }
        let request = try securePlaintext(shared)
        defer { request.destroy() }
        let answer = try await v4SendEncrypted(
            V4API.biometryAdd, plaintext: request, authentication: .possessionWithPassword(password))
        let response = try decodePlaintext(answer, V4SharedSecretResponse.self, path: V4API.biometryAdd.path)
        let key: SecureBytes
        do throws(ProtocolError) {
            key = try V4SharedSecret.finish(kem, response: response)
        } catch {
            throw .invalidResponse(reason: "biometry/add: the shared secret does not complete")
        }
        defer { key.destroy() }
        try mapBiometry { () throws(BiometryError) in
            try authenticator.storeKey(key, account: v4BiometryAccount)
        }
        let enrolled = Base64.encode(authenticator.enrolledSetFingerprint)
        do {
            try v4Mutate { (a) throws(ActivationError) in
                a.state.biometryEnabled = true
                a.state.enrolledSetFingerprint = enrolled
            }
        } catch {
            authenticator.deleteKey(account: v4BiometryAccount)
            throw error
        }
    }

    /// `biometry/remove` (possession), then the local key and flag.
    func v4RemoveBiometry() async throws(ActivationError) {
        guard let current = v4 else { throw .missingActivation }
        guard current.state.biometryEnabled == true else { throw .biometryNotConfigured }
        try await v4Send(V4API.biometryRemove, body: Array("{}".utf8), authentication: .possession())
        try v4Mutate { (a) throws(ActivationError) in
            a.state.biometryEnabled = false
            a.state.enrolledSetFingerprint = nil
        }
        authenticator?.deleteKey(account: v4BiometryAccount)
    }

    /// The biometry key from the authenticator, as V3.3 reads it (invalidated after an
    /// enrolment change when so configured).
    func v4BiometryKey(prompt: String) async throws(ActivationError) -> SecureBytes {
        guard let authenticator else { throw .biometryNotAvailable(.notSupported) }
        guard let current = v4 else { throw .missingActivation }
        guard current.state.biometryEnabled == true else { throw .biometryNotConfigured }
        let biometric = configuration.biometricConfiguration
        if biometric.invalidateBiometricFactorAfterChange && !biometric.allowFallbackToDevicePasscode,
            current.state.enrolledSetFingerprint != Base64.encode(authenticator.enrolledSetFingerprint)
        {
            authenticator.deleteKey(account: v4BiometryAccount)
            try v4Mutate { (a) throws(ActivationError) in
                a.state.biometryEnabled = false
                a.state.enrolledSetFingerprint = nil
            }
            throw .biometryInvalidated
        }
        do throws(BiometryError) {
            return try await authenticator.evaluate(
                prompt: prompt, account: v4BiometryAccount, configuration: biometric)
        } catch {
            throw ActivationError(biometry: error)
        }
    }

    func v4RemoveActivation(authentication: ActivationAuthentication) async throws(ActivationError) {
        try await v4Send(V4API.activationRemove, body: Array("{}".utf8), authentication: authentication)
        try removeActivationLocal()
    }
}
