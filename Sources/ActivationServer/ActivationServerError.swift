import PowerAuthProtocol

/// Errors of the reference server. None carries a key or a code.
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
    /// A server configuration value is invalid.
    case invalidConfiguration(reason: String)
    /// A protocol computation failed.
    case protocolFailure(ActivationError)
}

/// Runs protocol code, lifting its error.
func protocolStep<R>(_ body: () throws(ActivationError) -> R) throws(ActivationServerError) -> R {
    do throws(ActivationError) {
        return try body()
    } catch {
        throw .protocolFailure(error)
    }
}
