import Activation
import ActivationKeyring
import Foundation
import PinEntry
import PinVault
import SecureCore

/// `securepin vault --store auto|keyring|files`: a software vault's pepper in the Secret Service
/// (`docs/keychain.md`). The vault's files stay in `--vault DIR`, where its key file is destroyed
/// in place; the keyring holds only the pepper its PIN slot and failure record need.
extension VaultCommand {
    /// `--store`, `--keychain-vault NAME` and `--access-group G`.
    struct StoreOptions {
        /// What was asked for (default auto: the vault's own store; files for a new vault).
        var request: ActivationStoreRequest
        /// The pepper item's `service` attribute.
        var service: String
        /// Its `access-group` attribute (nil: private).
        var accessGroup: String?

        /// The keyring, its default collection unlocked.
        func unlockedKeyring() throws -> KeyringVaultPepper {
            do throws(ActivationError) {
                let keyring = try KeyringVaultPepper(service: service, accessGroup: accessGroup)
                _ = try keyring.collection()
                return keyring
            } catch {
                throw KeyringFailure(error: error, note: "nothing was changed")
            }
        }
    }

    /// A keyring failure of a vault command: a locked keyring exits 3, as for the client.
    struct KeyringFailure: Error {
        let error: ActivationError
        let note: String

        func report(command: String) -> Int32 {
            CLI.printError("securepin: \(command): \(ActivationStore.describe(error)); \(note)")
            switch error {
            case .storageLocked: return ExitCode.locked
            case .storageUnavailable: return ExitCode.refused
            default: return ExitCode.usage
            }
        }
    }

    /// The keyring item a vault's pepper is in.
    struct PepperItem {
        let keyring: KeyringVaultPepper
        let id: String
        /// False when the keyring holds no item for the vault (destroy only).
        var found = true
    }

    static func parseStore(_ args: inout Arguments) -> StoreOptions {
        let text = args.value("--store") ?? "auto"
        guard let request = ActivationStoreRequest(rawValue: text) else {
            args.fail("--store must be auto, keyring or files, not '\(text)'")
        }
        return StoreOptions(
            request: request, service: args.value("--keychain-vault") ?? KeyringVaultPepper.defaultService,
            accessGroup: args.value("--access-group"))
    }

    /// Puts the keyring's pepper into `options` when the vault keeps one there.
    /// - Parameter forDestroy: destroy must work on any vault: one whose file cannot be read is
    ///   treated as one without a pepper, and one whose pepper the keyring lacks (an interrupted
    ///   init) is destroyed without it.
    /// - Returns: the item, or nil for a vault without a pepper.
    static func attachPepper(
        _ directory: String, _ options: inout PinVault.Options, store: StoreOptions, args: Arguments,
        forDestroy: Bool = false
    ) throws -> PepperItem? {
        let probe = PinVault(directory: directory, options: options)
        guard probe.exists else { return nil }
        let needs: Bool
        do throws(VaultError) { needs = try probe.requiresPepper() } catch {
            if forDestroy { return nil }
            throw error
        }
        guard needs else {
            if store.request == .keyring {
                args.fail(
                    "the vault at \(directory) keeps no pepper in the keyring (--store files); "
                        + "securepin vault migrate-store --vault \(directory) moves it there")
            }
            return nil
        }
        guard store.request != .files else { throw VaultError.pepperRequired }
        let keyring = try store.unlockedKeyring()
        let id = try probe.identifier()
        let pepper: SecureBytes?
        do throws(ActivationError) { pepper = try keyring.read(vaultId: id) } catch {
            throw KeyringFailure(error: error, note: "nothing was changed")
        }
        guard let pepper else {
            if forDestroy { return PepperItem(keyring: keyring, id: id, found: false) }
            args.fail(
                "the keyring holds no pepper for the vault at \(directory) (service \(keyring.service), key \(id); "
                    + "another --keychain-vault or --access-group, or an interrupted vault init): "
                    + "it cannot be opened without it")
        }
        options.pepper = pepper
        return PepperItem(keyring: keyring, id: id)
    }

    /// `securepin vault migrate-store --vault DIR [--pin-fd N]`: the vault's PIN slot moves under a
    /// new pepper kept in the keyring. The pepper is stored and read back first; then
    /// `PinVault.addPepper` rewrites the vault (a PIN change to the same PIN, crash-safe) and
    /// destroys the old key half in place. A crash leaves a vault that opens from the files alone
    /// or with the keyring's pepper; never one that needs a pepper the keyring lacks.
    static func migrateStore(_ args: inout Arguments, directory: inout String, store: StoreOptions) throws -> Int32 {
        let input = pinInput(&args, option: "--pin-fd", prompt: "PIN")
        let (_, options) = binding(&args)
        directory = requireVault(&args)
        if store.request == .files {
            args.usageError("vault migrate-store moves a vault to the keyring: not --store files")
        }
        input.checkAvailable(command: "vault migrate-store")
        let vault = PinVault(directory: directory, options: options)
        guard vault.exists else { throw VaultError.notFound }
        let keyring = try store.unlockedKeyring()
        let id = try vault.identifier()
        if try vault.requiresPepper() {
            let present: Bool
            do throws(ActivationError) { present = try keyring.contains(vaultId: id) } catch {
                throw KeyringFailure(error: error, note: "nothing was changed")
            }
            guard present else {
                args.fail(
                    "the vault at \(directory) has a pepper, and the keyring holds none for it (service "
                        + "\(keyring.service), key \(id))")
            }
            print("already in the keyring: the vault's pepper is in service \(keyring.service), key \(id)")
            return ExitCode.ok
        }
        let state = try vault.status()
        guard state.binding == .software else {
            args.fail(
                "a vault bound to \(state.binding.rawValue) keeps its guess counter outside the directory already")
        }
        try preflight(state, command: "vault migrate-store")
        let pepper = try SecureBytes.random(count: KeyringVaultPepper.byteCount)
        defer { pepper.destroy() }
        // The pepper first, read back; an item the vault does not use yet is harmless.
        do throws(ActivationError) { try keyring.store(pepper, vaultId: id) } catch {
            throw KeyringFailure(error: error, note: "nothing was changed")
        }
        let pin = input.read(format: PinFormat(state.pinFormat), command: "vault migrate-store")
        defer { pin.destroy() }
        do throws(VaultError) {
            try vault.addPepper(pepper, pin: pin)
        } catch {
            // The item goes only while the vault certainly does not need it.
            if error == .wiped || (try? vault.requiresPepper()) == false { try? keyring.remove(vaultId: id) }
            throw error
        }
        print("moved: the vault's pepper is in the keyring (service \(keyring.service), key \(id))")
        print("the files stay in \(directory); the old key half was destroyed in place")
        return ExitCode.ok
    }
}
