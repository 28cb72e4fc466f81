import SecureCore

/// The PowerAuth V4 endpoints this implementation serves (`docs/protocol-v4.md`), beside the
/// V3 ones of ``ActivationAPI``: path, the resource identifier of their authentication code
/// and the `SHARED_INFO_1` of their encryption.
public enum V4API {
    /// One endpoint.
    public struct Endpoint: Sendable, Equatable {
        /// The URL path.
        public let path: String
        /// The `uriId` its authentication code covers, if it needs one.
        public let uriIdentifier: String?
        /// Its `SHARED_INFO_1`, if its body is encrypted.
        public let sharedInfo1: V4SharedInfo1?

        /// Describes an endpoint (an application's own resources too).
        /// - Parameters:
        ///   - path: the URL path.
        ///   - uriIdentifier: the `uriId` of its codes.
        ///   - sharedInfo1: its `SHARED_INFO_1`, if encrypted.
        public init(path: String, uriIdentifier: String?, sharedInfo1: V4SharedInfo1?) {
            self.path = path
            self.uriIdentifier = uriIdentifier
            self.sharedInfo1 = sharedInfo1
        }
    }

    /// `POST /pa/v4/keystore/create`: a temporary key (HS384 request JWT, ES384 response).
    public static let keystoreCreate = Endpoint(path: "/pa/v4/keystore/create", uriIdentifier: nil, sharedInfo1: nil)
    /// `POST /pa/v4/activation/create`: two application-scope layers (`/pa/generic/application`
    /// outside, `/pa/activation` inside).
    public static let activationCreate = Endpoint(
        path: "/pa/v4/activation/create", uriIdentifier: nil, sharedInfo1: .genericApplication)
    /// `POST /pa/v4/activation/confirm`: `possession_knowledge`, `{"enableBiometry": Bool}`.
    public static let activationConfirm = Endpoint(
        path: "/pa/v4/activation/confirm", uriIdentifier: "/pa/activation/confirm", sharedInfo1: nil)
    /// `POST /pa/v4/activation/status`: activation scope, `/pa/generic/activation` (as the SDK's code).
    public static let activationStatus = Endpoint(
        path: "/pa/v4/activation/status", uriIdentifier: nil, sharedInfo1: .genericActivation)
    /// `POST /pa/v4/activation/remove`: two factors.
    public static let activationRemove = Endpoint(
        path: "/pa/v4/activation/remove", uriIdentifier: "/pa/activation/remove", sharedInfo1: nil)
    /// `POST /pa/v4/auth/validate`: any code type.
    public static let validate = Endpoint(
        path: "/pa/v4/auth/validate", uriIdentifier: "/pa/auth/validate", sharedInfo1: nil)
    /// `POST /pa/v4/token/create`: encrypted, activation scope, `/pa/token/create`.
    public static let tokenCreate = Endpoint(
        path: "/pa/v4/token/create", uriIdentifier: "/pa/token/create", sharedInfo1: .tokenCreate)
    /// `POST /pa/v4/token/remove`: possession, `{"tokenId"}`.
    public static let tokenRemove = Endpoint(
        path: "/pa/v4/token/remove", uriIdentifier: "/pa/token/remove", sharedInfo1: nil)
    /// `POST /pa/v4/vault/unlock`: two factors, encrypted, activation scope, `/pa/vault/unlock`.
    public static let vaultUnlock = Endpoint(
        path: "/pa/v4/vault/unlock", uriIdentifier: "/pa/vault/unlock", sharedInfo1: .vaultUnlock)

    /// `POST /pa/v4/password/change`: `possession_knowledge` with the current password, encrypted,
    /// activation scope, `/pa/password/change`; a shared-secret exchange whose result is the new
    /// knowledge factor key (dynamic factor keys).
    public static let passwordChange = Endpoint(
        path: "/pa/v4/password/change", uriIdentifier: "/pa/password/change", sharedInfo1: .passwordChange)
    /// `POST /pa/v4/biometry/add`: `possession_knowledge`, encrypted, `/pa/biometry/add`; the result is
    /// the new biometry factor key.
    public static let biometryAdd = Endpoint(
        path: "/pa/v4/biometry/add", uriIdentifier: "/pa/biometry/add", sharedInfo1: .biometryAdd)
    /// `POST /pa/v4/biometry/remove`: `possession`; the server forgets the biometry keys.
    public static let biometryRemove = Endpoint(
        path: "/pa/v4/biometry/remove", uriIdentifier: "/pa/biometry/remove", sharedInfo1: nil)

    /// `POST /pa/v4/upgrade/start`: a **V3.3** code (`possession_knowledge`, uriId
    /// `/pa/upgrade/start`) over a body encrypted with V4 end-to-end encryption in application
    /// scope (`/pa/upgrade/start`).
    public static let upgradeStart = Endpoint(
        path: "/pa/v4/upgrade/start", uriIdentifier: "/pa/upgrade/start", sharedInfo1: .upgradeStart)
    /// `POST /pa/v4/upgrade/confirm`: a V4 `possession` code, body `{}`.
    public static let upgradeConfirm = Endpoint(
        path: "/pa/v4/upgrade/confirm", uriIdentifier: "/pa/upgrade/confirm", sharedInfo1: nil)

    /// `POST /pa/v4/status`: the server's time, name and the algorithms it serves
    /// (`{"requestObject":{"applicationKey"}}`, optional), plain.
    public static let serverStatus = Endpoint(path: "/pa/v4/status", uriIdentifier: nil, sharedInfo1: nil)
    /// `POST /pa/v4/user/info`: the user's claims, activation scope, `/pa/generic/activation` (the
    /// SDK's `ACTIVATION_SCOPE_GENERIC`), unsigned.
    public static let userInfo = Endpoint(
        path: "/pa/v4/user/info", uriIdentifier: nil, sharedInfo1: .genericActivation)
    /// `POST /pa/v4/activation/detail`: the activation's name, checked by a V4 MAC token
    /// (`possession_knowledge` or `possession_biometry`), activation scope, `/pa/generic/activation`.
    public static let activationDetail = Endpoint(
        path: "/pa/v4/activation/detail", uriIdentifier: nil, sharedInfo1: .genericActivation)

    /// Every V4 endpoint.
    public static let all: [Endpoint] = [
        keystoreCreate, activationCreate, activationConfirm, activationStatus, activationRemove, validate,
        tokenCreate, tokenRemove, vaultUnlock, passwordChange, biometryAdd, biometryRemove, upgradeStart,
        upgradeConfirm, serverStatus, userInfo, activationDetail,
    ]

    /// The vault keys `vault/unlock` releases, by upstream name.
    public static let vaultKeyIdentifiers = ["KEK_DEVICE_PRIVATE", "KDK_APP_VAULT_KNOWLEDGE", "KDK_APP_VAULT_2FA"]
}

/// The device's or the server's public signing keys: `{"ecdsa": Base64 of the 97-byte P-384 key}`
/// (hybrid suites add `mldsa`, not implemented).
public struct V4PublicKeys: Codable, Equatable, Sendable {
    /// The P-384 ECDSA public key, Base64.
    public let ecdsa: String
    /// The ML-DSA public key of a hybrid suite, Base64 of its SubjectPublicKeyInfo; absent otherwise.
    public let mldsa: String?
    /// Wraps the keys.
    /// - Parameters:
    ///   - ecdsa: Base64 of the P-384 key.
    ///   - mldsa: Base64 of the ML-DSA key's SubjectPublicKeyInfo (hybrid suites), or `nil`.
    public init(ecdsa: String, mldsa: String? = nil) {
        self.ecdsa = ecdsa
        self.mldsa = mldsa
    }
}

/// The `/pa/v4/status` request object: the application whose algorithms the answer lists.
public struct V4ServerStatusRequest: Codable, Equatable, Sendable {
    /// The application key, Base64 (optional).
    public let applicationKey: String?
    /// Wraps the key.
    /// - Parameter applicationKey: the application key, or `nil`.
    public init(applicationKey: String?) { self.applicationKey = applicationKey }
}

/// The outer (level 1) activation request, before its own encryption.
public struct V4ActivationLayer1Request: Codable, Equatable, Sendable {
    /// `CODE`.
    public let type: String
    /// `{"code": ACTIVATION_CODE}`.
    public let identityAttributes: [String: String]
    /// The inner layer, encrypted.
    public let activationData: V4EncryptedRequest
    /// Wraps the fields.
    /// - Parameters:
    ///   - code: the activation code.
    ///   - activationData: the encrypted inner request.
    public init(code: String, activationData: V4EncryptedRequest) {
        self.type = "CODE"
        self.identityAttributes = ["code": code]
        self.activationData = activationData
    }
}

/// The inner (level 2) activation request.
public struct V4ActivationLayer2Request: Codable, Equatable, Sendable {
    /// The client's half of the shared secret.
    public let sharedSecretRequest: V4SharedSecretRequest
    /// The device's signing keys.
    public let devicePublicKeys: V4PublicKeys
    /// The device's display name.
    public let activationName: String?
    /// Wraps the fields.
    /// - Parameters:
    ///   - sharedSecretRequest: the shared-secret request.
    ///   - devicePublicKeys: the device keys.
    ///   - activationName: the name.
    public init(sharedSecretRequest: V4SharedSecretRequest, devicePublicKeys: V4PublicKeys, activationName: String?) {
        self.sharedSecretRequest = sharedSecretRequest
        self.devicePublicKeys = devicePublicKeys
        self.activationName = activationName
    }
}

/// The inner activation response.
public struct V4ActivationLayer2Response: Codable, Equatable, Sendable {
    /// The activation identifier.
    public let activationId: String
    /// The server's half of the shared secret.
    public let sharedSecretResponse: V4SharedSecretResponse
    /// The server's signing keys for this activation.
    public let serverPublicKeys: V4PublicKeys
    /// The initial `CTR_DATA`, Base64 of 32 bytes.
    public let ctrData: String
    /// Wraps the fields.
    /// - Parameters:
    ///   - activationId: the identifier.
    ///   - sharedSecretResponse: the shared-secret response.
    ///   - serverPublicKeys: the server keys.
    ///   - ctrData: the counter.
    public init(
        activationId: String, sharedSecretResponse: V4SharedSecretResponse, serverPublicKeys: V4PublicKeys,
        ctrData: String
    ) {
        self.activationId = activationId
        self.sharedSecretResponse = sharedSecretResponse
        self.serverPublicKeys = serverPublicKeys
        self.ctrData = ctrData
    }
}

/// The outer activation response, before its own encryption.
public struct V4ActivationLayer1Response: Codable, Equatable, Sendable {
    /// The encrypted inner response.
    public let activationData: V4EncryptedResponse
    /// Wraps the inner response.
    /// - Parameter activationData: the encrypted inner response.
    public init(activationData: V4EncryptedResponse) { self.activationData = activationData }
}

/// `activation/confirm`'s body: `{"enableBiometry": Bool}` (the SDK's form).
public struct V4ConfirmRequest: Codable, Equatable, Sendable {
    /// Whether the device enabled biometry.
    public let enableBiometry: Bool
    /// Wraps the flag.
    /// - Parameter enableBiometry: the flag.
    public init(enableBiometry: Bool) { self.enableBiometry = enableBiometry }
}

/// The decrypted `activation/status` response.
public struct V4StatusResponse: Codable, Equatable, Sendable {
    /// Base64 of the 80-byte ``V4StatusBlob``.
    public let activationStatus: String
    /// Application-defined values, as V3.3's ``ActivationStatusResponse/customObject``; this
    /// server puts `blockExpirationTime` there while the activation is temporarily blocked.
    public let customObject: [String: JSONValue]?
    /// Wraps the blob.
    /// - Parameters:
    ///   - activationStatus: Base64 of the blob.
    ///   - customObject: custom values, or `nil`.
    public init(activationStatus: String, customObject: [String: JSONValue]? = nil) {
        self.activationStatus = activationStatus
        self.customObject = customObject
    }
}

/// `token/remove`'s body.
public struct V4TokenRemoveRequest: Codable, Equatable, Sendable {
    /// The token.
    public let tokenId: String
    /// Wraps the identifier.
    /// - Parameter tokenId: the token.
    public init(tokenId: String) { self.tokenId = tokenId }
}

/// The decrypted `vault/unlock` request.
public struct V4VaultUnlockRequest: Codable, Equatable, Sendable {
    /// `KEK_DEVICE_PRIVATE`, `KDK_APP_VAULT_KNOWLEDGE` or `KDK_APP_VAULT_2FA`.
    public let keyIdentifier: String
    /// Why (free text, logged by upstream).
    public let reason: String?
    /// Wraps the fields.
    /// - Parameters:
    ///   - keyIdentifier: the key's name.
    ///   - reason: why.
    public init(keyIdentifier: String, reason: String?) {
        self.keyIdentifier = keyIdentifier
        self.reason = reason
    }
}

/// The V4 `X-PowerAuth-Authorization` header: `PowerAuth pa_activation_id="…",
/// pa_application_key="…", pa_nonce="…", pa_auth_code_type="…", pa_auth_code="…", pa_version="4.0"`.
public struct V4AuthorizationHeader: Sendable, Equatable {
    /// The activation.
    public let activationId: String
    /// The application key.
    public let applicationKey: String
    /// 16 random bytes.
    public let nonce: [UInt8]
    /// The factors.
    public let factorSet: FactorSet
    /// The code (online: Base64 of 32-byte components).
    public let authenticationCode: String

    /// Wraps the fields.
    /// - Parameters:
    ///   - activationId: the activation.
    ///   - applicationKey: the application key.
    ///   - nonce: 16 bytes.
    ///   - factorSet: the factors.
    ///   - authenticationCode: the code.
    /// - Throws: ``ProtocolError/invalidActivationId``, ``ProtocolError/invalidLength(field:expected:actual:)``.
    public init(
        activationId: String, applicationKey: String, nonce: [UInt8], factorSet: FactorSet, authenticationCode: String
    ) throws(ProtocolError) {
        try AuthorizationHeader.validateActivationId(activationId)
        guard nonce.count == ProtocolConstants.nonceByteCount else {
            throw .invalidLength(field: "pa_nonce", expected: ProtocolConstants.nonceByteCount, actual: nonce.count)
        }
        self.activationId = activationId
        self.applicationKey = applicationKey
        self.nonce = nonce
        self.factorSet = factorSet
        self.authenticationCode = authenticationCode
    }

    /// The header value.
    public var value: String {
        let fields = [
            ("pa_activation_id", activationId), ("pa_application_key", applicationKey),
            ("pa_nonce", Base64.encode(nonce)), ("pa_auth_code_type", factorSet.rawValue),
            ("pa_auth_code", authenticationCode), ("pa_version", "4.0"),
        ]
        return "PowerAuth " + fields.map { "\($0.0)=\"\($0.1)\"" }.joined(separator: ", ")
    }

    /// Parses a header value (version `4.0` only).
    /// - Parameter value: the value.
    /// - Returns: the header.
    /// - Throws: ``ProtocolError`` for any grammar or field error.
    public static func parse(_ value: String) throws(ProtocolError) -> V4AuthorizationHeader {
        var parser = HeaderParser(
            Array(value.utf8),
            keys: [
                "pa_activation_id", "pa_application_key", "pa_nonce", "pa_auth_code_type", "pa_auth_code",
                "pa_version",
            ])
        let fields = try parser.parse()
        func field(_ key: String) throws(ProtocolError) -> String {
            guard let found = fields[key] else { throw .missingHeaderField(key) }
            return found
        }
        let version = try field("pa_version")
        guard version == "4.0" else { throw .unsupportedProtocolVersion(ProtocolError.echo(version)) }
        return try V4AuthorizationHeader(
            activationId: try field("pa_activation_id"), applicationKey: try field("pa_application_key"),
            nonce: try Base64.decode(try field("pa_nonce"), field: "pa_nonce", count: ProtocolConstants.nonceByteCount),
            factorSet: try FactorSet(parsing: try field("pa_auth_code_type")),
            authenticationCode: try field("pa_auth_code"))
    }
}

/// A JSON object with one secret string member, written into secure memory:
/// `{"name1":"value1",…,"secretName":"<Base64 of the secret>"}` (public values must need no
/// escaping). For `token/create` (`tokenId`, `tokenSecret`; V3.3 through `TokenPayload` too) and `vault/unlock`
/// (`vaultEncryptionKey`) responses.
public enum V4SecretJSON {
    /// Writes the object.
    /// - Parameters:
    ///   - fields: public members, in order.
    ///   - secretName: the secret member's name.
    ///   - secret: the secret, in secure memory.
    /// - Returns: the JSON, in secure memory.
    /// - Throws: ``ProtocolError/core(_:)``.
    public static func encode(fields: [(String, String)], secretName: String, secret: SecureBytes)
        throws(ProtocolError) -> SecureBytes
    {
        let prefix = Array(
            ("{" + fields.map { "\"\($0.0)\":\"\($0.1)\"," }.joined() + "\"\(secretName)\":\"").utf8)
        let suffix = Array("\"}".utf8)
        let encodedCount = (secret.count + 2) / 3 * 4
        let out = try lift { () throws(SecureCoreError) in
            try SecureBytes(count: prefix.count + encodedCount + suffix.count)
        }
        secret.withUnsafeBytes { source in
            out.withUnsafeMutableBytes { target in
                for (i, byte) in prefix.enumerated() { target[i] = byte }
                var position = prefix.count
                var index = 0
                while index < source.count {
                    let b0 = source[index]
                    let b1 = index + 1 < source.count ? source[index + 1] : 0
                    let b2 = index + 2 < source.count ? source[index + 2] : 0
                    let sextets = [b0 >> 2, (b0 & 0x03) << 4 | b1 >> 4, (b1 & 0x0F) << 2 | b2 >> 6, b2 & 0x3F]
                    let emitted = index + 2 < source.count ? 4 : (index + 1 < source.count ? 3 : 2)
                    for j in 0..<4 {
                        target[position + j] =
                            j < emitted ? ConstantTimeEncoding.base64Character(sextets[j]) : UInt8(ascii: "=")
                    }
                    position += 4
                    index += 3
                }
                for (i, byte) in suffix.enumerated() { target[position + i] = byte }
            }
        }
        return out
    }

    /// Reads the secret member of such an object into secure memory (constant-time Base64).
    /// - Parameters:
    ///   - json: the object, in secure memory.
    ///   - secretName: the member's name.
    ///   - count: the secret's size in bytes.
    /// - Returns: the secret.
    /// - Throws: ``ProtocolError/malformedMessage(reason:)``, ``ProtocolError/core(_:)``.
    public static func decodeSecret(_ json: SecureBytes, secretName: String, count: Int) throws(ProtocolError)
        -> SecureBytes
    {
        let secret = try lift { () throws(SecureCoreError) in try SecureBytes(count: count) }
        let ok: Bool = json.withUnsafeBytes { whole in
            TokenPayload.withUnescapedBase64(of: secretName, in: whole) { text -> Bool in
                guard text.count == (count + 2) / 3 * 4 else { return false }
                return secret.withUnsafeMutableBytes { target -> Bool in
                    var bad: Int32 = 0
                    var bits: UInt32 = 0
                    var bitCount = 0
                    var written = 0
                    for character in text {
                        if character == UInt8(ascii: "=") { break }
                        let (sextet, invalid) = TokenPayload.decodeCharacter(character)
                        bad |= invalid
                        bits = bits << 6 | UInt32(sextet)
                        bitCount += 6
                        if bitCount >= 8, written < count {
                            bitCount -= 8
                            target[written] = UInt8(truncatingIfNeeded: bits >> UInt32(bitCount))
                            written += 1
                        }
                    }
                    return bad == 0 && written == count
                }
            } ?? false
        }
        guard ok else {
            secret.destroy()
            throw .malformedMessage(reason: "the response does not carry \(secretName)")
        }
        return secret
    }
}

/// The V4 `X-PowerAuth-Token` header: `PowerAuth token_id="…", token_digest="…", nonce="…",
/// timestamp="…", version="4.0"`, the digest ``V4TokenDigest`` (Base64), the nonce 16 bytes, the
/// timestamp decimal milliseconds.
public struct V4TokenHeader: Sendable, Equatable {
    /// The token.
    public let tokenId: String
    /// The 32-byte digest.
    public let digest: [UInt8]
    /// 16 random bytes.
    public let nonce: [UInt8]
    /// Milliseconds since 1970.
    public let timestampMilliseconds: UInt64

    /// Wraps the fields.
    /// - Parameters:
    ///   - tokenId: the token.
    ///   - digest: the digest.
    ///   - nonce: the nonce.
    ///   - timestampMilliseconds: the time.
    public init(tokenId: String, digest: [UInt8], nonce: [UInt8], timestampMilliseconds: UInt64) {
        self.tokenId = tokenId
        self.digest = digest
        self.nonce = nonce
        self.timestampMilliseconds = timestampMilliseconds
    }

    /// The header value.
    public var value: String {
        let fields = [
            ("token_id", tokenId), ("token_digest", Base64.encode(digest)), ("nonce", Base64.encode(nonce)),
            ("timestamp", String(timestampMilliseconds)), ("version", "4.0"),
        ]
        return "PowerAuth " + fields.map { "\($0.0)=\"\($0.1)\"" }.joined(separator: ", ")
    }

    /// Parses a header value (version `4.0` only).
    /// - Parameter value: the value.
    /// - Returns: the header.
    /// - Throws: ``ProtocolError`` for any grammar or field error.
    public static func parse(_ value: String) throws(ProtocolError) -> V4TokenHeader {
        var parser = HeaderParser(
            Array(value.utf8), keys: ["token_id", "token_digest", "nonce", "timestamp", "version"])
        let fields = try parser.parse()
        func field(_ key: String) throws(ProtocolError) -> String {
            guard let found = fields[key] else { throw .missingHeaderField(key) }
            return found
        }
        let version = try field("version")
        guard version == "4.0" else { throw .unsupportedProtocolVersion(ProtocolError.echo(version)) }
        let tokenId = try field("token_id")
        try AuthorizationHeader.validateActivationId(tokenId)
        let timestamp = try field("timestamp")
        guard timestamp.utf8.count <= 18, timestamp.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let milliseconds = UInt64(timestamp)
        else { throw .malformedHeader(reason: "timestamp") }
        return V4TokenHeader(
            tokenId: tokenId,
            digest: try Base64.decode(try field("token_digest"), field: "token_digest", count: V4TokenDigest.byteCount),
            nonce: try Base64.decode(try field("nonce"), field: "nonce", count: V4TokenDigest.nonceByteCount),
            timestampMilliseconds: milliseconds)
    }
}

/// The decrypted `upgrade/start` request.
public struct V4UpgradeStartRequest: Codable, Equatable, Sendable {
    /// The client's half of the new activation secret.
    public let sharedSecretRequest: V4SharedSecretRequest
    /// The device's new P-384 signing key.
    public let devicePublicKeys: V4PublicKeys
    /// Whether the biometry factor stays on after the upgrade (upstream's field; absent means
    /// "as it was").
    public let enableBiometry: Bool?
    /// Wraps the fields.
    /// - Parameters:
    ///   - sharedSecretRequest: the shared-secret request.
    ///   - devicePublicKeys: the device keys.
    ///   - enableBiometry: the biometry flag, or `nil` to leave it out.
    public init(
        sharedSecretRequest: V4SharedSecretRequest, devicePublicKeys: V4PublicKeys, enableBiometry: Bool? = nil
    ) {
        self.sharedSecretRequest = sharedSecretRequest
        self.devicePublicKeys = devicePublicKeys
        self.enableBiometry = enableBiometry
    }
}

/// The decrypted `upgrade/start` response.
public struct V4UpgradeStartResponse: Codable, Equatable, Sendable {
    /// The server's half of the new activation secret.
    public let sharedSecretResponse: V4SharedSecretResponse
    /// The server's new P-384 signing key for this activation.
    public let serverPublicKeys: V4PublicKeys
    /// The V4 `CTR_DATA`, Base64 of 32 bytes.
    public let ctrData: String
    /// Wraps the fields.
    /// - Parameters:
    ///   - sharedSecretResponse: the shared-secret response.
    ///   - serverPublicKeys: the server keys.
    ///   - ctrData: the counter.
    public init(sharedSecretResponse: V4SharedSecretResponse, serverPublicKeys: V4PublicKeys, ctrData: String) {
        self.sharedSecretResponse = sharedSecretResponse
        self.serverPublicKeys = serverPublicKeys
        self.ctrData = ctrData
    }
}
