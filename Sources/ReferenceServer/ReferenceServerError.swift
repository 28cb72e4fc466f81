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
