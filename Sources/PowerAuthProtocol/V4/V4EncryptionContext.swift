import SecureCore

/// The `SHARED_INFO_1` constants of V4 end-to-end encryption: one per endpoint, part of the key context.
public enum V4SharedInfo1: String, Sendable, CaseIterable {
    /// Generic encryption in application scope.
    case genericApplication = "/pa/generic/application"
    /// Generic encryption in activation scope (also the activation status, as the SDK sends it).
    case genericActivation = "/pa/generic/activation"
    /// The inner layer of activation creation (application scope).
    case activation = "/pa/activation"
    /// Upgrade start (application scope).
    case upgradeStart = "/pa/upgrade/start"
    /// Vault unlock (activation scope).
    case vaultUnlock = "/pa/vault/unlock"
    /// Token creation (activation scope).
    case tokenCreate = "/pa/token/create"
    /// Password change (activation scope).
    case passwordChange = "/pa/password/change"
    /// Biometry addition (activation scope).
    case biometryAdd = "/pa/biometry/add"
}

/// The scope of a V4 end-to-end encrypted exchange, which decides `SH2` and the associated data.
public enum V4EncryptionScope: Sendable {
    /// Application scope: `SH2 = SHA3-256(APP_SECRET)`.
    case application
    /// Activation scope: `SH2 = KMAC256(KEY_E2EE_SHARED_INFO2, APP_SECRET, 32, "PA4SH2")`, and the
    /// activation identifier enters the associated data.
    /// - Parameters:
    ///   - activationId: the activation's identifier.
    ///   - sharedInfo2Key: `KEY_E2EE_SHARED_INFO2` (``V4KeyLabel/sharedInfo2``), in secure memory.
    case activation(activationId: String, sharedInfo2Key: SecureBytes)
}

/// One temporary key's V4 end-to-end encryption (request and response, both sides), with the
/// byte layouts of the final V4 protocol:
///
/// - `NONCE` = 24 random bytes = `REQ_NONCE(12) ‖ RESP_NONCE(12)`, the halves different;
/// - `KC = "4.0" ‖ SH1 ‖ NONCE` (the key context of the ``V4AEAD``);
/// - `AD = LV("4.0") ‖ LV(APP_KEY) [‖ LV(ACTIVATION_ID)] ‖ LV(TEMPORARY_KEY_ID) ‖
///   LV(u64be(timestamp_ms)) ‖ LV(NONCE) ‖ LV(SH2)`, `LV(x) = u32be(|x|) ‖ x`, with the timestamp
///   of the message itself;
/// - a request is sealed with `REQ_NONCE`, its response with `RESP_NONCE`, both under
///   `KEY_TEMPORARY_SHARED_SECRET`.
///
/// Verified by upstream's `E2ee_Application_Scope_Test_Vectors_40.json` and
/// `E2ee_Activation_Scope_Test_Vectors_40.json` (25 request/response pairs each). The JSON
/// envelopes and the replay rules are the endpoints' (not here yet).
public struct V4EncryptionContext: Sendable {
    /// The protocol version that enters the key context and the associated data.
    public static let version = "4.0"
    /// The size of the request's `nonce`.
    public static let nonceByteCount = 24

    /// The application key, as issued (Base64 text).
    public let applicationKey: String
    /// The temporary key's identifier (`TEMPORARY_KEY_ID`).
    public let temporaryKeyId: String
    /// The endpoint's `SHARED_INFO_1`.
    public let sharedInfo1: String
    /// The scope.
    public let scope: V4EncryptionScope
    /// `SH2` (public: it is bound into the associated data).
    public let sharedInfo2: [UInt8]
    private let sharedSecret: SecureBytes

    /// Sets up encryption under one temporary key.
    /// - Parameters:
    ///   - sharedSecret: `KEY_TEMPORARY_SHARED_SECRET` (32 bytes), in secure memory.
    ///   - temporaryKeyId: its identifier.
    ///   - applicationKey: the application key (Base64 text as issued).
    ///   - applicationSecret: the application secret (Base64 of 16 bytes as issued); V4 uses its
    ///     decoded bytes.
    ///   - sharedInfo1: the endpoint's `SHARED_INFO_1` (see ``V4SharedInfo1``).
    ///   - scope: application or activation scope.
    /// - Throws: ``ProtocolError/malformedBase64(field:)``, ``ProtocolError/invalidLength(field:expected:actual:)``,
    ///   ``ProtocolError/core(_:)``.
    public init(
        sharedSecret: SecureBytes, temporaryKeyId: String, applicationKey: String, applicationSecret: String,
        sharedInfo1: String, scope: V4EncryptionScope
    ) throws(ProtocolError) {
        guard sharedSecret.count == 32 else {
            throw .invalidLength(field: "sharedSecret", expected: 32, actual: sharedSecret.count)
        }
        let secret = try Base64.decode(
            applicationSecret, field: "applicationSecret", count: ProtocolConstants.applicationKeyByteCount)
        switch scope {
        case .application:
            sharedInfo2 = try lift { () throws(SecureCoreError) in try SHA3.hash256(secret) }
        case .activation(_, let key):
            guard key.count == 32 else {
                throw .invalidLength(field: "sharedInfo2Key", expected: 32, actual: key.count)
            }
            sharedInfo2 = try lift { () throws(SecureCoreError) in
                try KMAC256.authenticate(secret, key: key, customization: Array("PA4SH2".utf8), count: 32)
            }
        }
        self.sharedSecret = sharedSecret
        self.temporaryKeyId = temporaryKeyId
        self.applicationKey = applicationKey
        self.sharedInfo1 = sharedInfo1
        self.scope = scope
    }

    /// A fresh 24-byte `NONCE` whose two halves differ.
    /// - Returns: the nonce.
    /// - Throws: ``ProtocolError/core(_:)`` when the random generator fails.
    public static func randomNonce() throws(ProtocolError) -> [UInt8] {
        var nonce: [UInt8]
        repeat {
            let random = try lift { () throws(SecureCoreError) in try SecureRandom.bytes(count: nonceByteCount) }
            nonce = random
        } while nonce[0..<12].elementsEqual(nonce[12..<24])
        return nonce
    }

    /// `KC = "4.0" ‖ SH1 ‖ NONCE`.
    /// - Parameter nonce: the request's 24-byte nonce.
    /// - Returns: the key context.
    public func keyContext(nonce: [UInt8]) -> [UInt8] {
        Array(Self.version.utf8) + Array(sharedInfo1.utf8) + nonce
    }

    /// The associated data of one message.
    /// - Parameters:
    ///   - timestampMilliseconds: that message's timestamp.
    ///   - nonce: the request's 24-byte nonce.
    /// - Returns: `AD0 ‖ LV(u64be(timestamp)) ‖ LV(NONCE) ‖ LV(SH2)`.
    public func associatedData(timestampMilliseconds: UInt64, nonce: [UInt8]) -> [UInt8] {
        func lv(_ bytes: [UInt8]) -> [UInt8] {
            let n = UInt32(bytes.count)
            return [
                UInt8(n >> 24), UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8),
                UInt8(truncatingIfNeeded: n),
            ] + bytes
        }
        var ad = lv(Array(Self.version.utf8)) + lv(Array(applicationKey.utf8))
        if case .activation(let activationId, _) = scope { ad += lv(Array(activationId.utf8)) }
        ad += lv(Array(temporaryKeyId.utf8))
        ad += lv((0..<8).map { UInt8(truncatingIfNeeded: timestampMilliseconds >> (56 - 8 * UInt64($0))) })
        return ad + lv(nonce) + lv(sharedInfo2)
    }

    /// The client seals a request (the `encryptedData` of the request JSON).
    /// - Parameters:
    ///   - plaintext: the request body, in secure memory; `nil` for an empty one.
    ///   - nonce: a fresh 24-byte nonce (``randomNonce()``), sent beside the data.
    ///   - timestampMilliseconds: the request's timestamp, sent beside the data.
    /// - Returns: `REQ_NONCE ‖ tag ‖ ciphertext`.
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)``, ``ProtocolError/malformedMessage(reason:)``
    ///   (nonce halves equal), ``ProtocolError/core(_:)``.
    public func sealRequest(_ plaintext: SecureBytes?, nonce: [UInt8], timestampMilliseconds: UInt64)
        throws(ProtocolError) -> [UInt8]
    {
        try seal(plaintext, nonce: nonce, half: 0, timestampMilliseconds: timestampMilliseconds)
    }

    /// The server opens a request.
    /// - Parameters:
    ///   - sealed: the request's `encryptedData`.
    ///   - nonce: the request's 24-byte `nonce`.
    ///   - timestampMilliseconds: the request's `timestamp` (its window is the caller's to check).
    /// - Returns: the body in secure memory, `nil` when it is empty.
    /// - Throws: ``ProtocolError/core(_:)`` (`SecureCoreError.authenticationFailed`),
    ///   ``ProtocolError/malformedMessage(reason:)`` (the data does not start with `REQ_NONCE`),
    ///   ``ProtocolError/invalidLength(field:expected:actual:)``.
    public func openRequest(_ sealed: [UInt8], nonce: [UInt8], timestampMilliseconds: UInt64)
        throws(ProtocolError) -> SecureBytes?
    {
        try open(sealed, nonce: nonce, half: 0, timestampMilliseconds: timestampMilliseconds)
    }

    /// The server seals the response to a request.
    /// - Parameters:
    ///   - plaintext: the response body, in secure memory; `nil` for an empty one.
    ///   - nonce: the request's 24-byte nonce.
    ///   - timestampMilliseconds: the response's own timestamp, sent beside the data.
    /// - Returns: `RESP_NONCE ‖ tag ‖ ciphertext`.
    /// - Throws: as ``sealRequest(_:nonce:timestampMilliseconds:)``.
    public func sealResponse(_ plaintext: SecureBytes?, nonce: [UInt8], timestampMilliseconds: UInt64)
        throws(ProtocolError) -> [UInt8]
    {
        try seal(plaintext, nonce: nonce, half: 1, timestampMilliseconds: timestampMilliseconds)
    }

    /// The client opens the response to its request.
    /// - Parameters:
    ///   - sealed: the response's `encryptedData`.
    ///   - nonce: the nonce the client sent with the request.
    ///   - timestampMilliseconds: the response's `timestamp`.
    /// - Returns: the body in secure memory, `nil` when it is empty.
    /// - Throws: as ``openRequest(_:nonce:timestampMilliseconds:)`` (here the prefix must be `RESP_NONCE`).
    public func openResponse(_ sealed: [UInt8], nonce: [UInt8], timestampMilliseconds: UInt64)
        throws(ProtocolError) -> SecureBytes?
    {
        try open(sealed, nonce: nonce, half: 1, timestampMilliseconds: timestampMilliseconds)
    }

    private static func requireNonce(_ nonce: [UInt8]) throws(ProtocolError) {
        guard nonce.count == nonceByteCount else {
            throw .invalidLength(field: "nonce", expected: nonceByteCount, actual: nonce.count)
        }
        guard !nonce[0..<12].elementsEqual(nonce[12..<24]) else {
            throw .malformedMessage(reason: "the request and response halves of the nonce are equal")
        }
    }

    private func seal(_ plaintext: SecureBytes?, nonce: [UInt8], half: Int, timestampMilliseconds: UInt64)
        throws(ProtocolError) -> [UInt8]
    {
        try Self.requireNonce(nonce)
        return try V4AEAD.seal(
            plaintext, key: sharedSecret, keyContext: keyContext(nonce: nonce),
            nonce: Array(nonce[(12 * half)..<(12 * half + 12)]),
            associatedData: associatedData(timestampMilliseconds: timestampMilliseconds, nonce: nonce))
    }

    private func open(_ sealed: [UInt8], nonce: [UInt8], half: Int, timestampMilliseconds: UInt64)
        throws(ProtocolError) -> SecureBytes?
    {
        try Self.requireNonce(nonce)
        guard let prefix = V4AEAD.nonce(of: sealed) else {
            throw .invalidLength(field: "encryptedData", expected: V4AEAD.overhead, actual: sealed.count)
        }
        guard prefix.elementsEqual(nonce[(12 * half)..<(12 * half + 12)]) else {
            throw .malformedMessage(reason: "the encrypted data does not start with the expected nonce")
        }
        return try V4AEAD.open(
            sealed, key: sharedSecret, keyContext: keyContext(nonce: nonce),
            associatedData: associatedData(timestampMilliseconds: timestampMilliseconds, nonce: nonce))
    }
}
