import ActivationServer
import HTTPServer

/// Errors of the reference server's set-up. None carries a key, a code or a token.
public enum ReferenceServerError: Error, Equatable, Sendable {
    /// The server key file is missing, unreadable, of the wrong size or format,
    /// or readable by others; `reason` says which.
    case keyFile(reason: String)
    /// The database could not be opened, migrated or read; `reason` says how.
    case storage(reason: String)
    /// A stored value failed to decrypt or decode (wrong key file, tampering).
    case corruptRecord(reason: String)
    /// The activation server refused its configuration.
    case activationServer(ActivationServerError)
    /// The HTTP server failed to start.
    case http(HTTPServerError)
    /// An option is invalid; `reason` says which.
    case invalidConfiguration(reason: String)
}

extension ReferenceServerError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on; it never names a key, code or token.
    public var description: String {
        switch self {
        case .keyFile(let reason): "the server key file cannot be used: \(reason)"
        case .storage(let reason): "the database failed: \(reason)"
        case .corruptRecord(let reason): "a stored value does not open with the key file: \(reason)"
        case .activationServer(let error): "the activation server refused its configuration: \(error)"
        case .http(let error): "\(error)"
        case .invalidConfiguration(let reason): "an option is not valid: \(reason)"
        }
    }
}
