/// The PowerAuth V3 standard RESTful API as the PowerAuth mobile SDK and the
/// PowerAuth enrollment server speak it (`docs/activation-api.md`): endpoints,
/// their `uriIdentifier`s and ECIES `SHARED_INFO_1` values, and the JSON shapes.
///
/// Three envelopes, as upstream (restful-integration `ObjectRequest`/`ObjectResponse`,
/// mobile SDK `HttpRequestHelper`):
/// - a plain request is `{"requestObject": {...}}`, a plain response
///   `{"status": "OK", "responseObject": {...}}` (or `{"status": "OK"}`);
/// - an encrypted request is the bare ``EncryptedRequestBody`` and its response
///   the bare ``EncryptedResponseBody``, never wrapped;
/// - an error is `{"status": "ERROR", "responseObject": {"code": "...", "message": "..."}}`.
///
/// Binary values are canonical Base64 strings. No plain message carries a PIN or
/// a key; the secrets that travel (a token secret, the encrypted vault key) do so
/// inside ECIES.
public enum ActivationAPI {
    /// A plain endpoint: its path, the identifier its authentication code covers
    /// (`nil` when it is not signed), and its message types.
    public struct Endpoint<Request: Codable & Sendable, Response: Codable & Sendable>: Sendable {
        /// The path after the base URL.
        public let path: String
        /// The `uriIdentifier` of the signed request data, or `nil`.
        public let uriIdentifier: String?
    }

    /// An ECIES-encrypted endpoint: its path, the identifier its authentication code
    /// covers (`nil` when it is not signed and carries `X-PowerAuth-Encryption`
    /// instead), and the `SHARED_INFO_1` of its encryption (which also gives the scope).
    public struct EncryptedEndpoint: Sendable {
        /// The path after the base URL.
        public let path: String
        /// The `uriIdentifier` of the signed request data, or `nil` for an unsigned request.
        public let uriIdentifier: String?
        /// The ECIES `SHARED_INFO_1` (and so the scope) of the request and its response.
        public let sharedInfo1: ECIES.SharedInfo1
    }

    // MARK: - Plain endpoints

    /// `POST /pa/v3/activation/status`: the encrypted status blob.
    public static let activationStatus = Endpoint<ActivationStatusRequest, ActivationStatusResponse>(
        path: "/pa/v3/activation/status", uriIdentifier: nil)
    /// `POST /pa/v3/activation/remove`: remove the activation (signed, any factors, as upstream).
    public static let removeActivation = Endpoint<EmptyMessage, ActivationRemoveResponse>(
        path: "/pa/v3/activation/remove", uriIdentifier: "/pa/activation/remove")
    /// `POST /pa/v3/signature/validate`: check an authentication code (a PIN);
    /// answered with `{"status":"OK"}` only.
    public static let validateSignature = Endpoint<ValidateSignatureRequest, EmptyMessage>(
        path: "/pa/v3/signature/validate", uriIdentifier: "/pa/signature/validate")
    /// `POST /pa/v3/token/remove`: remove a MAC token (signed, any factors).
    public static let removeToken = Endpoint<TokenRemoveRequest, TokenRemoveResponse>(
        path: "/pa/v3/token/remove", uriIdentifier: "/pa/token/remove")
    /// `POST /pa/v3/upgrade/commit`: commit a protocol upgrade (signed, possession).
    public static let commitUpgrade = Endpoint<EmptyMessage, EmptyMessage>(
        path: "/pa/v3/upgrade/commit", uriIdentifier: "/pa/upgrade/commit")
    /// `POST /pa/v3/status`: the server's time and name, for the SDK's time synchronisation.
    public static let serverStatus = Endpoint<EmptyMessage, ServerStatusResponse>(
        path: "/pa/v3/status", uriIdentifier: nil)

    // MARK: - Encrypted endpoints

    /// `POST /pa/v3/activation/create`: layer 1 in application scope
    /// (`/pa/generic/application`), carrying layer 2 (`/pa/activation`) as `activationData`.
    public static let createActivation = EncryptedEndpoint(
        path: "/pa/v3/activation/create", uriIdentifier: nil, sharedInfo1: .applicationScopeGeneric)
    /// `SHARED_INFO_1` of the inner layer of ``createActivation``.
    public static let createActivationLayer2 = ECIES.SharedInfo1.activationLayer2
    /// `POST /pa/v3/token/create`: a MAC token (signed, any factors; encrypt-then-sign).
    public static let createToken = EncryptedEndpoint(
        path: "/pa/v3/token/create", uriIdentifier: "/pa/token/create", sharedInfo1: .createToken)
    /// `POST /pa/v3/vault/unlock`: the vault encryption key (signed, two factors; encrypt-then-sign).
    public static let unlockVault = EncryptedEndpoint(
        path: "/pa/v3/vault/unlock", uriIdentifier: "/pa/vault/unlock", sharedInfo1: .vaultUnlock)
    /// `POST /pa/v3/upgrade/start`: start a protocol upgrade (unsigned, activation scope).
    public static let startUpgrade = EncryptedEndpoint(
        path: "/pa/v3/upgrade/start", uriIdentifier: nil, sharedInfo1: .upgrade)
    /// `POST /pa/v3/user/info`: the user's claims (unsigned, activation scope).
    public static let userInfo = EncryptedEndpoint(
        path: "/pa/v3/user/info", uriIdentifier: nil, sharedInfo1: .activationScopeGeneric)
    /// `POST /pa/v3/activation/detail`: the activation's name (MAC token, activation scope).
    public static let activationDetail = EncryptedEndpoint(
        path: "/pa/v3/activation/detail", uriIdentifier: nil, sharedInfo1: .activationScopeGeneric)

    // MARK: - Constants

    /// The HTTP method of every endpoint (`signature/validate` also takes GET, PUT and DELETE).
    public static let method = "POST"
    /// The `Content-Type` of every body.
    public static let contentType = "application/json"
    /// The activation type this implementation accepts (`ActivationType.CODE`).
    public static let activationTypeCode = "CODE"
    /// `reason` values of `vault/unlock` (powerauth-server `VaultUnlockServiceBehavior`).
    public static let vaultUnlockReasons: Set<String> = [
        "ADD_BIOMETRY", "FETCH_ENCRYPTION_KEY", "SIGN_WITH_DEVICE_PRIVATE_KEY", "RECOVERY_CODE",
    ]
    /// `reason` of the vault unlock that adds the biometry factor.
    public static let addBiometryReason = "ADD_BIOMETRY"

    /// Error `code` and `message` pairs, as upstream's exception classes send them
    /// (restful-integration `exception/**`).
    public enum ErrorCode {
        /// 401: a signature or token that does not verify, a missing or malformed header.
        public static let authentication = "ERR_AUTHENTICATION"
        /// 400: an activation that cannot do this, an unknown or used activation code.
        public static let activation = "ERR_ACTIVATION"
        /// 400: an encrypted request that does not decrypt, is replayed or is out of its time window.
        public static let encryption = "ERR_ENCRYPTION"
        /// 400: a vault unlock that failed for another reason than the signature.
        public static let secureVault = "ERR_SECURE_VAULT"
        /// 400: an upgrade that cannot be done.
        public static let upgrade = "ERR_UPGRADE"
        /// 400: the user's claims cannot be given.
        public static let userInfo = "ERR_USER_INFO"
        /// 400: a body that is not JSON of the expected shape (SecurePIN's; upstream's
        /// framework answers such bodies with its own 400 page).
        public static let request = "ERR_REQUEST"
        /// 500: an unexpected failure.
        public static let generic = "ERR_GENERIC"
    }

    /// Upstream's messages for the codes above.
    public enum ErrorMessage {
        /// `ERR_AUTHENTICATION` for a code that does not verify.
        public static let signatureInvalid = "POWER_AUTH_SIGNATURE_INVALID"
        /// `ERR_AUTHENTICATION` for a missing header.
        public static let headerMissing = "POWER_AUTH_HTTP_HEADER_MISSING"
        /// `ERR_AUTHENTICATION` for a factor set the endpoint does not take.
        public static let signatureTypeInvalid = "POWER_AUTH_SIGNATURE_TYPE_INVALID"
        /// `ERR_AUTHENTICATION` for a MAC token that does not verify.
        public static let tokenInvalid = "POWER_AUTH_TOKEN_INVALID"
        /// `ERR_AUTHENTICATION` for a token that cannot be created or removed.
        public static let tokenError = "POWER_AUTH_TOKEN_ERROR"
        /// `ERR_ACTIVATION`.
        public static let activationInvalid = "POWER_AUTH_ACTIVATION_INVALID"
        /// `ERR_ENCRYPTION`.
        public static let encryptionFailed = "POWER_AUTH_ENCRYPTION_FAILED"
        /// `ERR_SECURE_VAULT`.
        public static let secureVaultInvalid = "POWER_AUTH_SECURE_VAULT_INVALID"
        /// `ERR_UPGRADE`.
        public static let upgradeFailed = "POWER_AUTH_UPGRADE_FAILED"
        /// `ERR_USER_INFO`.
        public static let userInfoError = "POWER_AUTH_USER_INFO_ERROR"
    }
}

/// A body with no fields (`{}`).
public struct EmptyMessage: Codable, Sendable, Equatable {
    /// Creates the empty message.
    public init() {}
}

/// `{"requestObject": ...}`.
public struct RequestEnvelope<Object: Codable & Sendable>: Codable, Sendable {
    /// The request.
    public var requestObject: Object
    /// Wraps a request.
    /// - Parameter requestObject: the request.
    public init(requestObject: Object) { self.requestObject = requestObject }
}

/// `{"status": "OK", "responseObject": ...}`; `responseObject` is absent in a bare
/// `{"status": "OK"}` (upstream's `Response`).
public struct ResponseEnvelope<Object: Codable & Sendable>: Codable, Sendable {
    /// `OK` or `ERROR`.
    public var status: String
    /// The response, or an ``ErrorResponse`` when `status` is `ERROR`.
    public var responseObject: Object?
    /// Wraps a response.
    /// - Parameters:
    ///   - status: `OK` or `ERROR`.
    ///   - responseObject: the response, `nil` for a bare status.
    public init(status: String = "OK", responseObject: Object?) {
        self.status = status
        self.responseObject = responseObject
    }
}

/// The `responseObject` of an error.
public struct ErrorResponse: Codable, Sendable, Equatable {
    /// One of the ``ActivationAPI/ErrorCode`` values.
    public var code: String
    /// A message without secrets (upstream's constant for the code).
    public var message: String
    /// Creates an error object.
    /// - Parameters:
    ///   - code: the error code.
    ///   - message: the message.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }
}

// MARK: - activation/create

/// `activation/create`, layer 1 (restful-model `ActivationLayer1Request`), encrypted in
/// application scope with `SHARED_INFO_1 = /pa/generic/application`.
public struct ActivationLayer1Request: Codable, Sendable, Equatable {
    /// The activation type; this implementation takes `CODE`.
    public var type: String
    /// `{"code": "XXXXX-XXXXX-XXXXX-XXXXX"}` for `CODE`.
    public var identityAttributes: [String: String]
    /// Application-defined attributes, passed through.
    public var customAttributes: [String: JSONValue]?
    /// Layer 2, encrypted with `SHARED_INFO_1 = /pa/activation`.
    public var activationData: EncryptedRequestBody
    /// Creates the request.
    /// - Parameters:
    ///   - activationCode: the activation code (without `#SIGNATURE`).
    ///   - activationData: the encrypted layer 2.
    ///   - customAttributes: optional attributes.
    public init(
        activationCode: String, activationData: EncryptedRequestBody, customAttributes: [String: JSONValue]? = nil
    ) {
        self.type = ActivationAPI.activationTypeCode
        self.identityAttributes = ["code": activationCode]
        self.customAttributes = customAttributes
        self.activationData = activationData
    }
}

/// `activation/create`, layer 1 response (restful-model `ActivationLayer1Response`).
public struct ActivationLayer1Response: Codable, Sendable, Equatable {
    /// Layer 2's response, encrypted with layer 2's envelope key.
    public var activationData: EncryptedResponseBody
    /// Application-defined attributes.
    public var customAttributes: [String: JSONValue]?
    /// Claims about the user, when the server gives them at activation.
    public var userInfo: [String: JSONValue]?
    /// Creates the response.
    /// - Parameter activationData: the encrypted layer 2 response.
    public init(activationData: EncryptedResponseBody) {
        self.activationData = activationData
        self.customAttributes = [:]
        self.userInfo = nil
    }
}

/// `activation/create`, layer 2 (restful-model `ActivationLayer2Request`).
public struct ActivationLayer2Request: Codable, Sendable, Equatable {
    /// The device's public key, Base64 of the compressed SEC1 point.
    public var devicePublicKey: String
    /// A display name for the device.
    public var activationName: String?
    /// An additional activation OTP (not used here).
    public var activationOtp: String?
    /// `ios`, `android`, `unknown`, … (informational).
    public var platform: String?
    /// A description of the device (informational).
    public var deviceInfo: String?
    /// Application-defined extras.
    public var extras: String?
    /// Creates the request.
    /// - Parameters:
    ///   - devicePublicKey: Base64 of the device key.
    ///   - activationName: the device name.
    ///   - platform: the platform name.
    ///   - deviceInfo: a device description.
    public init(devicePublicKey: String, activationName: String?, platform: String? = nil, deviceInfo: String? = nil) {
        self.devicePublicKey = devicePublicKey
        self.activationName = activationName
        self.platform = platform
        self.deviceInfo = deviceInfo
    }
}

/// `activation/create`, layer 2 response (restful-model `ActivationLayer2Response`).
public struct ActivationLayer2Response: Codable, Sendable, Equatable {
    /// The activation identifier (UUID).
    public var activationId: String
    /// The server's public key for this activation, Base64 (65-byte uncompressed).
    public var serverPublicKey: String
    /// The initial counter `CTR_DATA`, Base64 of 16 bytes.
    public var ctrData: String
    /// Creates the response.
    /// - Parameters:
    ///   - activationId: the identifier.
    ///   - serverPublicKey: Base64 of the server key.
    ///   - ctrData: Base64 of the counter.
    public init(activationId: String, serverPublicKey: String, ctrData: String) {
        self.activationId = activationId
        self.serverPublicKey = serverPublicKey
        self.ctrData = ctrData
    }
}

// MARK: - Plain messages

/// `activation/status` request.
public struct ActivationStatusRequest: Codable, Sendable, Equatable {
    /// The activation identifier.
    public var activationId: String
    /// A fresh 16-byte challenge, Base64 (3.1+; a 3.0 client sends none).
    public var challenge: String?
    /// Creates the request.
    /// - Parameters:
    ///   - activationId: the identifier.
    ///   - challenge: Base64 of 16 random bytes.
    public init(activationId: String, challenge: String?) {
        self.activationId = activationId
        self.challenge = challenge
    }
}

/// `activation/status` response (restful-model `ActivationStatusResponse`).
public struct ActivationStatusResponse: Codable, Sendable, Equatable {
    /// The activation identifier.
    public var activationId: String
    /// The 32-byte status blob encrypted under the transport key, Base64.
    public var encryptedStatusBlob: String
    /// The server's 16-byte nonce, Base64.
    public var nonce: String?
    /// Application-defined values: whatever a PowerAuth server's callbacks put there (strings,
    /// numbers, arrays, nested objects; upstream's `Map<String, Object>`). This server puts
    /// `blockExpirationTime` (seconds since 1970) here while an activation is temporarily blocked.
    public var customObject: [String: JSONValue]?
    /// Creates the response.
    /// - Parameters:
    ///   - activationId: the identifier.
    ///   - encryptedStatusBlob: Base64 of the blob.
    ///   - nonce: Base64 of the nonce.
    ///   - customObject: custom values.
    public init(
        activationId: String, encryptedStatusBlob: String, nonce: String?, customObject: [String: JSONValue]?
    ) {
        self.activationId = activationId
        self.encryptedStatusBlob = encryptedStatusBlob
        self.nonce = nonce
        self.customObject = customObject
    }

    /// The key of the temporary block's end in ``customObject``.
    public static let blockExpirationTimeKey = "blockExpirationTime"

    /// The `customObject` this server sends: the temporary block's end, if any.
    /// - Parameter blockExpirationTime: the end of a temporary block (seconds since 1970), or `nil`.
    /// - Returns: the object, or `nil` when there is nothing to say.
    public static func customObject(blockExpirationTime: Int64?) -> [String: JSONValue]? {
        blockExpirationTime.map { [blockExpirationTimeKey: .number(Double($0))] }
    }
}

/// `activation/remove` response.
public struct ActivationRemoveResponse: Codable, Sendable, Equatable {
    /// The removed activation.
    public var activationId: String
    /// Creates the response.
    /// - Parameter activationId: the identifier.
    public init(activationId: String) { self.activationId = activationId }
}

/// `signature/validate` request.
public struct ValidateSignatureRequest: Codable, Sendable, Equatable {
    /// Why the code is checked, for example `VALIDATE_PASSWORD` (the SDK's value).
    public var reason: String
    /// Creates the request.
    /// - Parameter reason: the reason.
    public init(reason: String) { self.reason = reason }
}

/// `vault/unlock` request (encrypted).
public struct VaultUnlockRequest: Codable, Sendable, Equatable {
    /// One of ``ActivationAPI/vaultUnlockReasons``.
    public var reason: String
    /// Creates the request.
    /// - Parameter reason: the reason.
    public init(reason: String) { self.reason = reason }
}

/// `vault/unlock` response (encrypted): `{"encryptedVaultEncryptionKey": …}`.
public struct VaultUnlockResponse: Codable, Sendable, Equatable {
    /// `AES-128-CBC-PKCS7(KEY_TRANSPORT, IV = 0¹⁶, KEY_ENCRYPTION_VAULT)`, Base64 (32 bytes).
    public var encryptedVaultEncryptionKey: String
    /// Not in upstream's encrypted payload (powerauth-server carries it beside the
    /// cryptogram, to the enrollment server); this server leaves it out, and the client
    /// ignores it when another server sends it.
    public var signatureValid: Bool?
    /// Creates the response.
    /// - Parameter encryptedVaultEncryptionKey: Base64 of the encrypted key.
    public init(encryptedVaultEncryptionKey: String) {
        self.encryptedVaultEncryptionKey = encryptedVaultEncryptionKey
        self.signatureValid = nil
    }
}

/// `token/remove` request.
public struct TokenRemoveRequest: Codable, Sendable, Equatable {
    /// The token to remove.
    public var tokenId: String
    /// Creates the request.
    /// - Parameter tokenId: the token.
    public init(tokenId: String) { self.tokenId = tokenId }
}

/// `token/remove` response.
public struct TokenRemoveResponse: Codable, Sendable, Equatable {
    /// The removed token.
    public var tokenId: String
    /// Creates the response.
    /// - Parameter tokenId: the token.
    public init(tokenId: String) { self.tokenId = tokenId }
}

/// `upgrade/start` response (encrypted).
public struct UpgradeStartResponse: Codable, Sendable, Equatable {
    /// The hash-based counter the upgraded activation starts from, Base64.
    public var ctrData: String
    /// Creates the response.
    /// - Parameter ctrData: Base64 of the counter.
    public init(ctrData: String) { self.ctrData = ctrData }
}

/// `activation/detail` response object (encrypted, inside `ObjectResponse`).
public struct ActivationDetailResponse: Codable, Sendable, Equatable {
    /// The activation.
    public var activationId: String
    /// Its display name.
    public var activationName: String?
    /// Creates the response.
    /// - Parameters:
    ///   - activationId: the activation.
    ///   - activationName: the name.
    public init(activationId: String, activationName: String?) {
        self.activationId = activationId
        self.activationName = activationName
    }
}

/// `user/info` response (encrypted): upstream's minimal claims
/// (`MinimalClaimsUserInfoProvider`).
public struct UserInfoResponse: Codable, Sendable, Equatable {
    /// The user identifier.
    public var sub: String
    /// A fresh identifier of this answer (UUID).
    public var jti: String
    /// When the answer was made, seconds since 1970.
    public var iat: Int64
    /// Creates the claims.
    /// - Parameters:
    ///   - sub: the user.
    ///   - jti: the answer's identifier.
    ///   - iat: the time.
    public init(sub: String, jti: String, iat: Int64) {
        self.sub = sub
        self.jti = jti
        self.iat = iat
    }
}

/// `/pa/v3/status` response (restful-model `ServerStatusResponse`).
public struct ServerStatusResponse: Codable, Sendable, Equatable {
    /// The server's name and version.
    public struct Application: Codable, Sendable, Equatable {
        /// The name.
        public var name: String
        /// The version.
        public var version: String
        /// Creates the value.
        /// - Parameters:
        ///   - name: the name.
        ///   - version: the version.
        public init(name: String, version: String) {
            self.name = name
            self.version = version
        }
    }
    /// The server's clock, milliseconds since 1970.
    public var serverTime: Int64
    /// The server's name and version.
    public var application: Application
    /// The algorithms served (`/pa/v4/status` only; absent in V3.3).
    public var supportedAlgorithms: [String]?
    /// Creates the response.
    /// - Parameters:
    ///   - serverTime: milliseconds since 1970.
    ///   - application: name and version.
    ///   - supportedAlgorithms: the algorithms served (V4), or `nil` (V3.3).
    public init(serverTime: Int64, application: Application, supportedAlgorithms: [String]? = nil) {
        self.serverTime = serverTime
        self.application = application
        self.supportedAlgorithms = supportedAlgorithms
    }
}
