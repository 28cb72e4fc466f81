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
    ///   ``VaultError/locked``, or the PIN errors of `PinVault.unlock(pin:_:)`.
    public func unlock<R>(
        prompt: String, pinProvider: () async -> Password?, _ body: (SecureBytes) -> R
    ) async throws(VaultError) -> (Method, R) {
        let (method, secret) = try await open(prompt: prompt, pinProvider: pinProvider)
        defer { secret.destroy() }
        return (method, body(secret))
    }

    /// ``unlock(prompt:pinProvider:_:)`` for a `body` that can fail.
    /// - Returns: how the vault was opened and what `body` returned.
    /// - Throws: ``VaultUnlockError/vault(_:)`` with the errors of
    ///   ``unlock(prompt:pinProvider:_:)``, or ``VaultUnlockError/body(_:)`` with what `body` threw.
    public func unlock<R, E: Error>(
        prompt: String, pinProvider: () async -> Password?, _ body: (SecureBytes) throws(E) -> R
    ) async throws(VaultUnlockError<E>) -> (Method, R) {
        let method: Method
        let secret: SecureBytes
        do throws(VaultError) {
            (method, secret) = try await open(prompt: prompt, pinProvider: pinProvider)
        } catch {
            throw .vault(error)
        }
        defer { secret.destroy() }
        return (method, try VaultUnlockError<E>.body { () throws(E) in try body(secret) })
    }

    /// Opens with biometry first when configured, then with the PIN.
    func open(prompt: String, pinProvider: () async -> Password?) async throws(VaultError) -> (Method, SecureBytes) {
        if order == .biometryFirst && vault.canUnlockWithBiometry {
            do throws(VaultError) {
                return (.biometry, try await vault.openWithBiometry(prompt: prompt))
            } catch .locked {
                throw .locked
            } catch {
                // Cancelled, no match, lockout, invalidated: fall back to the PIN.
            }
        }
        guard let pin = await pinProvider() else { throw .cancelled }
        defer { pin.destroy() }
        return (.pin, try await vault.openOffExecutor(pin: pin))
    }
}
