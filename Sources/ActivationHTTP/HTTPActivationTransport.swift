import Activation
import Foundation
import HTTPClient
import PowerAuthProtocol
import Synchronization

/// `PowerAuthProtocol.ActivationTransport` over HTTP(S) with the `HTTPClient` module
/// (libcurl): `POST baseEndpointURL + path` with the request's exact
/// headers and body bytes.
///
/// - The `ActivationClientConfiguration` is honoured: the request time-out
///   (or the one `send` is given), the user agent, the TLS strategy;
///   `ActivationService` has already applied the user agent and the request
///   interceptors to the request's headers, and they are sent as they are.
/// - A request that did not reach the server or whose answer did not come
///   back — connection refused, time-out, a broken connection — and a 5xx
///   (the server failed, the request may not have been handled) are
///   `PowerAuthProtocol.TransportError.network(reason:)`; task cancellation is
///   `PowerAuthProtocol.TransportError.cancelled`. The service maps them to
///   `Activation.ActivationError.network(reason:)` and `Activation.ActivationError.cancelled`;
///   none of these ever removes an activation.
/// - A TLS failure (an untrusted or expired certificate, a pinned key that does not match) is
///   `PowerAuthProtocol.TransportError.tls(reason:)`, then `Activation.ActivationError.tls(reason:)`:
///   nothing was counted, nothing is removed.
/// - Every other HTTP answer (2xx, 4xx) is returned as a response, whose
///   PowerAuth error body the service reads.
/// - Every `Activation.TLSValidationStrategy` is honoured (`HTTPClient.HTTPClient.TLSValidation`);
///   plain `http` to a host that is not loopback is refused unless
///   `Activation.ActivationClientConfiguration.allowInsecureHTTP` is set.
public final class HTTPActivationTransport: ActivationTransport {
    /// The base URL (`baseEndpointURL`).
    public let baseURL: URL
    private let settings: ActivationClientConfiguration
    private let tls: HTTPClient.TLSValidation
    private let clients: Mutex<[Duration: HTTPClient]>

    /// Creates the transport for an application's configuration.
    /// - Parameter configuration: the activation configuration (base URL and client settings).
    /// - Throws: `Activation.ActivationError.wrongParameter(reason:)` for a base URL or TLS strategy it cannot use.
    public convenience init(configuration: ActivationConfiguration) throws(ActivationError) {
        try self.init(baseEndpointURL: configuration.baseEndpointURL, client: configuration.clientConfiguration)
    }

    /// Creates the transport.
    /// - Parameters:
    ///   - baseEndpointURL: the part of the URL before `/pa/`.
    ///   - client: time-out, user agent, TLS strategy.
    /// - Throws: `Activation.ActivationError.wrongParameter(reason:)`.
    public init(baseEndpointURL: String, client: ActivationClientConfiguration) throws(ActivationError) {
        guard let url = URL(string: baseEndpointURL) else { throw .wrongParameter(reason: "baseEndpointURL") }
        switch client.tlsValidation {
        case .system: tls = .system
        case .customCA(let file): tls = .customCA(file: file)
        case .pinnedPublicKeys(let keys, let file): tls = .pinnedPublicKeys(keys.map { Data($0) }, customCA: file)
        case .noValidation: tls = .noValidation
        }
        baseURL = url
        settings = client
        clients = Mutex([:])
        do throws(TransportError) {
            _ = try self.client(for: client.requestTimeout)
        } catch {
            throw ActivationError(error)
        }
    }

    /// Sends the request.
    /// - Parameters:
    ///   - request: method, path, headers and body.
    ///   - timeout: the time allowed for the whole exchange.
    /// - Returns: the status and body of a 2xx or 4xx answer.
    /// - Throws: `PowerAuthProtocol.TransportError.network(reason:)`, `PowerAuthProtocol.TransportError.cancelled`,
    ///   `PowerAuthProtocol.TransportError.invalidConfiguration(reason:)` if no HTTP client can be made for `timeout`.
    public func send(_ request: TransportRequest, timeout: Duration) async throws(TransportError) -> TransportResponse {
        let client = try self.client(for: timeout)
        do throws(HTTPClientError) {
            let (status, body) = try await client.send(
                method: request.method, path: request.path, body: Data(request.body), headers: request.headers)
            return TransportResponse(statusCode: status, body: Array(body))
        } catch {
            switch error {
            case .serverError(let status): throw .network(reason: "the server failed (HTTP \(status))")
            case .cancelled: throw .cancelled
            case .connectionRefused: throw .network(reason: "connection refused")
            case .timeout: throw .network(reason: "timed out")
            case .invalidResponse: throw .network(reason: "the answer was not a complete HTTP response")
            case .tls(let failure): throw .tls(reason: "\(failure)")
            case .other(let reason): throw .network(reason: reason)
            case .invalidConfiguration(let reason): throw .invalidConfiguration(reason: reason)
            }
        }
    }

    /// One URL session per time-out (normally just the configured one).
    private func client(for timeout: Duration) throws(TransportError) -> HTTPClient {
        if let existing = clients.withLock({ $0[timeout] }) { return existing }
        let made: HTTPClient
        do throws(HTTPClientError) {
            made = try HTTPClient(
                configuration: HTTPClient.Configuration(
                    baseURL: baseURL, timeout: timeout,
                    userAgent: settings.userAgent, interceptors: [], tlsValidation: tls,
                    allowInsecureHTTP: settings.allowInsecureHTTP))
        } catch {
            switch error {
            case .invalidConfiguration(let reason): throw .invalidConfiguration(reason: reason)
            default: throw .invalidConfiguration(reason: "\(error)")
            }
        }
        return clients.withLock { all in
            if let raced = all[timeout] { return raced }
            all[timeout] = made
            return made
        }
    }
}
