/// Everything that can go wrong with a request. A 4xx answer is not an error: it comes back
/// as a status and body (PowerAuth's error body travels with a 400 or 401).
public enum HTTPClientError: Error, Equatable, Sendable {
    /// Nothing listens at the server's address (the connection was refused or the host is unreachable).
    case connectionRefused
    /// No response within ``HTTPClient/Configuration/timeout``.
    case timeout
    /// The server answered with a 5xx status.
    case serverError(status: Int)
    /// The answer was not an HTTP response.
    case invalidResponse
    /// The request was cancelled (its task was cancelled).
    case cancelled
    /// The configuration cannot work: a base URL that is not http or https, or a TLS
    /// strategy this platform cannot honour; the text says which.
    case invalidConfiguration(String)
    /// Any other failure, described by the URL loading system (no request data included).
    case other(String)
}
