import Activation
import DurableStorage
import SecureCore

/// Which store keeps a client's activation.
public enum ActivationStoreKind: String, Sendable, CaseIterable {
    /// The Secret Service (``KeyringActivationStorage``).
    case keyring
    /// Files in the state directory (`Activation.FileActivationStorage`).
    case files
}

/// What the caller asks for: a store, or ``ActivationStoreRequest/auto``.
public enum ActivationStoreRequest: String, Sendable, CaseIterable {
    /// The Secret Service when the session bus offers one, files otherwise.
    case auto
    /// The Secret Service, or an error.
    case keyring
    /// Files.
    case files
}

/// The store chosen for an instance, and why.
public struct ActivationStoreChoice: Sendable {
    /// The kind chosen.
    public let kind: ActivationStoreKind
    /// Why, in a sentence for a person.
    public let reason: String
    /// The store.
    public let storage: any DeviceActivationStorage
}

/// Chooses between the Secret Service and files, and moves an activation from files to the
/// keyring.
public enum ActivationStore {
    /// Whether a Secret Service with a default collection is on the session bus, without raising
    /// any prompt. A locked collection is no problem here: the store reports it on use, so that
    /// a locked keyring never reads as a missing activation.
    /// - Returns: `nil` when one is there, or why not.
    public static func secretServiceProblem() -> String? {
        do throws(ActivationError) {
            try SecretServiceConnection().requireUnlocked()
            return nil
        } catch {
            if case .storageLocked = error { return nil }
            return describe(error)
        }
    }

    /// The Secret Service's default collection when it is usable.
    /// - Returns: its label and path.
    /// - Throws: `ActivationError.storageUnavailable(reason:)`, `ActivationError.storageLocked(store:)`.
    public static func secretServiceCollection() throws(ActivationError) -> String {
        try SecretServiceConnection().requireUnlocked()
    }

    /// Opens the store for `instanceId`.
    ///
    /// ``ActivationStoreRequest/auto`` keeps files when the state directory already holds this
    /// instance's activation (move it with ``migrateToKeyring(instanceId:directory:keychain:)``),
    /// and otherwise takes the Secret Service when the session bus offers one, files when not.
    /// - Parameters:
    ///   - request: what the caller asked for.
    ///   - instanceId: the instance.
    ///   - directory: the state directory (the files, or the keyring store's lock file).
    ///   - keychain: the item names.
    /// - Returns: the store and why it was chosen.
    /// - Throws: what the chosen store's initialiser throws.
    public static func open(
        _ request: ActivationStoreRequest, instanceId: String, directory: String, keychain: KeychainConfiguration
    ) throws(ActivationError) -> ActivationStoreChoice {
        func files(_ reason: String) throws(ActivationError) -> ActivationStoreChoice {
            ActivationStoreChoice(
                kind: .files, reason: reason, storage: try FileActivationStorage(directory: directory))
        }
        func keyring(_ reason: String) throws(ActivationError) -> ActivationStoreChoice {
            let store = try KeyringActivationStorage(
                keychain: keychain, instanceId: instanceId, lockDirectory: directory)
            return ActivationStoreChoice(kind: .keyring, reason: reason, storage: store)
        }
        switch request {
        case .files: return try files("--store files")
        case .keyring: return try keyring("--store keyring")
        case .auto:
            let state = directory + "/" + StorageNames(instanceId: instanceId).state
            if DurableFile.exists(state) {
                return try files("the state directory holds this activation in files (client migrate-store moves it)")
            }
            if let problem = secretServiceProblem() {
                return try files("no usable Secret Service: \(problem)")
            }
            return try keyring("the session bus offers a Secret Service")
        }
    }

    /// What ``migrateToKeyring(instanceId:directory:keychain:)`` moved.
    public struct Migration: Sendable, Equatable {
        /// The blob names now in the keyring.
        public let moved: [String]
        /// Whether the keyring already held the same activation (an earlier run was
        /// interrupted after copying): the files were only removed.
        public let wasAlreadyInKeyring: Bool
    }

    /// Moves the activation of `instanceId` (state, keys, tokens) from the files in `directory`
    /// to the Secret Service, under the lock both stores share.
    ///
    /// Copy, then check, then delete: every blob is written to the keyring and read back and
    /// compared before any file is removed, and the state file goes first, then the keys, then
    /// the tokens. A crash at any instant leaves the activation in the files, in both stores
    /// (a rerun finishes), or in the keyring; never in neither. A keyring that already holds
    /// another activation of this instance is refused and nothing changes.
    /// - Parameters:
    ///   - instanceId: the instance.
    ///   - directory: the state directory.
    ///   - keychain: the item names.
    /// - Returns: what moved.
    /// - Throws: `ActivationError.missingActivation` when neither store holds it,
    ///   `ActivationError.invalidActivationState(reason:)` when the keyring holds another,
    ///   `ActivationError.invalidActivationData(reason:)` when a copy does not read back the
    ///   same, and the stores' errors (`ActivationError.storageLocked(store:)` among them).
    public static func migrateToKeyring(
        instanceId: String, directory: String, keychain: KeychainConfiguration
    ) throws(ActivationError) -> Migration {
        let names = StorageNames(instanceId: instanceId)
        guard DurableFile.exists(directory) else {
            // No state directory: nothing to move, and none is created.
            let keyring = try KeyringActivationStorage(
                keychain: keychain, instanceId: instanceId, lockDirectory: directory, prepare: false)
            guard try keyring.read(names.state) != nil else { throw .missingActivation }
            return Migration(moved: [], wasAlreadyInKeyring: true)
        }
        let files = try FileActivationStorage(directory: directory)
        let keyring = try KeyringActivationStorage(keychain: keychain, instanceId: instanceId, lockDirectory: directory)
        return try files.withExclusiveAccess { () throws(ActivationError) -> Migration in
            let inKeyring = try keyring.read(names.state)
            guard let state = try files.read(names.state) else {
                guard inKeyring != nil else { throw .missingActivation }
                return Migration(moved: [], wasAlreadyInKeyring: true)
            }
            if let inKeyring, inKeyring != state {
                throw .invalidActivationState(reason: "the keyring already holds another activation of \(instanceId)")
            }
            let tokens = try ActivationError.converting { () throws(StorageError) in
                try DurableFile.entries(in: directory).filter {
                    $0.hasPrefix("\(instanceId).token-") && !$0.hasPrefix(".")
                }
            }.sorted()
            // Secrets first, the state last: the state is what makes an activation exist.
            for name in [names.keys] + tokens {
                guard let secret = try files.readSecret(name) else {
                    if name == names.keys { throw .invalidActivationData(reason: "the key file is missing") }
                    continue
                }
                defer { secret.destroy() }
                try keyring.writeSecret(name, secret)
                guard let back = try keyring.readSecret(name) else {
                    throw .invalidActivationData(reason: "\(name) did not read back from the keyring")
                }
                defer { back.destroy() }
                guard try coreStep({ () throws(SecureCoreError) in try back.isEqual(to: secret) }) else {
                    throw .invalidActivationData(reason: "\(name) read back different from the keyring")
                }
            }
            if inKeyring == nil {
                try keyring.write(names.state, state)
                guard try keyring.read(names.state) == state else {
                    throw .invalidActivationData(reason: "the state read back different from the keyring")
                }
            }
            // Everything is in the keyring: now the files go, the state first.
            for name in [names.state, names.keys] + tokens { try files.remove(name) }
            return Migration(moved: [names.keys] + tokens + [names.state], wasAlreadyInKeyring: inKeyring != nil)
        }
    }

    /// A sentence for a store error.
    /// - Parameter error: the error.
    /// - Returns: what a person reads.
    public static func describe(_ error: ActivationError) -> String {
        switch error {
        case .storageLocked(let store):
            "the keyring \(store) is locked: unlock it (log in, or unlock the keyring) and try again"
        case .storageUnavailable(let reason): reason
        default: "\(error)"
        }
    }
}
