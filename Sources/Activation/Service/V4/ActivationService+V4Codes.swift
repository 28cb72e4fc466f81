import Biometry
import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore

// V4 authentication codes on the client.
extension ActivationService {
    // MARK: - Codes

    /// A V4 authorization header; the counter moves (and is stored) before anything is sent.
    func v4Sign(_ endpoint: V4API.Endpoint, body: [UInt8], authentication: ActivationAuthentication)
        async throws(ActivationError) -> V4AuthorizationHeader
    {
        guard let uriIdentifier = endpoint.uriIdentifier else {
            throw .invalidActivationState(reason: "a signed endpoint needs a resource identifier")
        }
        return try await v4Sign(
            method: "POST", uriIdentifier: uriIdentifier, body: body, authentication: authentication)
    }

    func v4Sign(method: String, uriIdentifier: String, body: [UInt8], authentication: ActivationAuthentication)
        async throws(ActivationError) -> V4AuthorizationHeader
    {
        guard v4 != nil else { throw .missingActivation }
        let kind = try authentication.usableKind(now: clock.now())
        let factorSet = authentication.factorSet
        var biometry: SecureBytes?
        defer { biometry?.destroy() }
        switch kind {
        case .biometryPrompt(let prompt):
            biometry = try await v4BiometryKey(prompt: prompt)
        case .biometryKey(let key, _):
            biometry = try coreStep { () throws(SecureCoreError) in try key.copy() }
        case .possession, .password:
            break
        }
        let biometryKey = biometry
        let nonce = try coreStep { () throws(SecureCoreError) in
            try SecureRandom.bytes(count: ProtocolConstants.nonceByteCount)
        }
        let secret = configuration.sdkConfiguration.applicationSecret
        let data = try protocolStep { () throws(ProtocolError) in
            try RequestData(method: method, uriIdentifier: uriIdentifier, nonce: nonce, body: body)
                .normalized(applicationSecret: secret)
        }
        let code = try v4Code(
            data: data, kind: kind, factorSet: factorSet, biometryKey: biometryKey, format: .online)
        guard let activationId = v4?.state.activationId else { throw .missingActivation }
        let applicationKey = configuration.sdkConfiguration.applicationKey
        return try protocolStep { () throws(ProtocolError) in
            try V4AuthorizationHeader(
                activationId: activationId, applicationKey: applicationKey, nonce: nonce, factorSet: factorSet,
                authenticationCode: code)
        }
    }

    /// The V4 offline code: decimal components over the offline data (`POST`, application
    /// secret `offline`, as in V3.3), the counter moved and stored first.
    func v4OfflineCode(uriIdentifier: String, nonce: [UInt8], body: [UInt8], authentication: ActivationAuthentication)
        async throws(ActivationError) -> String
    {
        guard v4 != nil else { throw .missingActivation }
        let kind = try authentication.usableKind(now: clock.now())
        var biometry: SecureBytes?
        defer { biometry?.destroy() }
        switch kind {
        case .biometryPrompt(let prompt):
            biometry = try await v4BiometryKey(prompt: prompt)
        case .biometryKey(let key, _):
            biometry = try coreStep { () throws(SecureCoreError) in try key.copy() }
        case .possession, .password:
            break
        }
        let data = try protocolStep { () throws(ProtocolError) in
            try RequestData.offline(uriIdentifier: uriIdentifier, nonce: nonce, body: body).normalizedOffline
        }
        return try v4Code(
            data: data, kind: kind, factorSet: authentication.factorSet, biometryKey: biometry,
            format: .offline(digits: configuration.offlineAuthenticationCodeComponentLength))
    }

    /// Computes a V4 code over `data` with the stored counter and moves the counter, all under
    /// the storage lock (the counter is stored before the code leaves).
    func v4Code(
        data: [UInt8], kind: ActivationAuthentication.Kind, factorSet: FactorSet, biometryKey: SecureBytes?,
        format: V4AuthenticationCodeFormat
    ) throws(ActivationError) -> String {
        try v4Mutate { (activation) throws(ActivationError) -> String in
            var knowledge: SecureBytes?
            defer { knowledge?.destroy() }
            if case .password(let password) = kind {
                knowledge = try v4Unwrap(activation.state.knowledgeKey, password: password)
            }
            let counter = try activation.state.currentCounter
            let keys = activation.keys
            let code = try protocolStep { () throws(ProtocolError) in
                try V4AuthenticationCode.compute(
                    factorSet: factorSet,
                    keys: V4FactorKeys(possession: keys.possession, knowledge: knowledge, biometry: biometryKey),
                    counter: counter, data: data, format: format)
            }
            try activation.state.advanceCounter()
            return code
        }
    }

    /// Reads the stored V4 state under the storage lock, applies `change`, writes it back.
    func v4Mutate<R>(_ change: (inout V4ClientActivation) throws(ActivationError) -> R) throws(ActivationError) -> R {
        guard let known = v4 else { throw .missingActivation }
        let names = configuration.storageNames
        let instanceId = configuration.instanceId
        return try storage.withExclusiveAccess { () throws(ActivationError) -> R in
            guard let bytes = try storage.read(names.state) else { throw .missingActivation }
            let current = try LocalV4State.decode(bytes, instanceId: instanceId)
            guard current.activationId == known.state.activationId, current.keyCheck == known.state.keyCheck else {
                throw .invalidActivationState(reason: "the stored activation was replaced")
            }
            var activation = V4ClientActivation(state: current, keys: known.keys)
            let result = try change(&activation)
            try storage.write(names.state, activation.state.encoded())
            v4 = activation
            return result
        }
    }
}
