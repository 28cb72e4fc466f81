import Activation
import CLibSecret
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One item's place in the Secret Service: its attributes (public names, never a secret).
struct SecretItemAddress: Sendable, Equatable {
    /// `service`: one of the keychain configuration's service names.
    var service: String
    /// `key`: the item's key in its service.
    var key: String
    /// `instance`: the activation's instance id.
    var instance: String
    /// `access-group`: shared by cooperating applications.
    var accessGroup: String

    /// The attributes, by the names `secret-tool search` shows.
    var attributes: [(String, String)] {
        [("service", service), ("key", key), ("instance", instance), ("access-group", accessGroup)]
    }
}

/// A connection to the Secret Service through libsecret, over the session bus.
///
/// Secrets go to libsecret as a `SecretValue` made by `secret_value_new` straight from secure
/// memory (libsecret copies it into its own non-pageable memory, which it wipes when freed),
/// and come back from `secret_value_get` straight into `SecureCore.SecureBytes`; the value is
/// then released, which wipes libsecret's copy. libsecret opens an encrypted transfer session
/// with the service; what the D-Bus library buffers is outside this module's reach.
///
/// Every operation first asks whether the default collection is locked, and throws
/// `ActivationError.storageLocked(store:)` if it is, so that a locked keyring never reads as
/// "no activation" and no unlock prompt is ever raised from here.
final class SecretServiceConnection: @unchecked Sendable {
    // @unchecked: the service is a GDBus proxy; its synchronous calls may come from any thread.
    private let service: UnsafeMutablePointer<SecretService>
    /// The schema every item carries (`xdg:schema`).
    static let schemaName = "io.securepin.Keychain"
    private let schema: UnsafeMutablePointer<SecretSchema>

    /// Connects and opens a transfer session. The collections and their items are not loaded:
    /// every operation finds its own items by attributes, and loading every item of the keyring
    /// would cost time for a user with many and race a process that deletes one meanwhile
    /// ("No such secret item at path").
    /// - Throws: `ActivationError.storageUnavailable(reason:)` when there is no session bus
    ///   (no address, so no autolaunch is tried) or no Secret Service on it.
    init() throws(ActivationError) {
        // Without a bus address GLib would try to autolaunch one (dbus-launch, X11): never here.
        let address = getenv("DBUS_SESSION_BUS_ADDRESS").map { String(cString: $0) } ?? ""
        let runtime = getenv("XDG_RUNTIME_DIR").map { String(cString: $0) } ?? ""
        if address.isEmpty && (runtime.isEmpty || access(runtime + "/bus", F_OK) != 0) {
            throw .storageUnavailable(reason: "no session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
        }
        var error: UnsafeMutablePointer<GError>?
        let flags = SecretServiceFlags(rawValue: SECRET_SERVICE_OPEN_SESSION.rawValue)
        guard let service = secret_service_get_sync(flags, nil, &error) else {
            throw .storageUnavailable(reason: "no Secret Service: \(Self.consume(error))")
        }
        self.service = service
        let types = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, nil)
        for name in ["service", "key", "instance", "access-group"] {
            g_hash_table_insert(types, g_strdup(name), nil)  // nil: SECRET_SCHEMA_ATTRIBUTE_STRING (0)
        }
        schema = secret_schema_newv(Self.schemaName, SECRET_SCHEMA_NONE, types)
        g_hash_table_unref(types)
    }

    deinit {
        secret_schema_unref(schema)
        g_object_unref(service)
    }

    /// The default collection's label and D-Bus path, after checking it is unlocked.
    /// - Throws: `ActivationError.storageLocked(store:)`,
    ///   `ActivationError.storageUnavailable(reason:)` when there is no default collection.
    @discardableResult
    func requireUnlocked() throws(ActivationError) -> String {
        var error: UnsafeMutablePointer<GError>?
        guard let collection = secret_collection_for_alias_sync(service, "default", SECRET_COLLECTION_NONE, nil, &error)
        else {
            let why = error == nil ? "the Secret Service has no default collection" : Self.consume(error)
            throw .storageUnavailable(reason: why)
        }
        defer { g_object_unref(collection) }
        let name = Self.describe(collection)
        guard secret_collection_get_locked(collection) == 0 else { throw .storageLocked(store: name) }
        return name
    }

    /// Stores (or replaces, atomically in the service) the item at `address` with `secret`.
    func store(
        _ address: SecretItemAddress, label: String, contentType: String, secret: UnsafeRawBufferPointer
    ) throws(ActivationError) {
        try requireUnlocked()
        guard let start = secret.baseAddress, !secret.isEmpty else {
            throw .wrongParameter(reason: "an empty secret is not stored")
        }
        let value = secret_value_new(start.assumingMemoryBound(to: CChar.self), secret.count, contentType)
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        let attributes = Self.table(address)
        defer { g_hash_table_unref(attributes) }
        var error: UnsafeMutablePointer<GError>?
        guard secret_service_store_sync(service, schema, attributes, nil, label, value, nil, &error) != 0 else {
            throw Self.failure("store \(address.service)", error)
        }
    }

    /// Reads the item at `address` into secure memory, or nil when there is none.
    func read(_ address: SecretItemAddress) throws(ActivationError) -> SecureBytes? {
        try requireUnlocked()
        let flags = SecretSearchFlags(rawValue: SECRET_SEARCH_LOAD_SECRETS.rawValue)
        guard let items = try search(address, flags: flags) else { return nil }
        defer { g_list_free_full(items, g_object_unref) }
        let item = items.pointee.data.assumingMemoryBound(to: SecretItem.self)
        guard secret_item_get_locked(item) == 0 else { throw .storageLocked(store: address.service) }
        guard let value = secret_item_get_secret(item) else {
            throw .storageUnavailable(reason: "the Secret Service gave no secret for \(address.service)")
        }
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        var length = 0
        guard let bytes = secret_value_get(value, &length), length > 0, length <= 1 << 16 else {
            throw .invalidActivationData(reason: "the \(address.service) item is empty or too large")
        }
        let out = try coreStep { () throws(SecureCoreError) in try SecureBytes(count: length) }
        out.withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(start: bytes, count: length)) }
        return out
    }

    /// Deletes every item at `address`; none is no error.
    func remove(_ address: SecretItemAddress) throws(ActivationError) {
        try requireUnlocked()
        let attributes = Self.table(address)
        defer { g_hash_table_unref(attributes) }
        var error: UnsafeMutablePointer<GError>?
        _ = secret_service_clear_sync(service, schema, attributes, nil, &error)
        if error != nil { throw Self.failure("delete \(address.service)", error) }
    }

    /// Whether an item is at `address` (its secret not loaded).
    func contains(_ address: SecretItemAddress) throws(ActivationError) -> Bool {
        try requireUnlocked()
        guard let items = try search(address, flags: SECRET_SEARCH_NONE) else { return false }
        g_list_free_full(items, g_object_unref)
        return true
    }

    /// The keys of the items in `service` for `instance` and `accessGroup`.
    func keys(service name: String, instance: String, accessGroup: String) throws(ActivationError) -> [String] {
        try requireUnlocked()
        let attributes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free)
        defer { g_hash_table_unref(attributes) }
        for (key, value) in [("service", name), ("instance", instance), ("access-group", accessGroup)] {
            g_hash_table_insert(attributes, g_strdup(key), g_strdup(value))
        }
        var error: UnsafeMutablePointer<GError>?
        let list = secret_service_search_sync(service, schema, attributes, SECRET_SEARCH_ALL, nil, &error)
        if error != nil { throw Self.failure("search \(name)", error) }
        defer { g_list_free_full(list, g_object_unref) }
        var keys: [String] = []
        var node = list
        while let current = node {
            let item = current.pointee.data.assumingMemoryBound(to: SecretItem.self)
            if let found = secret_item_get_attributes(item) {
                if let key = g_hash_table_lookup(found, "key") {
                    keys.append(String(cString: key.assumingMemoryBound(to: CChar.self)))
                }
                g_hash_table_unref(found)
            }
            node = current.pointee.next
        }
        return keys
    }

    /// Locks the default collection (tests, and a user who wants the keyring closed).
    func lockDefaultCollection() throws(ActivationError) {
        var error: UnsafeMutablePointer<GError>?
        guard let collection = secret_collection_for_alias_sync(service, "default", SECRET_COLLECTION_NONE, nil, &error)
        else { throw Self.failure("find the default collection", error) }
        defer { g_object_unref(collection) }
        let objects = g_list_append(nil, collection)
        defer { g_list_free(objects) }
        _ = secret_service_lock_sync(service, objects, nil, nil, &error)
        if error != nil { throw Self.failure("lock", error) }
    }

    private func search(_ address: SecretItemAddress, flags: SecretSearchFlags) throws(ActivationError)
        -> UnsafeMutablePointer<GList>?
    {
        let attributes = Self.table(address)
        defer { g_hash_table_unref(attributes) }
        var error: UnsafeMutablePointer<GError>?
        let list = secret_service_search_sync(service, schema, attributes, flags, nil, &error)
        if error != nil {
            g_list_free_full(list, g_object_unref)
            throw Self.failure("search \(address.service)", error)
        }
        return list
    }

    private static func table(_ address: SecretItemAddress) -> OpaquePointer {
        let table = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free)!
        for (key, value) in address.attributes { g_hash_table_insert(table, g_strdup(key), g_strdup(value)) }
        return table
    }

    /// The collection's label and object path, e.g. `Login (/org/freedesktop/secrets/collection/login)`.
    private static func describe(_ collection: UnsafeMutablePointer<SecretCollection>) -> String {
        let path = collection.withMemoryRebound(to: GDBusProxy.self, capacity: 1) {
            g_dbus_proxy_get_object_path($0).map { String(cString: $0) } ?? "?"
        }
        guard let label = secret_collection_get_label(collection) else { return path }
        defer { g_free(label) }
        return "\(String(cString: label)) (\(path))"
    }

    private static func consume(_ error: UnsafeMutablePointer<GError>?) -> String {
        guard let error else { return "unknown error" }
        defer { g_error_free(error) }
        return error.pointee.message.map { String(cString: $0) } ?? "unknown error"
    }

    private static func failure(_ step: String, _ error: UnsafeMutablePointer<GError>?) -> ActivationError {
        .storageUnavailable(reason: "Secret Service: \(step): \(consume(error))")
    }
}

/// Runs a secure-core step, its failure as `ActivationError.core(_:)`.
func coreStep<R>(_ body: () throws(SecureCoreError) -> R) throws(ActivationError) -> R {
    do throws(SecureCoreError) { return try body() } catch { throw .core(error) }
}
