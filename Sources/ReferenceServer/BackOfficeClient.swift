import ActivationServer
import Foundation
import HTTPClient
import HTTPServer
import PowerAuthProtocol
import SecureCore

/// Calls the reference server's back office (``BackOfficeAPI``) over HTTP,
/// as an operator's tool or the demo does.
public struct BackOfficeClient: Sendable {
    private let client: HTTPClient
    private let token: SecureBytes

    /// Creates the client.
    /// - Parameters:
    ///   - baseURL: the server, for example `http://127.0.0.1:8080`.
    ///   - token: the admin token.
    ///   - timeout: the time allowed per request.
    /// - Throws: ``BackOfficeError/transport(_:)`` for a URL the client cannot use.
    public init(baseURL: URL, token: SecureBytes, timeout: Duration = .seconds(10)) throws(BackOfficeError) {
        do throws(HTTPClientError) {
            client = try HTTPClient(configuration: HTTPClient.Configuration(baseURL: baseURL, timeout: timeout))
        } catch {
            throw .transport(error)
        }
        self.token = token
    }

    /// Prepares an activation for a user.
    /// - Parameter userId: the user.
    /// - Returns: the identifier and activation code.
    /// - Throws: ``BackOfficeError``.
    public func initActivation(userId: String) async throws(BackOfficeError) -> InitActivationResponse {
        try await call(BackOfficeAPI.initActivation, InitActivationRequest(userId: userId))
    }

    /// Commits an activation waiting for it.
    /// - Parameter activationId: the activation.
    /// - Throws: ``BackOfficeError``.
    public func commit(_ activationId: String) async throws(BackOfficeError) {
        let _: EmptyMessage = try await call(
            BackOfficeAPI.commitActivation, BackOfficeActivationRequest(activationId: activationId))
    }

    /// Blocks an active activation.
    /// - Parameters:
    ///   - activationId: the activation.
    ///   - until: the end of a temporary block, or `nil`.
    /// - Throws: ``BackOfficeError``.
    public func block(_ activationId: String, until: Date? = nil) async throws(BackOfficeError) {
        try await block(activationId, untilSeconds: until.map { UnixTime.seconds($0) })
    }

    /// Blocks an active activation, with the block's end as the wire carries it.
    /// - Parameters:
    ///   - activationId: the activation.
    ///   - untilSeconds: the end of a temporary block in seconds since 1970 (after now, at most
    ///     `ActivationServer.UnixTime.latestSeconds`; anything else is refused with 400), or `nil`.
    /// - Throws: ``BackOfficeError``.
    public func block(_ activationId: String, untilSeconds: Int64?) async throws(BackOfficeError) {
        let _: EmptyMessage = try await call(
            BackOfficeAPI.blockActivation,
            BackOfficeActivationRequest(activationId: activationId, blockedUntil: untilSeconds))
    }

    /// Unblocks a blocked activation.
    /// - Parameter activationId: the activation.
    /// - Throws: ``BackOfficeError``.
    public func unblock(_ activationId: String) async throws(BackOfficeError) {
        let _: EmptyMessage = try await call(
            BackOfficeAPI.unblockActivation, BackOfficeActivationRequest(activationId: activationId))
    }

    /// Removes an activation.
    /// - Parameter activationId: the activation.
    /// - Throws: ``BackOfficeError``.
    public func remove(_ activationId: String) async throws(BackOfficeError) {
        let _: EmptyMessage = try await call(
            BackOfficeAPI.removeActivation, BackOfficeActivationRequest(activationId: activationId))
    }

    /// Reads one activation's details.
    /// - Parameter activationId: the activation.
    /// - Returns: the details.
    /// - Throws: ``BackOfficeError``.
    public func detail(_ activationId: String) async throws(BackOfficeError) -> BackOfficeActivation {
        try await call(BackOfficeAPI.activationDetail, BackOfficeActivationRequest(activationId: activationId))
    }

    /// Lists every activation.
    /// - Returns: the activations, oldest first.
    /// - Throws: ``BackOfficeError``.
    public func list() async throws(BackOfficeError) -> [BackOfficeActivation] {
        let list: BackOfficeActivationList = try await call(BackOfficeAPI.listActivations, EmptyMessage())
        return list.activations
    }

    /// Reads a server-bound vault's counters.
    /// - Parameter vaultId: the identifier in hex (as `securepin vault status` prints it).
    /// - Returns: the counters.
    /// - Throws: ``BackOfficeError``.
    public func vaultDetail(_ vaultId: String) async throws(BackOfficeError) -> BackOfficeVault {
        try await call(BackOfficeAPI.vaultDetail, BackOfficeVaultRequest(vaultId: vaultId))
    }

    /// Unblocks a server-bound vault: failures back to zero.
    /// - Parameter vaultId: the identifier in hex.
    /// - Returns: the counters after the unblock.
    /// - Throws: ``BackOfficeError``.
    public func unblockVault(_ vaultId: String) async throws(BackOfficeError) -> BackOfficeVault {
        try await call(BackOfficeAPI.unblockVault, BackOfficeVaultRequest(vaultId: vaultId))
    }

    /// Reads the application's configuration string.
    /// - Returns: the string.
    /// - Throws: ``BackOfficeError``.
    public func configurationString() async throws(BackOfficeError) -> String {
        let answer: BackOfficeConfiguration = try await call(BackOfficeAPI.configuration, EmptyMessage())
        return answer.configuration
    }

    private func call<Request: Codable & Sendable, Response: Codable & Sendable>(_ path: String, _ body: Request)
        async throws(BackOfficeError) -> Response
    {
        let bytes: [UInt8]
        let header: String
        do throws(ProtocolError) {
            bytes = try WireCoding.encode(RequestEnvelope(requestObject: body))
        } catch {
            throw .invalidResponse
        }
        header = token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        let status: Int
        let data: Data
        do throws(HTTPClientError) {
            (status, data) = try await client.post(
                path: path, body: Data(bytes), headers: [HTTPHeader.adminToken: header])
        } catch {
            throw .transport(error)
        }
        guard status == 200 else {
            let code = try? WireCoding.decode(ResponseEnvelope<ErrorResponse>.self, Array(data)).responseObject?.code
            throw .refused(status: status, code: code ?? "UNKNOWN")
        }
        do throws(ProtocolError) {
            guard let object = try WireCoding.decode(ResponseEnvelope<Response>.self, Array(data)).responseObject else {
                throw .malformedMessage(reason: "no responseObject")
            }
            return object
        } catch {
            throw .invalidResponse
        }
    }
}

/// What a back-office call can meet.
public enum BackOfficeError: Error, Equatable, Sendable {
    /// The request did not complete (refused, timed out, 5xx).
    case transport(HTTPClientError)
    /// The server refused with this status and error code.
    case refused(status: Int, code: String)
    /// The answer did not decode.
    case invalidResponse
}

extension BackOfficeError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on; it never names the admin token.
    public var description: String {
        switch self {
        case .transport(let error): "the back office cannot be reached: \(error)"
        case .refused(let status, let code): "the back office refused with HTTP \(status) \(code)"
        case .invalidResponse: "the back office's answer does not decode"
        }
    }
}
