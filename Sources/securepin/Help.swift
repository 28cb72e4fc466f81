import SecureCore

/// The exit codes of every command (the table in `--help` and the README).
enum ExitCode {
    /// Success.
    static let ok: Int32 = 0
    /// Wrong PIN, or refused (a weak PIN with `--reject-weak`, a `reject` verdict).
    static let refused: Int32 = 1
    /// Usage error or bad input; nothing was counted.
    static let usage: Int32 = 2
    /// Locked or throttled.
    static let locked: Int32 = 3
    /// A server-bound vault's server cannot be reached; nothing was counted.
    static let network: Int32 = 4
    /// Cancelled (Ctrl-C, Escape, Ctrl-D on the PIN pad).
    static let cancelled: Int32 = 130

    static let table = """
        Exit codes (every command):
          0    success
          1    wrong PIN, or refused (a weak PIN with --reject-weak, a failed step)
          2    usage error or bad input (nothing was counted)
          3    locked or throttled (see securepin vault status)
          4    a server-bound vault's server cannot be reached (nothing was counted)
          130  cancelled (Ctrl-C, Escape or Ctrl-D at a prompt)
        """
}

/// Every help text, `securepin help [COMMAND…]`, and "did you mean".
enum Help {
    /// The release of this command.
    static let version = "0.9.0"

    /// The vault's key-derivation floor, as the help and messages state it.
    static var floor: Argon2id.Parameters { .owaspMinimum }
    static var floorText: String { "\(floor.memoryKiB) KiB (19 MiB) and t = \(floor.iterations)" }

    static let commands: [(name: String, summary: String)] = [
        ("demo", "the end-to-end story, one line per step"),
        ("server", "the reference activation server over HTTP"),
        ("storage-key", "the server's storage key: rotate it, re-sealing the database"),
        ("client", "a PowerAuth client (V3.3, or V4 incl. the hybrid suites): activate, status, validate, ..."),
        ("doctor", "what protection this machine gives to secrets"),
        ("kdf", "Argon2id: hash standard input, calibrate the cost"),
        ("vault", "a secret sealed under a PIN"),
        ("pin", "strength flags and verdict for a PIN"),
        ("pq", "ML-KEM and ML-DSA over JSON lines (interop and tests)"),
        ("completions", "shell completions: securepin completions bash|zsh|fish"),
        ("man", "the securepin(1) manual page, in roff"),
        ("help", "help for a command: securepin help vault init"),
    ]

    static let subcommands: [String: [(name: String, summary: String)]] = [
        "vault": [
            ("init", "create a vault: the secret from standard input, a new PIN"),
            ("unlock", "print the secret, given the PIN"),
            ("change-pin", "replace the PIN (the current one is counted like an unlock)"),
            ("status", "failures, throttle and PIN format, without a PIN"),
            ("destroy", "wipe and remove the vault"),
            ("migrate-store", "put the vault's pepper in the keyring (the files stay; crash-safe)"),
            ("biometry-add", "add a biometric slot: its key in the login keyring (no sensor)"),
            ("biometry-remove", "remove the biometric slot and its keyring item"),
        ],
        "kdf": [
            ("hash", "Argon2id of standard input (like Debian's argon2 tool)"),
            ("tune", "find Argon2id parameters for a target time on this machine"),
        ],
        "pin": [("check", "strength flags and the warn/reject verdict for a PIN")],
        "storage-key": [("rotate", "re-seal every key in the server database under a new key file")],
        "client": [
            ("activate", "activate this device with an activation code and a new PIN"),
            ("confirm", "V4: confirm the committed activation with the PIN (activation/confirm)"),
            ("status", "the activation's state and failure count, without a PIN"),
            ("validate", "sign and check a PIN with the server (exit 0 accepted, 1 refused)"),
            ("token-create", "create a MAC token, kept in the state directory"),
            ("vault-unlock", "fetch and check the vault key with the PIN (never printed)"),
            ("change-pin", "change the PIN: checked by the server; in V4 the server rotates the knowledge key"),
            ("upgrade", "upgrade this activation to a stronger suite (V3.3 to V4, or between V4 suites), crash-safe"),
            ("biometry-add", "add the biometry factor: its key in the keyring, gated by the login keyring"),
            ("biometry-remove", "remove the biometry factor and its keyring item"),
            ("remove", "remove the activation on the server, then locally"),
            ("migrate-store", "move the activation from the state directory's files to the keyring"),
        ],
    ]

    static var main: String {
        var lines = ["usage: securepin <command> [options]", "       securepin help <command> [subcommand]", ""]
        lines.append("commands:")
        for (name, summary) in commands { lines.append("  " + pad(name, 13) + summary) }
        lines += [
            "",
            "options:",
            "  -h, --help     help (also after any command: securepin vault init --help)",
            "  --version      the versions of securepin and the libraries it uses",
            "  --opt=value    is the same as --opt value",
            "",
            "example:",
            "  securepin vault --help",
            "",
            ExitCode.table,
        ]
        return lines.joined(separator: "\n")
    }

    static func group(_ name: String) -> String {
        let subs = subcommands[name] ?? []
        var lines = ["usage: securepin \(name) <\(subs.map(\.name).joined(separator: "|"))> [options]", ""]
        lines.append("commands:")
        for (sub, summary) in subs { lines.append("  " + pad(sub, 12) + summary) }
        lines += ["", "securepin \(name) <command> --help tells more.", "", "example:", groupExample[name] ?? "", ""]
        lines.append(ExitCode.table)
        return lines.joined(separator: "\n")
    }

    static let groupExample: [String: String] = [
        "vault": "  printf 'my-token' | securepin vault init --vault ~/.myvault",
        "kdf": "  securepin kdf tune --target-ms 250",
        "pin": "  securepin pin check",
        "storage-key": "  securepin storage-key rotate --db server.sqlite --new-key-file server.sqlite.key.new",
        "client": "  securepin client status --url http://127.0.0.1:8080 --config \"$CONFIG\" --state ~/.pa-client",
    ]

    /// The help of a command path (`["vault", "init"]`), or nil when unknown.
    static func text(_ path: [String]) -> String? {
        switch path.count {
        case 0: return main
        case 1:
            if subcommands[path[0]] != nil { return group(path[0]) }
            return leaf[path[0]].map { $0 + "\n\n" + ExitCode.table }
        default:
            return leaf[path.prefix(2).joined(separator: " ")].map { $0 + "\n\n" + ExitCode.table }
        }
    }

    /// What a usage error prints: the usage lines of `help` (up to its first
    /// blank line) and where the rest is.
    static func brief(_ help: String, command: String) -> String {
        let usage = help.components(separatedBy: "\n\n").first ?? help
        return usage + "\n(securepin \(command) --help tells more)"
    }

    /// The usage line and the command list, for the top level's usage errors.
    static var briefMain: String {
        var lines = ["usage: securepin <command> [options]; commands:"]
        for (name, summary) in commands { lines.append("  " + pad(name, 13) + summary) }
        lines.append("(securepin --help tells more)")
        return lines.joined(separator: "\n")
    }

    /// The usage lines and the command list of a group, for its usage errors.
    static func briefGroup(_ name: String) -> String {
        var lines = ["usage: securepin \(name) <command> [options]; commands:"]
        for (sub, summary) in subcommands[name] ?? [] { lines.append("  " + pad(sub, 12) + summary) }
        return lines.joined(separator: "\n")
    }

    /// The help of a leaf command (`"vault init"`), with the exit codes.
    static func of(_ command: String) -> String { text(command.split(separator: " ").map(String.init)) ?? main }

    /// The keychain names' options (every client command that opens a store).
    static let keychainNameOptions = """
          --access-group G  the keyring items' access-group attribute, shared by cooperating
                           applications (default: private)
          --keychain-status NAME  the service attribute of the state item
                           (default io.getlime.PowerAuthKeychain.StatusKeychain)
          --keychain-possession NAME  the service attribute of the possession keys' item
                           (default io.getlime.PowerAuthKeychain.PossessionKeychain)
          --keychain-biometry NAME  the service attribute of the biometry key's item
                           (default io.getlime.PowerAuthKeychain.BiometryKeychain)
          --keychain-token-store NAME  the service attribute of the tokens' items
                           (default io.getlime.PowerAuthKeychain.TokenStore)
          --possession-key NAME  the key attribute of the possession item (default PA2KeychainKey_Possession)
          --biometry-key NAME  the key attribute of the biometry item (default the instance id)
        """

    /// `--store` and the keychain names.
    static let keyringOptions = """
          --store S        auto (default: the Secret Service when the session bus offers
                           one, files otherwise), keyring or files
        \(keychainNameOptions)
        """

    /// Where a vault keeps its pepper: the lines every vault command that opens one shares.
    static let vaultStoreOptions = """
          --store S         auto (default): where the vault keeps its pepper (the
                            Secret Service, or none); keyring or files: insist on one
          --keychain-vault NAME  the pepper item's service attribute
                            (default io.securepin.VaultPepper)
          --access-group G  the pepper item's access-group attribute (default: private)
        """

    static var leaf: [String: String] {
        [
            "vault init": """
            usage: securepin vault init --vault DIR [options]   (the secret on standard input)

            Creates a vault in DIR holding the secret read from standard input, under a new
            PIN typed twice on the terminal pad (or read once from --pin-fd). Every option is
            checked before anything is read or asked. A secret typed on the terminal is not
            shown; end it with Enter and Ctrl-D (that last newline is not kept). A piped secret
            is kept byte for byte.

            options:
              --vault DIR          the vault directory: created 0700, or an existing empty one of
                                   yours with mode 0700 (its mode is never changed)
              --store S            auto (default) or files: the files in DIR alone; keyring: the
                                   files in DIR and a pepper in the Secret Service, which the PIN
                                   slot and the failure record need (a copy of DIR alone cannot
                                   be guessed offline; a backup of DIR alone no longer restores)
              --keychain-vault NAME  the pepper item's service attribute (default
                                   io.securepin.VaultPepper; its key is the vault's identifier)
              --access-group G     the pepper item's access-group attribute (default: private)
              --pin-fd N           read the PIN from descriptor N (one line) instead of the terminal
              --complexity C       the PIN format, recorded in the vault and applied at every
                                   unlock and PIN change: digits-4, digits-6, digits-4-8 (default)
                                   or alphanumeric (8 to 64 characters)
              --policy P           soft (default: growing delays, locked after 20), soft:N,
                                   soft:F:D,D,...[:N] (F failures free, then delays such as
                                   30s,5m,30m, the last repeating; locked after N, default 20),
                                   hard:N (locked after N) or wipe:N (destroyed after N)
              --reject-weak        refuse a weak PIN (default: warn and go on)
              --target-ms N        calibrate Argon2id to about N ms on this machine, never
                                   below the floor
              -t N -k KiB [-p N]   Argon2id iterations, memory and lanes (default t=2, 64 MiB, p=1);
                                   -t and -k go together, and not with --target-ms
              --bind B             software (default); tpm: bind the vault to a TPM 2.0, each guess a
                                   TPM command under its dictionary-attack lockout; server: bind it
                                   to a server's OPRF, each guess counted and blocked by the server;
                                   a copy elsewhere opens with no PIN
              --tcti STRING        the TPM (every vault command): else $TSS2_TCTI, else /dev/tpmrm0
            \(TLSOptions.help)
              --url URL            with --bind server: the server (http://HOST:PORT)
              --config STRING      with --bind server: the configuration string it prints
              --tpm-max-tries N    the TPM's lockout after N failures (default 10; TPM-wide)
              --tpm-recovery S     one failure forgotten every S seconds (default 600; TPM-wide)
              --tpm-lockout-auth-fd N
                                   the TPM's lockout authorisation from descriptor N, needed to set
                                   the two above when the TPM has one (one trailing newline removed)
              --tpm-set-lockout-auth FILE
                                   for a TPM whose lockout authorisation is empty (a fresh TPM, which
                                   --bind tpm refuses: anyone could reset its lockout): set a random
                                   one, written first to the new FILE (0600, outside the vault) for
                                   the administrator
              --tpm-pcrs LIST      also seal to these PCRs of the TPM's SHA-256 bank as they read now
                                   (7, or 0,2,4,7): another OS or boot chain cannot unseal; a
                                   firmware or boot loader update that changes them needs a new vault
            The vault refuses key derivation below its floor: \(floorText).

            example:
              printf 'my-token' | securepin vault init --vault ~/.myvault --complexity digits-6
            """,
            "vault unlock": """
            usage: securepin vault unlock --vault DIR [--pin-fd N | --biometry]   (the secret to standard output)

            Asks for the PIN in the vault's own format and prints the secret. A locked or
            throttled vault is reported before the PIN is asked for; a PIN that does not fit
            the vault's format is refused (exit 2) without being counted. With --biometry the
            biometric slot opens it instead (vault biometry-add): its key comes from the login
            keyring while that is unlocked; no PIN is asked for.

            options:
              --vault DIR       the vault directory
            \(Self.vaultStoreOptions)
              --pin-fd N        read the PIN from descriptor N (one line) instead of the terminal
              --biometry        open with the biometric slot (the login keyring), no PIN
              --bind B          software, tpm or server: refuse (exit 2) a vault bound otherwise
              --tcti STRING     the TPM of a TPM-bound vault: else $TSS2_TCTI, else /dev/tpmrm0
            \(TLSOptions.help)

            example:
              securepin vault unlock --vault ~/.myvault --pin-fd 3 3<<<"2468"
            """,
            "vault biometry-add": """
            usage: securepin vault biometry-add --vault DIR [--pin-fd N]

            Adds (or replaces) the vault's biometric slot: a random key wraps the vault's data
            key, and that key goes to the Secret Service (the login keyring), the authenticator
            'client biometry-add' uses. There is no sensor: the keyring's unlock is the gate, so
            the slot proves "this user's unlocked session", weaker than a phone's biometry. The
            PIN proves the user and is counted like an unlock. Without a keyring on the session
            bus it is refused (exit 1) and nothing changes.

            options:
              --vault DIR       the vault directory
            \(Self.vaultStoreOptions)
              --pin-fd N        read the PIN from descriptor N (one line) instead of the terminal
              --bind B          software, tpm or server: refuse (exit 2) a vault bound otherwise
              --tcti STRING     the TPM of a TPM-bound vault: else $TSS2_TCTI, else /dev/tpmrm0
            \(TLSOptions.help)

            example:
              securepin vault biometry-add --vault ~/.myvault --pin-fd 3 3<<<"2468"
            """,
            "vault biometry-remove": """
            usage: securepin vault biometry-remove --vault DIR

            Removes the vault's biometric slot and its key in the login keyring; the PIN keeps
            working. A vault without one is refused (exit 1).

            options:
              --vault DIR       the vault directory
            \(Self.vaultStoreOptions)
              --bind B          software, tpm or server: refuse (exit 2) a vault bound otherwise
              --tcti STRING     the TPM of a TPM-bound vault: else $TSS2_TCTI, else /dev/tpmrm0
            \(TLSOptions.help)

            example:
              securepin vault biometry-remove --vault ~/.myvault
            """,
            "vault change-pin": """
            usage: securepin vault change-pin --vault DIR [--pin-fd N --new-pin-fd N]

            Replaces the PIN. The current PIN is counted like an unlock; the new one must fit
            the vault's PIN format (recorded at init, it does not change).

            options:
              --vault DIR      the vault directory
              --store S        auto (default): where the vault keeps its pepper (the
                               Secret Service, or none); keyring or files: insist on one
              --keychain-vault NAME  the pepper item's service attribute
                               (default io.securepin.VaultPepper)
              --access-group G  the pepper item's access-group attribute (default: private)
              --pin-fd N       read the current PIN from descriptor N
              --new-pin-fd N   read the new PIN from descriptor N (else typed twice on the terminal)
              --reject-weak    refuse a weak new PIN (default: warn and go on)
              --complexity C   accepted only when it names the vault's own PIN format, which
                               change-pin keeps (anything else is refused, exit 2)
              --bind B         software, tpm or server: refuse (exit 2) a vault bound otherwise
              --tcti STRING    the TPM of a TPM-bound vault: else $TSS2_TCTI, else /dev/tpmrm0
            \(TLSOptions.help)

            example:
              securepin vault change-pin --vault ~/.myvault
            """,
            "vault status": """
            usage: securepin vault status --vault DIR [--json]

            Failures, what happens next, the PIN format and when the next attempt is allowed,
            without asking for a PIN.

            options:
              --vault DIR     the vault directory
              --store S       auto (default): where the vault keeps its pepper (the
                              Secret Service, or none); keyring or files: insist on one
              --keychain-vault NAME  the pepper item's service attribute
                              (default io.securepin.VaultPepper)
              --access-group G  the pepper item's access-group attribute (default: private)
              --json          one JSON object (snake_case keys)
              --bind B        software, tpm or server: refuse (exit 2) a vault bound otherwise
              --tcti STRING   the TPM of a TPM-bound vault (its lockout counter is read from it)
            \(TLSOptions.help)

            example:
              securepin vault status --vault ~/.myvault
            """,
            "vault destroy": """
            usage: securepin vault destroy --vault DIR [--yes] [--pin-fd N]

            Destroys the key file in place (every copy of the vault file becomes useless), overwrites
            and removes the vault's own files, and removes DIR only if vault init created it. Says
            exactly what it removed. Asks for confirmation on a terminal. With --pin-fd the PIN is
            checked first (counted like an unlock; a wrong PIN destroys nothing) and a server-bound
            vault's record is removed at its server before the files; without it that record stays,
            useless without the files.

            options:
              --vault DIR     the vault directory
              --store S       auto (default): where the vault keeps its pepper (the
                              Secret Service, or none); keyring or files: insist on one
              --keychain-vault NAME  the pepper item's service attribute
                              (default io.securepin.VaultPepper)
              --access-group G  the pepper item's access-group attribute (default: private)
              --yes           do not ask (needed when standard input is not a terminal)
              --pin-fd N      prove the PIN (read from descriptor N) and remove the server record
              --bind B        software, tpm or server: refuse (exit 2) a vault bound otherwise
              --tcti STRING   the TPM of a TPM-bound vault: else $TSS2_TCTI, else /dev/tpmrm0
            \(TLSOptions.help)

            example:
              securepin vault destroy --vault ~/.myvault --yes
            """,
            "vault migrate-store": """
            usage: securepin vault migrate-store --vault DIR [--pin-fd N] [--keychain-vault NAME] [--access-group G]

            Moves a software vault to --store keyring: a new random pepper is stored in the Secret
            Service and read back, then the vault's PIN slot is rewritten under it (a PIN change to
            the same PIN: counted like an unlock, crash-safe) and the old key half is destroyed in
            place. The files stay in DIR. A crash leaves a vault that opens from its files alone or
            with the keyring's pepper; never one that needs a pepper the keyring lacks. Exit 0 moved
            (or already there), 3 when the keyring is locked, 1 without a Secret Service.

            options:
              --vault DIR      the vault directory
              --store S        auto (default) or keyring: the destination (files is refused)
              --keychain-vault NAME  the pepper item's service attribute
                               (default io.securepin.VaultPepper)
              --access-group G  the pepper item's access-group attribute (default: private)
              --pin-fd N       read the PIN from descriptor N (else the terminal pad)
              --bind B         software: refuse (exit 2) a vault bound otherwise
              --tcti STRING    the TPM (a TPM-bound vault is refused: its TPM counts already)
            \(TLSOptions.help)

            example:
              securepin vault migrate-store --vault ~/.myvault
            """,
            "kdf hash": """
            usage: securepin kdf hash --salt-hex HEX -t N -k KiB [-p N] [-l BYTES] [--encoded] [--allow-empty]

            Argon2id of the password on standard input, byte for byte like Debian's argon2 tool.

            options:
              --salt-hex HEX   the salt, at least 16 bytes, in hex
              -t N             iterations
              -k KiB           memory in KiB
              -p N             lanes (default 1)
              -l BYTES         output length (default 32)
              --encoded        print the PHC string ($argon2id$v=19$...) instead of hex
              --allow-empty    accept an empty password

            example:
              printf 'pw' | securepin kdf hash --salt-hex 30313233343536373839616263646566 -t 2 -k 65536
            """,
            "kdf tune": """
            usage: securepin kdf tune --target-ms N [--max-memory SIZE] [--max-parallelism N] [--json]

            Finds Argon2id parameters that take about N ms here, and prints a ready-to-paste
            vault init line (raised to the vault's floor, \(floorText), when needed).

            options:
              --target-ms N          the time one derivation should take
              --max-memory SIZE      memory ceiling: KiB, or 512M, 1G (default 1G)
              --max-parallelism N    also try 2 ... N lanes and keep the best
              --json                 one JSON object (snake_case keys)

            example:
              securepin kdf tune --target-ms 250
            """,
            "pin check": """
            usage: securepin pin check [--complexity C] [--pin-fd N] [--reject] [--json]

            Reads a PIN (the terminal pad, or one line from descriptor N) and prints its
            strength flags and verdict: acceptable, warn (exit 0) or reject (exit 1).

            options:
              --complexity C   digits-4, digits-6, digits-4-8 (default) or alphanumeric
              --pin-fd N       read the PIN from descriptor N
              --reject         judge weak PINs as reject rather than warn
              --json           one JSON object

            example:
              echo 1990 | securepin pin check --pin-fd 0
            """,
            "server": """
            usage: securepin server (--port N | --listen ADDR:PORT) (--db PATH | --store postgres --dsn-file F --key-file K) [options]

            The reference activation server over plain HTTP (127.0.0.1 with --port), state in
            SQLite, or in PostgreSQL shared by several instances (each request answered 503
            while the database is down). Put TLS in front of it (a reverse proxy) for real clients.
            SIGTERM or SIGINT stops it gracefully. Each answered request is logged as one
            JSON line (time, request id, client address, endpoint, status, duration,
            activation id) on standard error; never a PIN, code, key, token or body.

            options:
              --port N              TCP port on 127.0.0.1 (0 picks a free one; the line
                                    'listening on' says which)
              --listen ADDR:PORT    also (or instead) listen on IPV4:PORT or [IPV6]:PORT; repeat
                                    for more; a non-loopback one without --trusted-proxy warns
              --trusted-proxy CIDR  a reverse proxy's network (10.0.0.0/8, ::1/128; repeat for
                                    more): from it, the client address (limits, log) is the
                                    right-most X-Forwarded-For entry outside these networks
              --db PATH             the SQLite database (created when missing)
              --store S             sqlite (default) or postgres
              --dsn-file PATH       with --store postgres: the libpq connection string, read
                                    from a 0600 file into secure memory (never an argument)
              --pool-size N         with --store postgres: most connections (default 16)
              --statement-timeout MS  with --store postgres: per statement and lock (default 5000)
              --admin-token T       enables the back office with this token (visible to
                                    other local users in the process list: prefer the file)
              --admin-token-file P  reads the token from a 0600 file
              --key-file PATH       the storage key file (default PATH.key next to the
                                    database; created 0600 when missing); required with
                                    --store postgres, the same file for every instance
              --max-failures N      failed attempts that block new activations (default 5)
              --key-request-rate N  keystore/create and vault register per client address and
                                    second (default 8, bursts of 8 N); beyond it 429
              --metrics-port N      also serve GET /metrics without the token on 127.0.0.1:N
                                    (on --port, /metrics needs the admin token)
              --log-file PATH       append the access log (one JSON object a line) to PATH
                                    instead of standard error; SIGHUP reopens it
              --ready-file PATH     write the port to PATH once listening (removed at stop);
                                    with NOTIFY_SOCKET set, READY=1 goes to systemd too
              --algorithm NAME      LEGACY_P256 (protocol V3.3, default), EC_P384 (protocol V4:
                                    new activations use the /pa/v4 endpoints), or the hybrid
                                    post-quantum EC_P384_ML_L3 / EC_P384_ML_L5 (V4 with ML-KEM
                                    and ML-DSA; the ML-DSA master key is key 03 / 04)

            example:
              securepin server --port 0 --db server.sqlite
            """,
            "storage-key rotate": """
            usage: securepin storage-key rotate (--db PATH [--key-file OLD] | --store postgres --dsn-file F --key-file OLD) --new-key-file NEW

            Re-seals every value the server database holds under its storage key (the master
            private keys, each activation's server key and V4 state, the ML-DSA master seeds,
            the vault OPRF master secret and verifiers) under a new key, in one transaction:
            a failure leaves the database as it was. The new key file is created first (0600,
            fsync'd); one that exists is used, so a second run finishes what a failed one began
            and leaves values already under it alone. Stop every server instance first, start
            them with --key-file NEW after, then destroy the old key file.

            options:
              --db PATH            the SQLite database (it must exist)
              --store S            sqlite (default) or postgres
              --dsn-file PATH      with --store postgres: the libpq connection string, read
                                   from a 0600 file into secure memory (never an argument)
              --key-file PATH      the key in force (default PATH.key next to the database);
                                   required with --store postgres
              --new-key-file PATH  the new key file: created when missing, used when present

            example:
              securepin storage-key rotate --db server.sqlite --new-key-file server.sqlite.key.new
            """,
            "doctor": """
            usage: securepin doctor [--json]

            What protection this machine gives to secrets: secret memory, core dumps, limits.

            options:
              --json   one JSON object (snake_case keys)

            example:
              securepin doctor
            """,
            "client activate": """
            usage: securepin client activate --url BASE --config STRING --state DIR [--store S] [--access-group G] [--keychain-* NAME] --code CODE [--name NAME] [--pin-fd N] [--reject-weak]

            Checks the code (CRC-16, and the master key's signature in the QR form CODE#SIGNATURE),
            creates the device key, sends activation/create in two ECIES layers under a 3.3
            temporary key, and stores the state. Prints the activation id, the fingerprint to
            compare with the back office, and the state.

            options:
              --url BASE       the server's address before /pa/ (https, or http to loopback)
            \(TLSOptions.help)
              --config STRING  the application's configuration string (MOBILE_SDK_CONFIG)
              --state DIR      the device state (created 0700; files 0600)
              --instance ID    the activation's name in DIR (default securepin-client)
              --algorithm NAME LEGACY_P256 (V3.3), EC_P384, EC_P384_ML_L3 or EC_P384_ML_L5 (V4,
                               the /pa/v4 endpoints; the server must serve that suite).
                               Default: EC_P384_ML_L3 when --config has keys 02 and 03,
                               else LEGACY_P256
            \(Self.keyringOptions)
              --json           one JSON object on standard output
              --code CODE      XXXXX-XXXXX-XXXXX-XXXXX or CODE#SIGNATURE
              --name NAME      the device's name on the server
              --pin-fd N       read the PIN from descriptor N (else the terminal pad)
              --complexity C   digits-4, digits-6, digits-4-8 (default) or alphanumeric
              --reject-weak    refuse a weak PIN, as vault init does (default: warn and go on)

            example:
              securepin client activate --url http://127.0.0.1:8080 --config "$CONFIG" --state dev --code "$QR" --pin-fd 3 3<pin
            """,
            "client status": """
            usage: securepin client status --url BASE --config STRING --state DIR [--store S] [--access-group G] [--keychain-* NAME] [--json]

            Fetches activation/status with a fresh challenge and opens the status blob: state,
            failed attempts, the maximum and what remains. Exit 3 when BLOCKED.

            options:
              --url BASE       the server's address before /pa/ (https, or http to loopback)
            \(TLSOptions.help)
              --config STRING  the application's configuration string (MOBILE_SDK_CONFIG)
              --state DIR      the device state (created 0700; files 0600)
              --instance ID    the activation's name in DIR (default securepin-client)
              --algorithm NAME LEGACY_P256 (V3.3), EC_P384, EC_P384_ML_L3 or EC_P384_ML_L5 (V4,
                               the /pa/v4 endpoints; the server must serve that suite).
                               Default: EC_P384_ML_L3 when --config has keys 02 and 03,
                               else LEGACY_P256
            \(Self.keyringOptions)
              --json           one JSON object on standard output

            example:
              securepin client status --url http://127.0.0.1:8080 --config "$CONFIG" --state dev --json
            """,
            "client validate": """
            usage: securepin client validate --url BASE --config STRING --state DIR [--store S] [--access-group G] [--keychain-* NAME] [--factors F] [--pin-fd N]

            Signs a request with the PIN (or possession alone) and sends it to
            /pa/v3/signature/validate. Exit 0 accepted, 1 refused (a wrong PIN counts; a wrong
            possession-only code does not, as in PowerAuth V3), 3 when that refusal blocked it.

            options:
              --url BASE       the server's address before /pa/ (https, or http to loopback)
            \(TLSOptions.help)
              --config STRING  the application's configuration string (MOBILE_SDK_CONFIG)
              --state DIR      the device state (created 0700; files 0600)
              --instance ID    the activation's name in DIR (default securepin-client)
              --algorithm NAME LEGACY_P256 (V3.3), EC_P384, EC_P384_ML_L3 or EC_P384_ML_L5 (V4,
                               the /pa/v4 endpoints; the server must serve that suite).
                               Default: EC_P384_ML_L3 when --config has keys 02 and 03,
                               else LEGACY_P256
            \(Self.keyringOptions)
              --json           one JSON object on standard output
              --factors F      possession, possession_knowledge (default) or possession_biometry
                               (the key biometry-add put in the keyring; no sensor: the
                               unlocked login keyring is the gate)
              --pin-fd N       read the PIN from descriptor N (else the terminal pad)
              --complexity C   digits-4, digits-6, digits-4-8 (default) or alphanumeric

            example:
              securepin client validate --url http://127.0.0.1:8080 --config "$CONFIG" --state dev --pin-fd 3 3<pin
            """,
            "client token-create": """
            usage: securepin client token-create --url BASE --config STRING --state DIR [--store S] [--access-group G] [--keychain-* NAME] [--pin-fd N]

            Creates a MAC token (token/create: ECIES, encrypt-then-sign with the PIN) and keeps
            its secret in DIR. Prints the token id; never the secret.

            options:
              --url BASE       the server's address before /pa/ (https, or http to loopback)
            \(TLSOptions.help)
              --config STRING  the application's configuration string (MOBILE_SDK_CONFIG)
              --state DIR      the device state (created 0700; files 0600)
              --instance ID    the activation's name in DIR (default securepin-client)
              --algorithm NAME LEGACY_P256 (V3.3), EC_P384, EC_P384_ML_L3 or EC_P384_ML_L5 (V4,
                               the /pa/v4 endpoints; the server must serve that suite).
                               Default: EC_P384_ML_L3 when --config has keys 02 and 03,
                               else LEGACY_P256
            \(Self.keyringOptions)
              --json           one JSON object on standard output
              --pin-fd N       read the PIN from descriptor N (else the terminal pad)
              --complexity C   digits-4, digits-6, digits-4-8 (default) or alphanumeric

            example:
              securepin client token-create --url http://127.0.0.1:8080 --config "$CONFIG" --state dev --pin-fd 3 3<pin
            """,
            "client vault-unlock": """
            usage: securepin client vault-unlock --url BASE --config STRING --state DIR [--store S] [--access-group G] [--keychain-* NAME] [--pin-fd N]

            Unlocks the secure vault (vault/unlock with the PIN): the server returns the vault
            key under the transport key; the client checks it opens the key sealed under it at
            activation, then wipes it. Nothing secret is printed.

            options:
              --url BASE       the server's address before /pa/ (https, or http to loopback)
            \(TLSOptions.help)
              --config STRING  the application's configuration string (MOBILE_SDK_CONFIG)
              --state DIR      the device state (created 0700; files 0600)
              --instance ID    the activation's name in DIR (default securepin-client)
              --algorithm NAME LEGACY_P256 (V3.3), EC_P384, EC_P384_ML_L3 or EC_P384_ML_L5 (V4,
                               the /pa/v4 endpoints; the server must serve that suite).
                               Default: EC_P384_ML_L3 when --config has keys 02 and 03,
                               else LEGACY_P256
            \(Self.keyringOptions)
              --json           one JSON object on standard output
              --pin-fd N       read the PIN from descriptor N (else the terminal pad)
              --complexity C   digits-4, digits-6, digits-4-8 (default) or alphanumeric

            example:
              securepin client vault-unlock --url http://127.0.0.1:8080 --config "$CONFIG" --state dev --pin-fd 3 3<pin
            """,
            "client confirm": """
            usage: securepin client confirm --url BASE --config STRING --state DIR [--algorithm NAME] [--store S] [--access-group G] [--keychain-* NAME] [--pin-fd N]

            Confirms a V4 activation once the server committed it (activation/confirm, signed
            with the PIN; a wrong PIN is counted). The server clears its confirmation flag and
            turns biometry on when the activation was created with it. Protocol V3.3 has no
            confirmation: without a V4 --algorithm this is a usage error (exit 2). Confirming
            again is harmless.

            options:
              --url BASE       the server's address before /pa/ (https, or http to loopback)
            \(TLSOptions.help)
              --config STRING  the application's configuration string (MOBILE_SDK_CONFIG)
              --state DIR      the device state (created 0700; files 0600)
              --instance ID    the activation's name in DIR (default securepin-client)
              --algorithm NAME EC_P384, EC_P384_ML_L3 or EC_P384_ML_L5 (protocol V4; the server
                               must serve it; default EC_P384_ML_L3 when --config offers it)
            \(Self.keyringOptions)
              --json           one JSON object on standard output
              --pin-fd N       read the PIN from descriptor N (else the terminal pad)
              --complexity C   digits-4, digits-6, digits-4-8 (default) or alphanumeric

            example:
              securepin client confirm --url http://127.0.0.1:8080 --config "$CONFIG" --state dev --algorithm EC_P384 --pin-fd 3 3<pin
            """,
            "client change-pin": """
            usage: securepin client change-pin --url BASE --config STRING --state DIR [--pin-fd N] [--new-pin-fd M] [--reject-weak]

            Changes the PIN. The current PIN is checked by the server first (a wrong one is
            counted). V3.3 then re-wraps the knowledge key under the new PIN on the device; V4
            (a V4 --algorithm) asks the server for a new knowledge key (password/change), wraps
            it under the new PIN and confirms it once, after which the old PIN no longer works.

            options:
              --url BASE       the server's address before /pa/ (https, or http to loopback)
            \(TLSOptions.help)
              --config STRING  the application's configuration string (MOBILE_SDK_CONFIG)
              --state DIR      the device state (created 0700; files 0600)
              --instance ID    the activation's name in DIR (default securepin-client)
              --algorithm NAME LEGACY_P256 (V3.3), EC_P384, EC_P384_ML_L3 or EC_P384_ML_L5 (V4,
                               the /pa/v4 endpoints; the server must serve that suite).
                               Default: EC_P384_ML_L3 when --config has keys 02 and 03,
                               else LEGACY_P256
            \(Self.keyringOptions)
              --json           one JSON object on standard output
              --pin-fd N       read the current PIN from descriptor N (else the terminal pad)
              --new-pin-fd M   read the new PIN from descriptor M (else the terminal pad)
              --complexity C   digits-4, digits-6, digits-4-8 (default) or alphanumeric
              --reject-weak    refuse a weak new PIN, as vault init does (default: warn and go on)

            example:
              securepin client change-pin --url http://127.0.0.1:8080 --config "$CONFIG" --state dev --pin-fd 3 --new-pin-fd 4 3<pin 4<newpin
            """,
            "client upgrade": """
            usage: securepin client upgrade --url BASE --config STRING --state DIR [--algorithm NAME] [--pin-fd N]

            Upgrades the stored activation to a stronger suite once its server serves one: V3.3
            to protocol V4, or a V4 suite to a stronger one (EC_P384 to EC_P384_ML_L3 or
            EC_P384_ML_L5, EC_P384_ML_L3 to EC_P384_ML_L5). --config is the application's new
            configuration string, with the new suite's master keys. upgrade/start is signed
            with the current state's code and the PIN, the new state is stored next to the
            current one (which keeps working), upgrade/confirm is signed by the new state, then
            the new state replaces the old. A crash or kill at any point leaves the device
            working in the old suite or the new one; the next client command finishes (or
            abandons) a half-done upgrade.

            options:
              --url BASE       the server's address before /pa/ (https, or http to loopback)
            \(TLSOptions.help)
              --config STRING  the application's configuration string (MOBILE_SDK_CONFIG)
              --state DIR      the device state (created 0700; files 0600)
              --instance ID    the activation's name in DIR (default securepin-client)
              --algorithm NAME EC_P384, EC_P384_ML_L3 or EC_P384_ML_L5: the suite to upgrade
                               to, stronger than the activation's (default EC_P384_ML_L3 when
                               --config offers it, else the strongest it offers)
            \(Self.keyringOptions)
              --json           one JSON object on standard output
              --pin-fd N       read the PIN from descriptor N (else the terminal pad)
              --complexity C   digits-4, digits-6, digits-4-8 (default) or alphanumeric

            example:
              securepin client upgrade --url http://127.0.0.1:8080 --config "$CONFIG" --state dev --algorithm EC_P384 --pin-fd 3 3<pin
            """,
            "client remove": """
            usage: securepin client remove --url BASE --config STRING --state DIR [--store S] [--access-group G] [--keychain-* NAME] [--pin-fd N | --local]

            Removes the activation on the server (activation/remove, signed with the PIN), then
            the local state and its tokens. A network error leaves the local state as it was.
            With --local, forgets the activation on this device only, without the server (for
            one the server already REMOVED, or a server that is gone): no PIN, nothing sent.

            options:
              --url BASE       the server's address before /pa/ (https, or http to loopback)
            \(TLSOptions.help)
              --config STRING  the application's configuration string (MOBILE_SDK_CONFIG)
              --state DIR      the device state (created 0700; files 0600)
              --instance ID    the activation's name in DIR (default securepin-client)
              --algorithm NAME LEGACY_P256 (V3.3), EC_P384, EC_P384_ML_L3 or EC_P384_ML_L5 (V4,
                               the /pa/v4 endpoints; the server must serve that suite).
                               Default: EC_P384_ML_L3 when --config has keys 02 and 03,
                               else LEGACY_P256
            \(Self.keyringOptions)
              --json           one JSON object on standard output
              --pin-fd N       read the PIN from descriptor N (else the terminal pad)
              --local          forget the activation here only; the server is not contacted
              --complexity C   digits-4, digits-6, digits-4-8 (default) or alphanumeric

            example:
              securepin client remove --url http://127.0.0.1:8080 --config "$CONFIG" --state dev --pin-fd 3 3<pin
              securepin client remove --url http://127.0.0.1:8080 --config "$CONFIG" --state dev --local
            """,
            "client biometry-add": """
            usage: securepin client biometry-add --url BASE --config STRING --state DIR [--store S] [--access-group G] [--keychain-* NAME] [--pin-fd N]

            Adds the biometry factor. This machine has no fingerprint sensor or camera and none
            is pretended: the factor's key is stored in the Secret Service (service
            --keychain-biometry, key --biometry-key) and released while the login keyring is
            unlocked; the login secret is the gate (biometryType loginKeyring). V3.3 checks the
            PIN with vault/unlock (counted) and opens the biometry key sealed at activation; V4
            (a V4 --algorithm) gets a new key from biometry/add. Refused (exit 2) when the
            activation is in files: a key file would have no gate. Exit 3 when the keyring is
            locked.

            options:
              --url BASE       the server's address before /pa/ (https, or http to loopback)
            \(TLSOptions.help)
              --config STRING  the application's configuration string (MOBILE_SDK_CONFIG)
              --state DIR      the device state (created 0700; files 0600)
              --instance ID    the activation's name in DIR (default securepin-client)
              --algorithm NAME LEGACY_P256 (V3.3), EC_P384, EC_P384_ML_L3 or EC_P384_ML_L5 (V4,
                               the /pa/v4 endpoints; the server must serve that suite).
                               Default: EC_P384_ML_L3 when --config has keys 02 and 03,
                               else LEGACY_P256
            \(Self.keyringOptions)
              --json           one JSON object on standard output
              --pin-fd N       read the PIN from descriptor N (else the terminal pad)
              --complexity C   digits-4, digits-6, digits-4-8 (default) or alphanumeric

            example:
              securepin client biometry-add --url http://127.0.0.1:8080 --config "$CONFIG" --state dev --store keyring --pin-fd 3 3<pin
            """,
            "client biometry-remove": """
            usage: securepin client biometry-remove --url BASE --config STRING --state DIR [--store S] [--access-group G] [--keychain-* NAME]

            Removes the biometry factor: V4 tells the server (biometry/remove, signed with
            possession); V3.3 has no server step, as in PowerAuth. Then the flag in the state
            and the keyring item go. Exit 2 when the factor is not added.

            options:
              --url BASE       the server's address before /pa/ (https, or http to loopback)
            \(TLSOptions.help)
              --config STRING  the application's configuration string (MOBILE_SDK_CONFIG)
              --state DIR      the device state (created 0700; files 0600)
              --instance ID    the activation's name in DIR (default securepin-client)
              --algorithm NAME LEGACY_P256 (V3.3), EC_P384, EC_P384_ML_L3 or EC_P384_ML_L5 (V4,
                               the /pa/v4 endpoints; the server must serve that suite).
                               Default: EC_P384_ML_L3 when --config has keys 02 and 03,
                               else LEGACY_P256
            \(Self.keyringOptions)
              --json           one JSON object on standard output

            example:
              securepin client biometry-remove --url http://127.0.0.1:8080 --config "$CONFIG" --state dev --store keyring
            """,
            "client migrate-store": """
            usage: securepin client migrate-store --state DIR [--instance ID] [--access-group G] [--keychain-* NAME] [--json]

            Moves the activation (state, keys, tokens) from the files in DIR to the Secret
            Service: each item is written, read back and compared before any file is removed,
            so a crash leaves it in the files, in both (run it again), or in the keyring. Exit 3
            when the keyring is locked, 2 when there is nothing to move.

            options:
              --state DIR      the device state holding the files
              --instance ID    the activation's name in DIR (default securepin-client)
            \(Self.keychainNameOptions)
              --json           one JSON object on standard output

            example:
              securepin client migrate-store --state dev
            """,
            "pq": """
            usage: securepin pq   (JSON requests on standard input, one answer a line on standard output)

            ML-KEM-768/1024 (FIPS 203) and ML-DSA-65/87 (FIPS 204) for interoperability tests:
            one JSON object a line, bytes as lowercase hex, one JSON answer a line. It prints
            secret keys and shared secrets on purpose and keeps them in ordinary memory: use it
            with test keys only. The requests (alg ML-KEM-768, ML-KEM-1024, ML-DSA-65, ML-DSA-87):
              keygen (ML-KEM): alg, seed (64 bytes d||z)      answers ek, dk
              encaps: alg, ek, m (32 bytes; random if absent)  answers ct, ss
              decaps: dk, ct (alg optional)                    answers ss
              keygen (ML-DSA): alg, seed (32 bytes xi)         answers pk, sk
              sign: sk, msg, ctx (at most 255 bytes), rnd (32 bytes; all zero is the
                deterministic variant, absent is hedged with fresh randomness)   answers sig
              verify: pk, msg, ctx, sig                        answers ok (true or false)
            A malformed request is answered {"error": ...} and the next line is read.

            example:
              securepin pq < requests.jsonl > answers.jsonl
            """,
            "completions": """
            usage: securepin completions bash|zsh|fish

            Prints the completion script for the shell, made from the same description as
            this help. make install puts them where each shell looks.

            example:
              securepin completions bash > /etc/bash_completion.d/securepin
            """,
            "man": """
            usage: securepin man

            Prints the securepin(1) manual page in roff, made from the same description as
            this help.

            example:
              securepin man | man -l -
            """,
            "demo": """
            usage: securepin demo [--interactive]

            The end-to-end story, one line per step; exit 0 only if every step behaved.

            options:
              --interactive   type the two PINs on the terminal pad instead of scripted ones

            example:
              securepin demo
            """,
        ]
    }

    /// The closest of `candidates` to `word` (edit distance at most a third
    /// of its length, and at least 2 allowed), or nil.
    static func nearest(to word: String, among candidates: [String]) -> String? {
        let scored = candidates.map { ($0, distance(word, $0)) }.min { $0.1 < $1.1 }
        guard let (best, d) = scored, d <= max(2, word.count / 3) else { return nil }
        return best
    }

    /// Levenshtein distance (a swap of two neighbours counts as one).
    static func distance(_ a: String, _ b: String) -> Int {
        let x = Array(a), y = Array(b)
        if x.isEmpty || y.isEmpty { return max(x.count, y.count) }
        var d = [[Int]](repeating: [Int](repeating: 0, count: y.count + 1), count: x.count + 1)
        for i in 0...x.count { d[i][0] = i }
        for j in 0...y.count { d[0][j] = j }
        for i in 1...x.count {
            for j in 1...y.count {
                let cost = x[i - 1] == y[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, x[i - 1] == y[j - 2], x[i - 2] == y[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[x.count][y.count]
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + "  " : text + String(repeating: " ", count: width - text.count)
    }
}
