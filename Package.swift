// swift-tools-version:6.0
// SecurePIN: handling a user's PIN or password safely, from the keystroke to the cryptography.
import PackageDescription

/// Hardening for the audited C targets: warnings are errors, and the objects get
/// a stack protector, fortified libc calls and stack-clash protection.
let cHardening: [CSetting] = [
    .unsafeFlags([
        "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-D_FORTIFY_SOURCE=2",
        "-fstack-protector-strong", "-fstack-clash-protection",
    ])
]

/// Full RELRO and a non-executable stack for every binary that links the core.
let linkHardening: [LinkerSetting] = [
    .unsafeFlags(
        ["-Xlinker", "-z", "-Xlinker", "relro", "-Xlinker", "-z", "-Xlinker", "now"], .when(platforms: [.linux]))
]

/// System libraries, found with pkg-config and installed from Debian.
let systemLibraries: [Target] = [
    .systemLibrary(
        name: "CSodium", path: "Sources/CSodium", pkgConfig: "libsodium",
        providers: [.apt(["libsodium-dev"])]),
    .systemLibrary(
        name: "CArgon2", path: "Sources/CArgon2", pkgConfig: "libargon2",
        providers: [.apt(["libargon2-dev"])]),
    .systemLibrary(
        name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "libcrypto",
        providers: [.apt(["libssl-dev"])]),
    .systemLibrary(
        name: "CMicroHTTPD", path: "Sources/CMicroHTTPD", pkgConfig: "libmicrohttpd",
        providers: [.apt(["libmicrohttpd-dev"])]),
    .systemLibrary(
        name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
        providers: [.apt(["libsqlite3-dev"])]),
    // libpq, PostgreSQL's client library: the activation store of several server instances.
    .systemLibrary(
        name: "CLibPQ", path: "Sources/CLibPQ", pkgConfig: "libpq",
        providers: [.apt(["libpq-dev"])]),
    // The TPM Software Stack: ESYS, the TCTI loader, marshalling.
    .systemLibrary(
        name: "CTSS2", path: "Sources/CTSS2", pkgConfig: "tss2-esys",
        providers: [.apt(["libtss2-dev"])]),
    // libcurl, the HTTP client's transport (TLS strategies URLSession on Linux cannot offer).
    .systemLibrary(
        name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
        providers: [.apt(["libcurl4-openssl-dev"])]),
    // The Secret Service client (GNOME Keyring, KWallet, KeePassXC over D-Bus).
    .systemLibrary(
        name: "CLibSecret", path: "Sources/CLibSecret", pkgConfig: "libsecret-1",
        providers: [.apt(["libsecret-1-dev"])]),
]

/// The audited C core and its Swift face: secure memory, passwords, KDFs, AEAD; the protocol
/// primitives in their own C target, the only one that links libcrypto.
let core: [Target] = [
    .target(
        name: "CSecureCore",
        dependencies: ["CSodium", "CArgon2"],
        path: "CSecureCore",
        exclude: ["tests"],
        publicHeadersPath: "include",
        cSettings: cHardening,
        linkerSettings: linkHardening),
    // The PowerAuth protocol primitives: the only target that links OpenSSL libcrypto.
    .target(
        name: "CProtocolCrypto",
        dependencies: ["CSecureCore", "CSodium", "COpenSSL"],
        path: "CProtocolCrypto",
        exclude: ["tests"],
        publicHeadersPath: "include",
        cSettings: cHardening,
        linkerSettings: linkHardening),
    // ML-KEM (FIPS 203) and ML-DSA (FIPS 204): Debian 12 has no library for them. Its own
    // Keccak; links libsodium only (randomness and wipes).
    .target(
        name: "CPostQuantum",
        dependencies: ["CSodium"],
        path: "CPostQuantum",
        exclude: ["tests"],
        publicHeadersPath: "include",
        cSettings: cHardening,
        linkerSettings: linkHardening),
    .target(
        name: "SecureCore",
        dependencies: ["CSecureCore", "CProtocolCrypto"]),
    // ML-KEM and ML-DSA over CPostQuantum, secrets in SecureCore's memory.
    .target(
        name: "PostQuantum",
        dependencies: ["CPostQuantum", "SecureCore"]),
]

/// Plain POSIX durability, holding no secret: private directories, bounded reads, atomic
/// replacement, overwrite in place, advisory locks. The vault and the activation store build on it.
let storage: [Target] = [
    .target(
        name: "DurableStorage")
]

/// Child processes through `posix_spawn` and `waitpid`, holding no secret: the reference server's
/// process wrapper, the bench and the tests start their children with it (Foundation's `Process`
/// can crash in `run()` and hang in `waitUntilExit()`). A C shim reaches the GNU extensions it needs.
let processes: [Target] = [
    .target(
        name: "CSpawn",
        publicHeadersPath: "include",
        cSettings: cHardening),
    .target(
        name: "Spawn",
        dependencies: ["CSpawn"]),
]

/// On the device: biometry, the PIN vault, and PIN entry in three modules: the strength rules,
/// the entry model a UI drives, and the terminal driver.
let device: [Target] = [
    .target(
        name: "Biometry",
        dependencies: ["SecureCore"]),
    .target(
        name: "PinVault",
        dependencies: ["SecureCore", "Biometry", "DurableStorage"]),
    // The vault's TPM 2.0 binding: a small audited C target over ESYS, and its Swift face. PinVault
    // itself links no TPM code; an app that binds vaults to a TPM adds PinVaultTPM.
    .target(
        name: "CTPMBinding",
        dependencies: ["CTSS2", "CSecureCore"],
        publicHeadersPath: "include",
        cSettings: cHardening,
        linkerSettings: linkHardening + ["tss2-esys", "tss2-tctildr", "tss2-mu", "tss2-sys"].map { .linkedLibrary($0) }),
    .target(
        name: "PinVaultTPM",
        dependencies: ["PinVault", "CTPMBinding", "SecureCore"]),
    // The strength rules: pure functions of a PIN or password in secure memory.
    .target(
        name: "PinStrength",
        dependencies: ["SecureCore"]),
    // The entry model a UI drives: keypad, controller, length and complexity policy. No terminal
    // code and no signal handlers (`make audit-modules` checks its objects).
    .target(
        name: "PinEntry",
        dependencies: ["SecureCore"]),
    // The terminal driver: raw mode, signal handlers, the terminal pad, the descriptor reader,
    // and the command-line check built on them.
    .target(
        name: "PinEntryTerminal",
        dependencies: ["PinEntry", "PinStrength", "SecureCore", "TestSupport"]),
]

/// PowerAuth: what client and server share, the client, and the server's protocol logic.
let powerAuth: [Target] = [
    // What the PowerAuth client and server share: the protocol crypto, the wire
    // types, the authorization header, the status blob and the configuration string.
    .target(
        name: "PowerAuthProtocol",
        dependencies: ["SecureCore", "PostQuantum"]),
    // The client: the activation service, its flows, local storage and configuration.
    .target(
        name: "Activation",
        dependencies: ["PowerAuthProtocol", "PostQuantum", "SecureCore", "Biometry", "DurableStorage", "PinStrength"]),
    // The server's protocol logic; it never sees the client or the vault.
    .target(
        name: "ActivationServer",
        dependencies: ["PowerAuthProtocol", "PostQuantum", "SecureCore"]),
]

/// HTTP (libmicrohttpd through a C shim), SQLite storage, the HTTP client, and what is built
/// on them: the reference server and the client's HTTP transport.
let network: [Target] = [
    .target(
        name: "CHTTPShim",
        dependencies: ["CMicroHTTPD"],
        publicHeadersPath: "include",
        cSettings: cHardening,
        linkerSettings: [.linkedLibrary("microhttpd")]),
    .target(
        name: "HTTPServer",
        dependencies: ["CHTTPShim", "SecureCore"]),
    .target(
        name: "SQLiteStore",
        dependencies: ["CSQLite"]),
    // A pool of libpq connections, binary parameters, a versioned schema; the DSN in secure memory.
    .target(
        name: "PostgresStore",
        dependencies: ["CLibPQ", "SecureCore"]),
    .target(
        name: "CHTTPClientShim",
        dependencies: ["CCurl"],
        publicHeadersPath: "include",
        cSettings: cHardening,
        linkerSettings: [.linkedLibrary("curl")]),
    .target(
        name: "HTTPClient",
        dependencies: ["CHTTPClientShim"]),
    .target(
        name: "ReferenceServer",
        dependencies: [
            "PowerAuthProtocol", "ActivationServer", "HTTPServer", "SQLiteStore", "PostgresStore", "SecureCore",
            "HTTPClient", "VaultOPRFProtocol", "PostQuantum", "Spawn",
        ]),
    // The vault's server binding: the wire format both ends share (OPRF over ECIES), and the
    // client that PinVault's binding calls. PinVault itself links no HTTP code.
    .target(
        name: "VaultOPRFProtocol",
        dependencies: ["PowerAuthProtocol", "SecureCore"]),
    .target(
        name: "PinVaultServer",
        dependencies: ["PinVault", "VaultOPRFProtocol", "PowerAuthProtocol", "SecureCore", "HTTPClient"]),
    .target(
        name: "ActivationHTTP",
        dependencies: ["PowerAuthProtocol", "Activation", "HTTPClient"]),
    // The activation store in the Secret Service (libsecret), and the choice between it and files.
    .target(
        name: "ActivationKeyring",
        dependencies: ["Activation", "Biometry", "SecureCore", "DurableStorage", "CLibSecret"]),
]

/// The shipped tool, the demo of the PIN pad, and the benchmarks (not shipped).
let tools: [Target] = [
    .executableTarget(
        name: "securepin",
        dependencies: [
            "SecureCore", "PinVault", "PinVaultTPM", "PinVaultServer", "PinEntry", "PinStrength", "PinEntryTerminal",
            "PowerAuthProtocol",
            "Activation",
            "ActivationServer",
            "ReferenceServer", "ActivationHTTP", "HTTPServer", "HTTPClient", "CPostQuantum", "ActivationKeyring",
            "PostgresStore",
        ],
        linkerSettings: linkHardening),
    .executableTarget(
        name: "pinpad-demo",
        dependencies: ["PinEntry", "PinStrength", "PinEntryTerminal"],
        linkerSettings: linkHardening),
    .target(
        name: "BenchmarkKit",
        dependencies: ["SecureCore", "CSodium", "CArgon2"],
        path: "Benchmarks/BenchmarkKit"),
    .executableTarget(
        name: "securepin-bench",
        dependencies: [
            "SecureCore", "BenchmarkKit", "CSodium", "PinVault", "PowerAuthProtocol", "Activation",
            "ReferenceServer",
            "ActivationHTTP", "PostgresStore", "Spawn",
        ],
        path: "Benchmarks/securepin-bench",
        linkerSettings: linkHardening),
    .executableTarget(
        name: "activation-bench",
        dependencies: ["PowerAuthProtocol", "Activation", "SecureCore"],
        path: "Benchmarks/activation-bench",
        linkerSettings: linkHardening),
]

/// Tests, their helper executables and shared support.
let testing: [Target] = [
    .target(
        name: "TestSupport",
        dependencies: ["SecureCore", "Spawn"],
        path: "Tests/TestSupport"),
    .target(
        name: "ActivationTestSupport",
        dependencies: ["PowerAuthProtocol", "Activation", "ActivationServer", "PinVault", "SecureCore"],
        path: "Tests/ActivationTestSupport"),
    .executableTarget(
        name: "spc-test-helper",
        dependencies: ["SecureCore", "PinVault", "PinVaultTPM", "TestSupport"],
        path: "Tests/Helpers/spc-test-helper"),
    .executableTarget(
        name: "sqlite-crash-helper",
        dependencies: ["SQLiteStore"],
        path: "Tests/Helpers/sqlite-crash-helper"),
    .testTarget(
        name: "SecureCoreTests",
        dependencies: ["SecureCore", "spc-test-helper", "TestSupport", "Spawn"]),
    .testTarget(
        name: "DurableStorageTests",
        dependencies: ["DurableStorage", "Spawn"]),
    .testTarget(
        name: "SpawnTests",
        dependencies: ["Spawn"]),
    .testTarget(
        name: "PinVaultTests",
        dependencies: ["PinVault", "SecureCore", "DurableStorage", "spc-test-helper", "TestSupport", "Spawn"]),
    .testTarget(
        name: "PinVaultTPMTests",
        dependencies: ["PinVault", "PinVaultTPM", "SecureCore", "spc-test-helper", "TestSupport", "Spawn"]),
    .testTarget(
        name: "PinVaultServerTests",
        dependencies: [
            "PinVault", "PinVaultServer", "PowerAuthProtocol", "PostgresStore", "ReferenceServer", "SecureCore",
            "VaultOPRFProtocol", "securepin", "TestSupport",
        ]),
    .testTarget(
        name: "PinStrengthTests",
        dependencies: ["PinStrength", "SecureCore", "TestSupport"]),
    .testTarget(
        name: "PinEntryTests",
        dependencies: ["PinEntry", "PinStrength", "SecureCore", "TestSupport"]),
    .testTarget(
        name: "PinEntryTerminalTests",
        dependencies: [
            "PinEntryTerminal", "PinEntry", "PinStrength", "SecureCore", "pinpad-demo", "TestSupport", "Spawn",
        ]),
    .testTarget(
        name: "PostQuantumTests",
        dependencies: ["PostQuantum", "SecureCore", "TestSupport"]),
    .testTarget(
        name: "ActivationTests",
        dependencies: ["PowerAuthProtocol", "PostQuantum", "SecureCore", "TestSupport"]),
    .testTarget(
        name: "ActivationServiceTests",
        dependencies: [
            "PowerAuthProtocol", "Activation", "ActivationServer", "PinVault", "SecureCore", "PinStrength",
            "ActivationTestSupport",
        ]),
    .testTarget(
        name: "ActivationServerTests",
        dependencies: [
            "PowerAuthProtocol", "Activation", "ActivationServer", "PinVault", "SecureCore",
            "ActivationTestSupport",
        ]),
    // One storage suite, run against the file store and (inside `make test-keyring`) a real
    // Secret Service.
    .testTarget(
        name: "ActivationKeyringTests",
        dependencies: [
            "Activation", "ActivationKeyring", "ActivationServer", "ActivationTestSupport", "Biometry",
            "PowerAuthProtocol", "SecureCore", "CLibSecret",
        ]),
    .testTarget(
        name: "HTTPServerTests",
        dependencies: ["HTTPServer", "TestSupport"]),
    .testTarget(
        name: "SQLiteTests",
        dependencies: ["SQLiteStore", "sqlite-crash-helper", "TestSupport", "Spawn"]),
    .testTarget(
        name: "HTTPClientTests",
        dependencies: ["HTTPClient", "HTTPServer", "TestSupport"]),
    // Every case of every public error type describes itself in a sentence, never a value dump.
    .testTarget(
        name: "ErrorDescriptionTests",
        dependencies: [
            "SecureCore", "Biometry", "PinStrength", "PinEntry", "PinEntryTerminal", "PostQuantum", "PowerAuthProtocol",
            "Activation", "ActivationServer", "HTTPClient", "HTTPServer", "SQLiteStore", "PostgresStore",
            "ReferenceServer", "VaultOPRFProtocol", "PinVault", "Spawn",
        ]),
    // The code of the DocC articles: each article's snippets compile and run here.
    .testTarget(
        name: "DocSnippetTests",
        dependencies: [
            "SecureCore", "PinVault", "PinEntry", "PinStrength", "PinEntryTerminal", "PowerAuthProtocol",
            "Activation", "ActivationServer",
        ]),
    .testTarget(
        name: "ReferenceServerTests",
        dependencies: [
            "ReferenceServer", "ActivationHTTP", "PowerAuthProtocol", "Activation", "ActivationServer", "PinVault",
            "SecureCore", "SQLiteStore", "PostgresStore", "HTTPServer", "securepin", "TestSupport",
            "ActivationTestSupport", "Spawn",
        ]),
]

let package = Package(
    name: "SecurePIN",
    products: [
        .library(name: "SecureCore", targets: ["SecureCore"]),
        .library(name: "PostQuantum", targets: ["PostQuantum"]),
        .library(name: "PinVault", targets: ["PinVault"]),
        .library(name: "PinVaultTPM", targets: ["PinVaultTPM"]),
        .library(name: "PinVaultServer", targets: ["PinVaultServer"]),
        .library(name: "Biometry", targets: ["Biometry"]),
        .library(name: "PowerAuthProtocol", targets: ["PowerAuthProtocol"]),
        .library(name: "Activation", targets: ["Activation"]),
        .library(name: "ActivationServer", targets: ["ActivationServer"]),
        .executable(name: "securepin", targets: ["securepin"]),
        .library(name: "PinStrength", targets: ["PinStrength"]),
        .library(name: "PinEntry", targets: ["PinEntry"]),
        .library(name: "PinEntryTerminal", targets: ["PinEntryTerminal"]),
        .library(name: "HTTPServer", targets: ["HTTPServer"]),
        .library(name: "SQLiteStore", targets: ["SQLiteStore"]),
        .library(name: "PostgresStore", targets: ["PostgresStore"]),
        .library(name: "HTTPClient", targets: ["HTTPClient"]),
        .library(name: "ReferenceServer", targets: ["ReferenceServer"]),
        .library(name: "ActivationHTTP", targets: ["ActivationHTTP"]),
        .library(name: "ActivationKeyring", targets: ["ActivationKeyring"]),
    ],
    targets: systemLibraries + core + storage + processes + device + powerAuth + network + tools + testing
)
