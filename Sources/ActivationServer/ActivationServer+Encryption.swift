import Foundation
import PowerAuthProtocol
import SecureCore

/// An encrypted request, opened: its plaintext and the envelope its response is sealed with.
struct OpenedRequest {
    let plaintext: SecureBytes?
    let envelope: ECIESEnvelope
}

extension ActivationServer {
    /// The versions whose ECIES requests this server decrypts: 3.2 and 3.3, which carry
    /// a timestamp, so a replay can be refused within a bounded window. (Upstream also
    /// takes 3.0 and 3.1; see `docs/activation-api.md`, "Where we differ".)
    static let encryptionVersions: Set<ProtocolVersion> = [.v3_2, .v3_3]

    /// `X-PowerAuth-Encryption` of an unsigned encrypted request, checked against the
    /// scope: this application, an activation identifier exactly in activation scope.
    func encryptionHeader(_ request: TransportRequest, scope: ECIES.Scope) throws(ActivationServerError)
        -> EncryptionHeader
    {
        guard let value = request.header(EncryptionHeader.name), let header = try? EncryptionHeader.parse(value),
            header.applicationKey == applicationKey, (header.activationId != nil) == (scope == .activation)
        else { throw .encryptionFailed }
        return header
    }

    /// Decrypts a bare encrypted body: the version's fields, the key (the temporary key
    /// it names in 3.3; otherwise the master key, or the activation's key in activation
    /// scope), the MAC, then the replay window. Every failure is
    /// ``ActivationServerError/encryptionFailed`` (or the replay cache's two errors).
    func openRequest(
        _ body: [UInt8], sharedInfo1: ECIES.SharedInfo1, context: EncryptionHeader, keys: FactorKeys?
    ) throws(ActivationServerError) -> OpenedRequest {
        let version = context.version
        guard Self.encryptionVersions.contains(version),
            let wire = try? WireCoding.decode(EncryptedRequestBody.self, body),
            let cryptogram = try? wire.cryptogram()
        else { throw .encryptionFailed }
        let activationId = sharedInfo1.scope == .activation ? context.activationId : nil
        if sharedInfo1.scope == .activation, activationId == nil || keys == nil { throw .encryptionFailed }
        do throws(ActivationServerError) {
            return try open(
                cryptogram, version: version, sharedInfo1: sharedInfo1, applicationKey: context.applicationKey,
                activationId: activationId, keys: keys)
        } catch .temporaryKeyFailure {
            // Upstream answers an unknown temporary key as any other decryption failure.
            throw .encryptionFailed
        }
    }

    /// Opens an ECIES 3.3 request cryptogram in application scope sent to an endpoint that is not
    /// PowerAuth's own (the PIN vault's server binding): the temporary key it names, which
    /// `POST /pa/v3/keystore/create` issued in application scope for this application, then the
    /// MAC, then the replay window (±60 s, each ephemeral key and nonce once), as every encrypted
    /// PowerAuth endpoint of this server does.
    /// - Parameters:
    ///   - cryptogram: the request cryptogram; it must name a `temporaryKeyId`.
    ///   - sharedInfo1: the purpose the request was encrypted for.
    /// - Returns: the plaintext (`nil` when empty) and the envelope that seals the response.
    /// - Throws: ``ActivationServerError/temporaryKeyFailure`` when the temporary key is unknown,
    ///   expired or issued for another scope (the client fetches a new one);
    ///   ``ActivationServerError/requestExpired`` or ``ActivationServerError/replayedRequest``;
    ///   ``ActivationServerError/encryptionFailed`` for every other failure.
    public func openApplicationRequest(_ cryptogram: ECIESCryptogram, sharedInfo1: ECIES.SharedInfo1)
        throws(ActivationServerError) -> (plaintext: SecureBytes?, envelope: ECIESEnvelope)
    {
        guard sharedInfo1.scope == .application else { throw .encryptionFailed }
        let opened = try open(
            cryptogram, version: .v3_3, sharedInfo1: sharedInfo1, applicationKey: applicationKey, activationId: nil,
            keys: nil)
        return (opened.plaintext, opened.envelope)
    }

    /// The key, the MAC and the replay window of one request cryptogram. An unknown temporary key is
    /// ``ActivationServerError/temporaryKeyFailure``; the other failures as ``openRequest(_:sharedInfo1:context:keys:)``.
    private func open(
        _ cryptogram: ECIESCryptogram, version: ProtocolVersion, sharedInfo1: ECIES.SharedInfo1,
        applicationKey: String, activationId: String?, keys: FactorKeys?
    ) throws(ActivationServerError) -> OpenedRequest {
        let now = nowMilliseconds
        let privateKey: SecureBytes
        var ownedKey: SecureBytes?
        defer { ownedKey?.destroy() }
        if version == .v3_3 {
            guard let temporaryKeyId = cryptogram.temporaryKeyId else { throw .encryptionFailed }
            // The request's own copy: nothing can destroy it while the request runs.
            privateKey = try temporaryKeys.privateKey(
                temporaryKeyId: temporaryKeyId, applicationKey: applicationKey, activationId: activationId, now: now)
            ownedKey = privateKey
        } else if let activationId {
            guard let record = try store.fetch(activationId: activationId) else { throw .encryptionFailed }
            privateKey = try record.serverPrivateKey.key()
        } else {
            privateKey = configuration.masterKeyPair.privateKey
        }
        let opened: (plaintext: SecureBytes?, envelope: ECIESEnvelope)
        do throws(ECIESError) {
            let configuration = try ECIESConfiguration(
                version: version, sharedInfo1: sharedInfo1, applicationKey: applicationKey,
                applicationSecret: applicationSecret, activationId: activationId, transportKey: keys?.transport,
                temporaryKeyId: cryptogram.temporaryKeyId)
            opened = try ECIESDecryptor(configuration: configuration, privateKey: privateKey).decryptRequest(cryptogram)
        } catch {
            throw .encryptionFailed
        }
        do throws(ActivationServerError) {
            // After the MAC: a forged request cannot fill the cache or burn a genuine pair.
            try replayCache.accept(
                ephemeralPublicKey: cryptogram.ephemeralPublicKey ?? [], nonce: cryptogram.nonce ?? [],
                timestamp: Int64(clamping: cryptogram.timestamp ?? 0), now: now)
        } catch {
            opened.plaintext?.destroy()
            throw error
        }
        return OpenedRequest(plaintext: opened.plaintext, envelope: opened.envelope)
    }

    /// Seals a response plaintext with the request's envelope.
    func seal(_ plaintext: SecureBytes?, envelope: ECIESEnvelope) throws(ActivationServerError)
        -> EncryptedResponseBody
    {
        defer { plaintext?.destroy() }
        do throws(ECIESError) {
            return EncryptedResponseBody(try envelope.encryptResponse(plaintext, now: clock.now()))
        } catch {
            throw .protocolFailure(.ecies(error))
        }
    }

    /// Reads a public JSON plaintext (`{}` when it is empty).
    static func decodePlaintext<T: Decodable>(_ plaintext: SecureBytes?, _ type: T.Type) throws(ActivationServerError)
        -> T
    {
        let bytes = plaintext.map { secure in secure.withUnsafeBytes { Array($0) } } ?? Array("{}".utf8)
        do throws(ProtocolError) {
            return try WireCoding.decode(type, bytes)
        } catch {
            throw .malformedRequest(reason: "the decrypted body is not a \(T.self)")
        }
    }

    /// Writes a public JSON plaintext into secure memory (the envelope encrypts from there).
    static func encodePlaintext(_ value: some Encodable) throws(ActivationServerError) -> SecureBytes {
        let bytes = try protocolStep { () throws(ProtocolError) in try WireCoding.encode(value) }
        return try protocolStep { () throws(ProtocolError) in
            try lift { () throws(SecureCoreError) in
                try bytes.withUnsafeBufferPointer { (buffer) throws(SecureCoreError) in
                    try SecureBytes(copying: UnsafeRawBufferPointer(buffer))
                }
            }
        }
    }
}
