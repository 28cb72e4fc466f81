import Foundation
import PowerAuthProtocol
import SecureCore

/// When the status is fetched (three moments).
public enum StatusRefreshTrigger: String, Sendable, CaseIterable {
    /// After the application starts.
    case applicationStart
    /// After a request failed with an authentication error.
    case authenticationFailure
    /// When the application returns to the foreground.
    case returnToForeground
}

/// The screen that matches the activation (cf. `handleActivationStatus`).
public enum ActivationRoute: Sendable, Equatable {
    /// No activation on the device: start the enrollment.
    case enrollment
    /// Active: show the regular content.
    case dashboard
    /// Waiting for the commit: show the fingerprint and poll.
    case pendingCommit(fingerprint: String)
    /// Blocked: temporarily until the date, permanently when `nil`.
    case blocked(until: Date?)
    /// Removed on the server or deadlocked: the activation was removed
    /// locally; offer to register again.
    case reEnroll(ClientActivationState)
    /// The status could not be fetched; nothing was removed. Let the user retry.
    case connectionError(ActivationError)
    /// Active, and the configuration asks for a stronger suite than the activation's: run
    /// the authenticated upgrade (it needs the PIN), then show the regular content.
    case upgradeAvailable(from: ProtocolAlgorithm, to: ProtocolAlgorithm)
}

/// How a failed authentication ended (cf. `handleAuthenticationFailure`).
public enum AuthenticationFailureOutcome: Sendable, Equatable {
    /// The PIN was wrong: keep the keyboard, show "N of M attempts remaining".
    case wrongPassword(remainingAttempts: Int, maximumAttempts: Int)
    /// The activation is blocked: dismiss the keyboard and explain.
    case blocked(until: Date?)
    /// Removed or deadlocked: removed locally; dismiss and offer enrollment.
    case removed(ClientActivationState)
    /// Something else failed (the status fetch, or a non-PIN rejection).
    case error(ActivationError?)
}

/// The usual flows as reusable pieces over one ``ActivationService``: what
/// to do with a status, the pending-commit poll, the wrong-PIN handling. The
/// rules they keep: a network or server error never removes the activation,
/// and credentials rejected once are never sent again.
public struct ActivationFlows: Sendable {
    /// The polling interval while the commit is pending.
    public static let pendingCommitPollInterval: Duration = .seconds(5)

    /// The service.
    public let service: ActivationService
    /// The clock that paces the poll.
    public let clock: any ActivationClock

    /// Creates the flows.
    /// - Parameters:
    ///   - service: the service.
    ///   - clock: the time source (default the system clock).
    public init(service: ActivationService, clock: any ActivationClock = SystemActivationClock()) {
        self.service = service
        self.clock = clock
    }

    /// Fetches the status and picks the screen. Call it at start, after an
    /// authentication error and on return to the foreground.
    /// - Parameter trigger: why the status is fetched (all three take the same path).
    /// - Returns: the route; ``ActivationRoute/connectionError(_:)`` when the fetch failed.
    public func refresh(trigger: StatusRefreshTrigger) async -> ActivationRoute {
        guard await service.hasValidActivation() else { return .enrollment }
        do throws(ActivationError) {
            return await route(for: try await service.fetchActivationStatus())
        } catch {
            return .connectionError(error)
        }
    }

    /// The screen for a status; removed and deadlocked activations are removed locally.
    /// - Parameter status: a fetched status.
    /// - Returns: the route.
    public func route(for status: ActivationStatus) async -> ActivationRoute {
        switch status.state {
        case .active:
            if case .upgradeAvailable(let from, let to) = await service.algorithmCheck() {
                return .upgradeAvailable(from: from, to: to)
            }
            return .dashboard
        case .pendingCommit, .created:
            let fingerprint = (try? await service.activationFingerprint()) ?? ""
            return .pendingCommit(fingerprint: fingerprint)
        case .blocked:
            return .blocked(until: status.blockExpirationTime)
        case .removed, .deadlock:
            try? await service.removeActivationLocal()
            return .reEnroll(status.state)
        }
    }

    /// Polls every `interval` until the state is no longer pending commit.
    /// Errors keep the poll going; cancel the task to stop it.
    /// - Parameter interval: the pause between fetches (default 5 s).
    /// - Returns: the route of the first other state.
    /// - Throws: ``ActivationError/cancelled`` when the task is cancelled.
    public func waitForCommit(interval: Duration = ActivationFlows.pendingCommitPollInterval)
        async throws(ActivationError) -> ActivationRoute
    {
        while true {
            guard !Task.isCancelled else { throw .cancelled }
            guard await service.hasValidActivation() else { return .enrollment }
            if let status = try? await service.fetchActivationStatus(), status.state != .pendingCommit {
                return await route(for: status)
            }
            do {
                try await clock.sleep(for: interval)
            } catch {
                throw .cancelled
            }
        }
    }

    /// The user cancels on the pending-commit screen: forget the activation.
    /// - Throws: ``ActivationError/storage(operation:errno:)``.
    public func cancelEnrollment() async throws(ActivationError) {
        try await service.removeActivationLocal()
    }

    /// Handles a request rejected with HTTP 401 / `ERR_AUTHENTICATION`: the
    /// PIN is wiped, the credentials are marked rejected, the status decides.
    /// - Parameters:
    ///   - password: the PIN that was used, wiped here.
    ///   - authentication: the rejected credentials, marked rejected.
    /// - Returns: what the UI should do.
    public func handleAuthenticationFailure(password: Password?, authentication: ActivationAuthentication?) async
        -> AuthenticationFailureOutcome
    {
        password?.secureClear()
        authentication?.markRejected()
        let status: ActivationStatus
        do throws(ActivationError) {
            status = try await service.fetchActivationStatus()
        } catch {
            return .error(error)
        }
        switch status.state {
        case .active:
            guard status.failCount > 0 else { return .error(nil) }
            return .wrongPassword(remainingAttempts: status.remainingAttempts, maximumAttempts: status.maxFailCount)
        case .blocked:
            return .blocked(until: status.blockExpirationTime)
        case .removed, .deadlock:
            try? await service.removeActivationLocal()
            return .removed(status.state)
        case .created, .pendingCommit:
            return .error(nil)
        }
    }

    /// Whether a response is the authentication failure the flows handle:
    /// HTTP 401 with `ERR_AUTHENTICATION` in the body.
    /// - Parameter response: the response of your own request.
    /// - Returns: `true` for an authentication failure.
    public static func isAuthenticationFailure(_ response: TransportResponse) -> Bool {
        guard response.statusCode == 401,
            let envelope = try? WireCoding.decode(ResponseEnvelope<ErrorResponse>.self, response.body)
        else { return false }
        return envelope.responseObject?.code == ActivationAPI.ErrorCode.authentication
    }
}
