import PinStrength
import SecureCore

/// What the strength check of a new PIN found (``ActivationService/beginPasswordChange(currentPassword:newPassword:strength:)``).
public enum NewPasswordStrength: Sendable, Equatable {
    /// No weakness the policy cares about.
    case acceptable
    /// Weak, but the policy only warns: tell the user, the change may go on. The names are the
    /// meter's (`frequently-used`, `repeating`, …; for a password, the estimator's penalties).
    case weak([String])
}

extension ActivationService {
    /// Step 1 of the PIN change, with the new PIN checked first by the same meter and policy as
    /// a vault's PIN (`PinStrength.PinStrengthMeter` for digits, `PinStrength.PasswordStrengthEstimator`
    /// below a `fair` rating for anything else). A new PIN the policy rejects is refused before
    /// anything is sent: nothing is counted, and the current password is cleared.
    /// - Parameters:
    ///   - currentPassword: the current PIN as the user typed it.
    ///   - newPassword: the PIN the user wants; only read (pass it again to
    ///     ``finishPasswordChange(newPassword:data:)``).
    ///   - policy: the policy (`warn` lets a weak PIN through and reports it; `reject` refuses it).
    /// - Returns: the opaque change data and what the check found.
    /// - Throws: ``ActivationError/weakPassword(weaknesses:)`` for a PIN the policy rejects, then
    ///   what ``beginPasswordChange(currentPassword:)`` throws.
    public func beginPasswordChange(
        currentPassword: sending MutablePassword, newPassword: Password,
        strength policy: PinWarningPolicy = PinWarningPolicy()
    ) async throws(ActivationError) -> (data: PasswordChangeData, strength: NewPasswordStrength) {
        let found: [String]
        do throws(ActivationError) {
            found = try Self.weaknesses(of: newPassword, policy: policy)
        } catch {
            try? currentPassword.clear()
            throw error
        }
        if !found.isEmpty && policy.action == .reject {
            try? currentPassword.clear()
            throw .weakPassword(weaknesses: found)
        }
        let data = try await beginPasswordChange(currentPassword: currentPassword)
        return (data, found.isEmpty ? .acceptable : .weak(found))
    }

    /// The weaknesses of `password` that `policy` cares about (empty: none).
    static func weaknesses(of password: Password, policy: PinWarningPolicy) throws(ActivationError) -> [String] {
        let digitsOnly = password.withUnsafeUTF8Bytes { bytes in
            !bytes.isEmpty && bytes.allSatisfy { (0x30...0x39).contains($0) }
        }
        if digitsOnly {
            do throws(PinStrengthError) {
                switch policy.verdict(for: try PinStrengthMeter().evaluate(password)) {
                case .acceptable: return []
                case .warn(let flags), .reject(let flags): return flags.names
                }
            } catch {
                throw .wrongParameter(reason: "the new PIN cannot be measured: \(error)")
            }
        }
        let estimate = PasswordStrengthEstimator().estimate(password)
        return estimate.rating < .fair ? (estimate.penalties.names.isEmpty ? ["short"] : estimate.penalties.names) : []
    }
}
