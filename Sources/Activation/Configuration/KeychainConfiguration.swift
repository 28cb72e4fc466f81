/// Where a keychain-backed ``DeviceActivationStorage`` keeps an activation: the seed SDK's
/// keychain section (`PowerAuthKeychainConfiguration`), with its names and defaults.
///
/// On a phone these name Keychain services. On Linux the keychain is the Secret Service (GNOME
/// Keyring, KWallet, KeePassXC over D-Bus): each name becomes the `service` attribute of the
/// items, the keys the `key` attribute, and every item also carries the instance id and the
/// access group, so cooperating applications find each other's items and nothing else. The
/// names are public: they say where a secret is, never what it is.
///
/// | Property | Linux meaning | Default |
/// | --- | --- | --- |
/// | ``keychainInstanceName_Status`` | `service` of the activation's state item | ``defaultStatus`` |
/// | ``keychainInstanceName_Possession`` | `service` of the possession and transport keys | ``defaultPossession`` |
/// | ``keychainInstanceName_Biometry`` | `service` of a biometry key a keyring-backed authenticator stores | ``defaultBiometry`` |
/// | ``keychainInstanceName_TokenStore`` | `service` of the token secrets | ``defaultTokenStore`` |
/// | ``keychainKey_Possession`` | `key` of the possession item (one per instance) | ``defaultPossessionKey`` |
/// | ``keychainKey_Biometry`` | `key` of the biometry item | the instance id |
/// | ``accessGroup`` | `access-group` attribute shared by cooperating applications | none: this application's own |
public struct KeychainConfiguration: Sendable, Equatable {
    /// The seed's status service name.
    public static let defaultStatus = "io.getlime.PowerAuthKeychain.StatusKeychain"
    /// The seed's possession service name.
    public static let defaultPossession = "io.getlime.PowerAuthKeychain.PossessionKeychain"
    /// The seed's biometry service name.
    public static let defaultBiometry = "io.getlime.PowerAuthKeychain.BiometryKeychain"
    /// The seed's token store service name.
    public static let defaultTokenStore = "io.getlime.PowerAuthKeychain.TokenStore"
    /// The seed's key of the possession item.
    public static let defaultPossessionKey = "PA2KeychainKey_Possession"
    /// The `access-group` value of items that no other application shares.
    public static let privateAccessGroup = "private"

    // The seed's property names are kept as they are, underscores included.
    // swift-format-ignore: AlwaysUseLowerCamelCase
    /// The service that holds the activation's state (public data: identifiers, counter,
    /// wrapped knowledge key). Change it only with a reason.
    public let keychainInstanceName_Status: String
    // swift-format-ignore: AlwaysUseLowerCamelCase
    /// The service that holds the possession factor's key (with the transport key).
    public let keychainInstanceName_Possession: String
    // swift-format-ignore: AlwaysUseLowerCamelCase
    /// The service that holds the biometry factor's key.
    public let keychainInstanceName_Biometry: String
    // swift-format-ignore: AlwaysUseLowerCamelCase
    /// The service that holds the content of the tokens.
    public let keychainInstanceName_TokenStore: String
    // swift-format-ignore: AlwaysUseLowerCamelCase
    /// The key of the possession item in its service.
    public let keychainKey_Possession: String
    // swift-format-ignore: AlwaysUseLowerCamelCase
    /// The key of the biometry item in its service; `nil` means the instance id.
    public let keychainKey_Biometry: String?
    /// The group of applications that share the items (the seed's access group): every item
    /// carries it as its `access-group` attribute. `nil` keeps them to this application
    /// (``privateAccessGroup``). The Secret Service does not enforce it: any program in the
    /// user's unlocked session may read the collection, as on a desktop it always can.
    public let accessGroup: String?

    /// Validates and stores the names; each defaults to the seed's.
    /// - Parameters:
    ///   - status: the status service.
    ///   - possession: the possession service.
    ///   - biometry: the biometry service.
    ///   - tokenStore: the token store service.
    ///   - possessionKey: the key of the possession item.
    ///   - biometryKey: the key of the biometry item; `nil` for the instance id.
    ///   - accessGroup: the shared access group; `nil` for none.
    /// - Throws: ``ActivationError/wrongParameter(reason:)`` for a name that is empty, longer
    ///   than 255 bytes, or holds a control character.
    public init(
        status: String = KeychainConfiguration.defaultStatus,
        possession: String = KeychainConfiguration.defaultPossession,
        biometry: String = KeychainConfiguration.defaultBiometry,
        tokenStore: String = KeychainConfiguration.defaultTokenStore,
        possessionKey: String = KeychainConfiguration.defaultPossessionKey,
        biometryKey: String? = nil, accessGroup: String? = nil
    ) throws(ActivationError) {
        let named: [(String, String?)] = [
            ("status service", status), ("possession service", possession), ("biometry service", biometry),
            ("token store service", tokenStore), ("possession key", possessionKey), ("biometry key", biometryKey),
            ("access group", accessGroup),
        ]
        for case (let what, let value?) in named where !Self.isValidName(value) {
            throw .wrongParameter(reason: "keychain \(what) must be 1 ... 255 bytes without control characters")
        }
        keychainInstanceName_Status = status
        keychainInstanceName_Possession = possession
        keychainInstanceName_Biometry = biometry
        keychainInstanceName_TokenStore = tokenStore
        keychainKey_Possession = possessionKey
        keychainKey_Biometry = biometryKey
        self.accessGroup = accessGroup
    }

    /// The key of the biometry item for `instanceId`: ``keychainKey_Biometry``, or the instance id.
    /// - Parameter instanceId: the instance.
    /// - Returns: the key.
    public func biometryKey(instanceId: String) -> String { keychainKey_Biometry ?? instanceId }

    /// The `access-group` attribute of every item: ``accessGroup`` or ``privateAccessGroup``.
    public var accessGroupAttribute: String { accessGroup ?? Self.privateAccessGroup }

    static func isValidName(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 255 && !text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }
}
