import SecureCore
import Synchronization

/// A biometric authenticator for Linux, tests and the demo: a scripted
/// sensor over an in-memory key store. Keys stay in `SecureBytes`.
public final class SimulatedBiometricAuthenticator: BiometricAuthenticator, @unchecked Sendable {
    /// What the next evaluation does.
    public enum Outcome: Sendable, Equatable {
        /// The user matches.
        case match
        /// The user cancels the prompt.
        case cancel
        /// The finger or face does not match.
        case noMatch
    }

    private struct State {
        var status: BiometricSystemStatus
        var type: BiometryType
        var enrolledSet: [UInt8]
        var outcomes: [Outcome] = []
        var keys: [String: SecureBytes] = [:]
        var prompts: [String] = []
        var cachedAccount: String?
    }

    private let state: Mutex<State>

    /// Creates a sensor that is available and enrolled.
    public init(status: BiometricSystemStatus = .available, type: BiometryType = .touchID) {
        state = Mutex(State(status: status, type: type, enrolledSet: [UInt8](repeating: 1, count: 32)))
    }

    /// The system status.
    public var systemStatus: BiometricSystemStatus { state.withLock { $0.status } }
    /// The biometry type.
    public var biometryType: BiometryType { state.withLock { $0.type } }
    /// Changes when ``changeEnrolledSet()`` is called.
    public var enrolledSetFingerprint: [UInt8] { state.withLock { $0.enrolledSet } }
    /// Every prompt shown so far.
    public var promptsShown: [String] { state.withLock { $0.prompts } }

    /// Sets the system status (for example `.lockout`).
    public func setStatus(_ status: BiometricSystemStatus) { state.withLock { $0.status = status } }
    /// Queues outcomes for the next evaluations (default: match).
    public func script(_ outcomes: Outcome...) { state.withLock { $0.outcomes += outcomes } }
    /// Simulates enrolling another finger.
    public func changeEnrolledSet() {
        state.withLock { s in
            s.enrolledSet = s.enrolledSet.map { $0 &+ 1 }
            s.cachedAccount = nil
        }
    }

    /// Stores a copy of `key`.
    public func storeKey(_ key: SecureBytes, account: String) throws(BiometryError) {
        let copy: SecureBytes
        do throws(SecureCoreError) { copy = try key.copy() } catch { throw .secureCore(error) }
        state.withLock { $0.keys[account] = copy }
    }

    /// Plays the next scripted outcome and releases a copy of the key on a match.
    public func evaluate(prompt: String, account: String, configuration: BiometricConfiguration)
        async throws(BiometryError)
        -> SecureBytes
    {
        let result: Result<SecureBytes, BiometryError> = state.withLock { s in
            // A locked-out sensor with the passcode fallback allowed asks for the device
            // passcode instead: the scripted outcome then stands for the passcode's.
            let passcode = s.status == .lockout && configuration.allowFallbackToDevicePasscode
            guard s.status == .available || passcode else { return .failure(.failed(s.status)) }
            guard let key = s.keys[account] else { return .failure(.notConfigured) }
            let reuse = !configuration.invalidateLocalAuthenticationContextAfterUse && s.cachedAccount == account
            if !reuse {
                s.prompts.append(prompt)
                let outcome = s.outcomes.isEmpty ? .match : s.outcomes.removeFirst()
                switch outcome {
                case .cancel: return .failure(.cancelled)
                case .noMatch: return .failure(.failed(.available))
                case .match:
                    s.cachedAccount = configuration.invalidateLocalAuthenticationContextAfterUse ? nil : account
                }
            }
            do throws(SecureCoreError) { return .success(try key.copy()) } catch { return .failure(.secureCore(error)) }
        }
        return try result.get()
    }

    /// Every setting works here: the evaluation context is reused only when
    /// `invalidateLocalAuthenticationContextAfterUse` is false, ``changeEnrolledSet()`` changes the
    /// fingerprint the callers compare for `invalidateBiometricFactorAfterChange`, and a lockout
    /// falls back to the (scripted) device passcode when `allowFallbackToDevicePasscode` is true.
    /// - Parameter configuration: any configuration.
    public func checkConfiguration(_ configuration: BiometricConfiguration) throws(BiometryError) {}

    /// Removes the key.
    public func deleteKey(account: String) {
        state.withLock { s in
            s.keys[account]?.destroy()
            s.keys[account] = nil
        }
    }
}
