import PowerAuthProtocol

/// Errors of the activation server's protocol logic (``ActivationServer``, its store and
/// configuration). None carries a key or a code. ``ActivationServer/response(for:)`` maps
/// each case to the API's error answer.
public enum ActivationServerError: Error, Equatable, Sendable {
    /// No activation with that identifier (or activation code).
    case activationNotFound
    /// The operation is not allowed in the activation's current state.
    case invalidState(ProtocolActivationState)
    /// The activation code is unknown or already used.
    case invalidActivationCode
    /// The authentication failed: bad header, unknown or inactive
    /// activation, disallowed factors, or a code that does not verify.
    /// Answered with HTTP 401 `ERR_AUTHENTICATION`.
    case authenticationFailed
    /// The request body or a field is malformed; `reason` says which.
    case malformedRequest(reason: String)
    /// An identifier or activation code already exists in the store.
    case duplicate
    /// The store failed; `reason` says how.
    case storage(reason: String)
    /// The store cannot be reached now (its database is down or restarting). Answered with
    /// HTTP 503 `ERR_GENERIC`. A change whose commit was in flight may or may not have taken
    /// effect; the server never repeats it, so nothing is counted twice.
    case unavailable(reason: String)
    /// A server configuration value is invalid.
    case invalidConfiguration(reason: String)
    /// A protocol computation failed (the cryptography, encoding a response); the
    /// protocol layer's error says which. Answered with HTTP 500 `ERR_GENERIC`.
    case protocolFailure(ProtocolError)
    /// A temporary key cannot be issued (bad request JWT, unknown application or
    /// activation) or used (unknown, expired, bound elsewhere). Answered with HTTP 400
    /// `ERR_TEMPORARY_KEY` / `POWER_AUTH_TEMPORARY_KEY_FAILURE`, as upstream.
    case temporaryKeyFailure
    /// An ECIES request's timestamp lies outside the accepted window.
    /// Answered with HTTP 400 `ERR_ENCRYPTION`.
    case requestExpired
    /// An ECIES request's (ephemeral key, nonce) pair was accepted before.
    /// Answered with HTTP 400 `ERR_ENCRYPTION`.
    case replayedRequest
    /// An encrypted request that does not decrypt: a malformed body, a MAC that does not
    /// verify, fields missing for its version, an unknown or expired temporary key, a
    /// version below 3.2. Answered with HTTP 400 `ERR_ENCRYPTION` (`vault/unlock`:
    /// `ERR_SECURE_VAULT`; `token/create`: 401 `ERR_AUTHENTICATION`), as upstream.
    case encryptionFailed
    /// A MAC token that does not verify (unknown, wrong digest, outside its time window,
    /// replayed, of an inactive activation, or without the factors the endpoint needs).
    /// Answered with HTTP 401 `ERR_AUTHENTICATION` / `POWER_AUTH_TOKEN_INVALID`.
    case tokenInvalid
    /// A protocol upgrade that cannot be done: every activation of this server already
    /// speaks protocol 3. Answered with HTTP 400 `ERR_UPGRADE`.
    case upgradeNotAvailable
}

/// Runs protocol code, wrapping its error in ``ActivationServerError/protocolFailure(_:)``.
func protocolStep<R>(_ body: () throws(ProtocolError) -> R) throws(ActivationServerError) -> R {
    do throws(ProtocolError) {
        return try body()
    } catch {
        throw .protocolFailure(error)
    }
}

extension ActivationServerError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on; it never names a key or a code.
    public var description: String {
        switch self {
        case .activationNotFound: "no activation has that identifier or activation code"
        case .invalidState(let state): "the operation is not allowed while the activation is \(Self.name(state))"
        case .invalidActivationCode: "the activation code is unknown or already used"
        case .authenticationFailed: "the authentication failed"
        case .malformedRequest(let reason): "the request is malformed: \(reason)"
        case .duplicate: "the identifier or activation code already exists"
        case .storage(let reason): "the store failed: \(reason)"
        case .unavailable(let reason):
            "the store cannot be reached now: \(reason); a change in flight may or may not have taken effect"
        case .invalidConfiguration(let reason): "the server configuration is not valid: \(reason)"
        case .protocolFailure(let error): "a protocol computation failed: \(error)"
        case .temporaryKeyFailure: "the temporary key cannot be issued or used"
        case .requestExpired: "the encrypted request's timestamp lies outside the accepted window"
        case .replayedRequest: "the encrypted request was accepted before: a replay"
        case .encryptionFailed: "the encrypted request does not decrypt"
        case .tokenInvalid: "the MAC token does not verify"
        case .upgradeNotAvailable: "no protocol upgrade is available: every activation already speaks protocol 3"
        }
    }

    /// The state as the back office names it.
    private static func name(_ state: ProtocolActivationState) -> String {
        switch state {
        case .created: "CREATED"
        case .pendingCommit: "PENDING_COMMIT"
        case .active: "ACTIVE"
        case .blocked: "BLOCKED"
        case .removed: "REMOVED"
        }
    }
}
