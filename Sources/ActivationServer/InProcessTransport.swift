import PowerAuthProtocol

/// A transport that hands each request to an ``ActivationServer`` in the
/// same process. The request and the response still pass as JSON bytes, so
/// the wire format is exercised exactly as over HTTP.
public struct InProcessTransport: ActivationTransport {
    /// The server.
    public let server: ActivationServer

    /// Creates the transport.
    /// - Parameter server: the server to call.
    public init(server: ActivationServer) { self.server = server }

    /// Calls ``ActivationServer/handle(_:)``.
    /// - Returns: the server's 2xx or 4xx answer.
    /// - Throws: `PowerAuthProtocol.TransportError.cancelled` when the task is cancelled,
    ///   `PowerAuthProtocol.TransportError.network(reason:)` for a server failure (5xx), as
    ///   the transport contract asks of every transport.
    public func send(_ request: TransportRequest, timeout: Duration) async throws(TransportError) -> TransportResponse {
        guard !Task.isCancelled else { throw .cancelled }
        let response = await server.handle(request)
        if response.statusCode >= 500 { throw .network(reason: "the server failed (HTTP \(response.statusCode))") }
        return response
    }
}
