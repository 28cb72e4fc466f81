/// The client–server API: endpoints, message types and JSON shapes, in one
/// place (documented in `docs/activation-api.md`). Modelled on PowerAuth's
/// standard RESTful API: a request body is `{"requestObject": {...}}`, a
/// response `{"status": "OK", "responseObject": {...}}`, an error
/// `{"status": "ERROR", "responseObject": {"code": "...", "message": "..."}}`.
/// Binary values are canonical Base64 strings. Every message here is public:
/// no message carries a PIN or a key in the clear.
public enum ActivationAPI {
    /// An endpoint: its path, the identifier its authentication code covers
    /// (`nil` when it is not signed), and its message types.
    public struct Endpoint<Request: Codable & Sendable, Response: Codable & Sendable>: Sendable {
        /// The path after the base URL.
        public let path: String
        /// The `uriIdentifier` of the signed request data, or `nil`.
        public let uriIdentifier: String?
    }

    /// `POST /pa/v3/activation/create`: exchange public keys for a prepared activation code.
    public static let createActivation = Endpoint<CreateActivationRequest, CreateActivationResponse>(
        path: "/pa/v3/activation/create", uriIdentifier: nil)
    /// `POST /pa/v3/activation/status`: the encrypted status blob.
    public static let activationStatus = Endpoint<ActivationStatusRequest, ActivationStatusResponse>(
        path: "/pa/v3/activation/status", uriIdentifier: nil)
    /// `POST /pa/v3/activation/remove`: remove the activation (2FA).
    public static let removeActivation = Endpoint<EmptyMessage, EmptyMessage>(
        path: "/pa/v3/activation/remove", uriIdentifier: "/pa/activation/remove")
    /// `POST /pa/v3/signature/validate`: check an authentication code (a PIN).
    public static let validateSignature = Endpoint<ValidateSignatureRequest, EmptyMessage>(
        path: "/pa/v3/signature/validate", uriIdentifier: "/pa/signature/validate")
    /// `POST /pa/v3/vault/unlock`: the vault key, sealed under the transport key (2FA).
    public static let unlockVault = Endpoint<VaultUnlockRequest, VaultUnlockResponse>(
        path: "/pa/v3/vault/unlock", uriIdentifier: "/pa/vault/unlock")
    /// `POST /pa/v3/biometry/remove`: the server stops accepting biometry codes.
    public static let removeBiometry = Endpoint<EmptyMessage, EmptyMessage>(
        path: "/pa/v3/biometry/remove", uriIdentifier: "/pa/biometry/remove")

    /// The HTTP method of every endpoint.
    public static let method = "POST"
    /// The `Content-Type` of every body.
    public static let contentType = "application/json"
    /// `responseObject.code` of a rejected authentication (HTTP 401).
    public static let authenticationErrorCode = "ERR_AUTHENTICATION"
    /// `responseObject.code` of an unknown activation or one in the wrong state (HTTP 400).
    public static let activationErrorCode = "ERR_ACTIVATION"
    /// `responseObject.code` of a malformed request (HTTP 400).
    public static let requestErrorCode = "ERR_REQUEST"
    /// `responseObject.code` of an unexpected server failure (HTTP 500).
    public static let genericErrorCode = "ERR_GENERIC"
    /// Error code of a refused encrypted request (bad MAC, replay, stale timestamp).
    public static let encryptionErrorCode = "ERR_ENCRYPTION"
    /// `reason` of the vault unlock that adds the biometry factor.
    public static let addBiometryReason = "ADD_BIOMETRY"
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

/// `{"status": "OK", "responseObject": ...}`.
public struct ResponseEnvelope<Object: Codable & Sendable>: Codable, Sendable {
    /// `OK` or `ERROR`.
    public var status: String
    /// The response, or an ``ErrorResponse`` when `status` is `ERROR`.
    public var responseObject: Object
    /// Wraps a response.
    /// - Parameters:
    ///   - status: `OK` or `ERROR`.
    ///   - responseObject: the response.
    public init(status: String = "OK", responseObject: Object) {
        self.status = status
        self.responseObject = responseObject
    }
}

/// The `responseObject` of an error.
public struct ErrorResponse: Codable, Sendable, Equatable {
    /// One of the `ActivationAPI.*ErrorCode` values.
    public var code: String
    /// A human-readable message without secrets.
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

/// `activation/create` request.
public struct CreateActivationRequest: Codable, Sendable, Equatable {
    /// The activation code the server prepared (from the back office).
    public var activationCode: String
    /// The application key of the configuration.
    public var applicationKey: String
    /// The device's SEC1 public key, Base64.
    public var devicePublicKey: String
    /// A display name for the device.
    public var activationName: String
    /// Whether the device stores a biometry factor from the start.
    public var biometryEnabled: Bool
    /// Creates the request.
    /// - Parameters:
    ///   - activationCode: the activation code.
    ///   - applicationKey: the application key.
    ///   - devicePublicKey: Base64 of the device's public key.
    ///   - activationName: the device name.
    ///   - biometryEnabled: whether biometry is set up now.
    public init(
        activationCode: String, applicationKey: String, devicePublicKey: String, activationName: String,
        biometryEnabled: Bool
    ) {
        self.activationCode = activationCode
        self.applicationKey = applicationKey
        self.devicePublicKey = devicePublicKey
        self.activationName = activationName
        self.biometryEnabled = biometryEnabled
    }
}

/// `activation/create` response.
public struct CreateActivationResponse: Codable, Sendable, Equatable {
    /// The activation identifier.
    public var activationId: String
    /// The server's SEC1 public key for this activation, Base64.
    public var serverPublicKey: String
    /// The initial counter `CTR_DATA`, Base64 of 16 bytes.
    public var ctrData: String
    /// ECDSA-SHA256 (DER, Base64) by the master server key over
    /// ``CreateActivationResponse/signedBytes(activationId:serverPublicKey:devicePublicKey:ctrData:)``.
    public var signature: String
    /// Creates the response.
    /// - Parameters:
    ///   - activationId: the identifier.
    ///   - serverPublicKey: Base64 of the server key.
    ///   - ctrData: Base64 of the counter.
    ///   - signature: Base64 of the DER signature.
    public init(activationId: String, serverPublicKey: String, ctrData: String, signature: String) {
        self.activationId = activationId
        self.serverPublicKey = serverPublicKey
        self.ctrData = ctrData
        self.signature = signature
    }

    /// What the master key signs:
    /// `UTF-8(activationId) ‖ 0x26 ‖ serverPublicKey ‖ devicePublicKey ‖ ctrData`.
    /// - Parameters:
    ///   - activationId: the identifier.
    ///   - serverPublicKey: the server key bytes.
    ///   - devicePublicKey: the device key bytes.
    ///   - ctrData: the counter bytes.
    /// - Returns: the signed bytes.
    public static func signedBytes(
        activationId: String, serverPublicKey: [UInt8], devicePublicKey: [UInt8], ctrData: [UInt8]
    ) -> [UInt8] {
        Array(activationId.utf8) + [0x26] + serverPublicKey + devicePublicKey + ctrData
    }
}

/// `activation/status` request.
public struct ActivationStatusRequest: Codable, Sendable, Equatable {
    /// The activation identifier.
    public var activationId: String
    /// A fresh 16-byte challenge, Base64.
    public var challenge: String
    /// Creates the request.
    /// - Parameters:
    ///   - activationId: the identifier.
    ///   - challenge: Base64 of 16 random bytes.
    public init(activationId: String, challenge: String) {
        self.activationId = activationId
        self.challenge = challenge
    }
}

/// `activation/status` response.
public struct ActivationStatusResponse: Codable, Sendable, Equatable {
    /// The activation identifier.
    public var activationId: String
    /// The 32-byte status blob encrypted under the transport key, Base64.
    public var encryptedStatusBlob: String
    /// The server's 16-byte nonce, Base64.
    public var nonce: String
    /// When a temporary block ends, in seconds since 1970; absent otherwise.
    public var blockExpirationTime: Int64?
    /// Creates the response.
    /// - Parameters:
    ///   - activationId: the identifier.
    ///   - encryptedStatusBlob: Base64 of the blob.
    ///   - nonce: Base64 of the nonce.
    ///   - blockExpirationTime: the end of a temporary block, or `nil`.
    public init(activationId: String, encryptedStatusBlob: String, nonce: String, blockExpirationTime: Int64?) {
        self.activationId = activationId
        self.encryptedStatusBlob = encryptedStatusBlob
        self.nonce = nonce
        self.blockExpirationTime = blockExpirationTime
    }
}

/// `signature/validate` request.
public struct ValidateSignatureRequest: Codable, Sendable, Equatable {
    /// Why the code is checked (for the server's audit log), for example `PASSWORD_CHANGE`.
    public var reason: String
    /// Creates the request.
    /// - Parameter reason: the reason.
    public init(reason: String) { self.reason = reason }
}

/// `vault/unlock` request.
public struct VaultUnlockRequest: Codable, Sendable, Equatable {
    /// Why the vault is unlocked; ``ActivationAPI/addBiometryReason`` enables biometry.
    public var reason: String
    /// Creates the request.
    /// - Parameter reason: the reason.
    public init(reason: String) { self.reason = reason }
}

/// `vault/unlock` response: the vault key sealed with XChaCha20-Poly1305
/// under a key derived from the transport key (see the docs).
public struct VaultUnlockResponse: Codable, Sendable, Equatable {
    /// The 24-byte AEAD nonce, Base64.
    public var nonce: String
    /// The sealed vault key (16 bytes plus the 16-byte tag), Base64.
    public var encryptedVaultKey: String
    /// Creates the response.
    /// - Parameters:
    ///   - nonce: Base64 of the nonce.
    ///   - encryptedVaultKey: Base64 of the sealed key.
    public init(nonce: String, encryptedVaultKey: String) {
        self.nonce = nonce
        self.encryptedVaultKey = encryptedVaultKey
    }
}
