import Foundation
import PowerAuthProtocol
import SecureCore
import Synchronization

/// The factors one request is signed with (cf.
/// `PowerAuthAuthentication`). The password is the caller's: the service
/// reads it and never stores it. Once a request signed with these
/// credentials is rejected with HTTP 401 they are marked rejected, and every
/// further use fails with ``ActivationError/credentialsRejected`` so a wrong
/// PIN is never sent twice. Descriptions are redacted.
public final class ActivationAuthentication: Sendable {
    enum Kind {
        case possession
        case password(Password)
        case biometryPrompt(String)
        case biometryKey(SecureBytes, validUntil: Date)
    }

    private struct State: @unchecked Sendable {
        var kind: Kind?
        var rejected = false
    }

    private let state: Mutex<State>

    private init(_ kind: Kind) { state = Mutex(State(kind: kind)) }

    /// Possession only (1FA).
    /// - Returns: the credentials.
    public static func possession() -> ActivationAuthentication { ActivationAuthentication(.possession) }

    /// Possession and knowledge: the PIN unwraps the knowledge key.
    /// - Parameter password: the PIN as entered.
    /// - Returns: the credentials.
    public static func possessionWithPassword(_ password: Password) -> ActivationAuthentication {
        ActivationAuthentication(.password(password))
    }

    /// Possession and biometry; every use shows the biometric prompt.
    /// - Parameter prompt: the text of the prompt.
    /// - Returns: the credentials.
    public static func possessionWithBiometry(prompt: String) -> ActivationAuthentication {
        ActivationAuthentication(.biometryPrompt(prompt))
    }

    static func prefetchedBiometry(key: SecureBytes, validUntil: Date) -> ActivationAuthentication {
        ActivationAuthentication(.biometryKey(key, validUntil: validUntil))
    }

    /// The factor set these credentials sign with.
    public var factorSet: FactorSet {
        state.withLock { s in
            switch s.kind {
            case .possession, .none: .possession
            case .password: .possessionKnowledge
            case .biometryPrompt, .biometryKey: .possessionBiometry
            }
        }
    }

    /// Whether a request signed with these credentials was rejected with HTTP 401.
    public var isRejected: Bool { state.withLock { $0.rejected } }

    /// Marks the credentials rejected; call it when your own request signed
    /// with them was answered with HTTP 401.
    public func markRejected() { state.withLock { $0.rejected = true } }

    /// Wipes a biometry key fetched in advance and makes the credentials unusable.
    public func destroy() {
        state.withLock { s in
            if case .biometryKey(let key, _) = s.kind { key.destroy() }
            s.kind = nil
        }
    }

    /// The current kind, or a typed error when the credentials cannot be used.
    func usableKind(now: Date) throws(ActivationError) -> Kind {
        let result: Result<Kind, ActivationError> = state.withLock { s in
            guard !s.rejected else { return .failure(.credentialsRejected) }
            guard let kind = s.kind else { return .failure(.credentialsExpired) }
            if case .biometryKey(let key, let validUntil) = kind, now >= validUntil || key.isDestroyed {
                key.destroy()
                s.kind = nil
                return .failure(.credentialsExpired)
            }
            return .success(kind)
        }
        return try result.get()
    }
}

extension ActivationAuthentication: CustomStringConvertible, CustomDebugStringConvertible {
    /// The factor set only.
    public var description: String { "ActivationAuthentication(\(factorSet.rawValue), redacted)" }
    /// Same as ``description``.
    public var debugDescription: String { description }
}

/// What ``ActivationService/beginPasswordChange(currentPassword:)`` returns
/// once the server accepted the current PIN: it keeps the mutable password
/// it was given, for ``ActivationService/finishPasswordChange(newPassword:data:)``.
/// Its content cannot be read; ``secureClear()`` wipes it.
public final class PasswordChangeData: Sendable {
    private struct Held: @unchecked Sendable {
        var password: MutablePassword?
    }

    private let held: Mutex<Held>
    let activationId: String

    init(password: MutablePassword, activationId: String) {
        held = Mutex(Held(password: password))
        self.activationId = activationId
    }

    /// Wipes the kept PIN; the data can no longer finish a change.
    public func secureClear() {
        held.withLock { h in
            h.password?.destroy()
            h.password = nil
        }
    }

    /// An immutable copy of the kept PIN, or `nil` after ``secureClear()``.
    func currentPassword() throws(ActivationError) -> Password? {
        let result: Result<Password?, ActivationError> = held.withLock { h in
            guard let password = h.password else { return .success(nil) }
            do throws(SecureCoreError) {
                return .success(try password.copyToImmutable())
            } catch {
                return .failure(.core(error))
            }
        }
        return try result.get()
    }

    deinit { secureClear() }
}

extension PasswordChangeData: CustomStringConvertible, CustomDebugStringConvertible {
    /// `PasswordChangeData(redacted)`.
    public var description: String { "PasswordChangeData(redacted)" }
    /// Same as ``description``.
    public var debugDescription: String { description }
}
