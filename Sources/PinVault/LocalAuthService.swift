import SecureCore

/// Unlocks a vault with biometry first when it is available and configured, the app PIN as the
/// fallback. The app PIN works whatever the state of system biometry (a
/// biometric lockout asks the system for *its* passcode, not for ours).
public struct LocalAuthService: Sendable {
    /// What to try first.
    public enum Order: Sendable, Equatable {
        /// Biometry when possible, then the PIN.
        case biometryFirst
        /// The PIN only (biometry on the user's request elsewhere).
        case pinOnly
    }

    /// How an unlock ended, for the UI.
    public enum Method: Sendable, Equatable {
        /// Biometry opened the vault.
        case biometry
        /// The PIN opened the vault.
        case pin
    }

    /// The vault.
    public let vault: PinVault
    /// What to try first.
    public var order: Order

    /// Creates the service.
    public init(vault: PinVault, order: Order = .biometryFirst) {
        self.vault = vault
        self.order = order
    }

    /// Unlocks and runs `body` with the secret.
    /// - Parameters:
    ///   - prompt: shown by the biometric prompt.
    ///   - pinProvider: asked for the PIN when biometry is not used or fails;
    ///     returns nil when the user cancels.
    ///   - body: runs with the secret, which is wiped afterwards.
    /// - Returns: how the vault was opened and what `body` returned.
    /// - Throws: ``VaultError/cancelled`` when the PIN entry is cancelled,
    ///   the PIN errors of ``PinVault/unlock(pin:_:)``, or what `body` throws.
    public func unlock<R>(
        prompt: String, pinProvider: () async -> Password?, _ body: (SecureBytes) throws -> R
    ) async throws -> (Method, R) {
        if order == .biometryFirst && vault.canUnlockWithBiometry {
            do {
                let result = try await vault.unlockWithBiometry(prompt: prompt, body)
                return (.biometry, result)
            } catch VaultError.locked {
                throw VaultError.locked
            } catch let error as VaultError {
                // Cancelled, no match, lockout, invalidated: fall back to the PIN.
                _ = error
            }
        }
        guard let pin = await pinProvider() else { throw VaultError.cancelled }
        defer { pin.destroy() }
        let result = try await vault.unlock(pin: pin, body)
        return (.pin, result)
    }
}
