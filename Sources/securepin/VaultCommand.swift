import Activation
import ActivationKeyring
import Foundation
import PinEntry
import PinVault
import PinVaultServer
import PinVaultTPM
import SecureCore

/// `securepin vault init|unlock|change-pin|status|destroy --vault DIR`.
///
/// Every argument that can be checked is checked before anything is read or
/// asked; a locked or throttled vault is reported before the PIN is asked
/// for; the PIN is read in the format the vault records.
enum VaultCommand {
    static func run(_ arguments: [String]) async -> Int32 {
        guard let sub = arguments.first else { CLI.fail("vault: missing command", usage: Help.briefGroup("vault")) }
        if ["-h", "--help", "help"].contains(sub) {
            print(Help.group("vault"))
            return ExitCode.ok
        }
        guard (Help.subcommands["vault"] ?? []).contains(where: { $0.name == sub }) else {
            CLI.unknownSubcommand("vault", sub)
        }
        let command = "vault \(sub)"
        var args = Arguments(Array(arguments.dropFirst()), command: command, usage: Help.of(command))
        let store = parseStore(&args)
        var directory = ""
        do {
            switch sub {
            case "init": return try initialize(&args, directory: &directory, store: store)
            case "unlock": return try await unlock(&args, directory: &directory, store: store)
            case "biometry-add": return try biometryAdd(&args, directory: &directory, store: store)
            case "biometry-remove": return try biometryRemove(&args, directory: &directory, store: store)
            case "change-pin": return try changePIN(&args, directory: &directory, store: store)
            case "status": return try status(&args, directory: &directory, store: store)
            case "migrate-store": return try migrateStore(&args, directory: &directory, store: store)
            default: return try destroy(&args, directory: &directory, store: store)
            }
        } catch let error as VaultError {
            return report(error, command: command, directory: directory)
        } catch let failure as KeyringFailure {
            return failure.report(command: command)
        } catch SecureIO.Failure.tooLong {
            args.fail("the secret on standard input is longer than \(PinVault.maximumSecretByteCount) bytes")
        } catch SecureIO.Failure.readFailed(let code) {
            args.fail("could not read standard input: \(String(cString: strerror(code)))")
        } catch SecureIO.Failure.writeFailed(let code) {
            CLI.printError("securepin: \(command): could not write the secret: \(String(cString: strerror(code)))")
            return ExitCode.refused
        } catch let error as SecureCoreError {
            args.fail(KDFCommand.describe(error))
        } catch {
            CLI.printError("securepin: \(command): failed: \(CLI.sentence(error))")
            return ExitCode.refused
        }
    }

    /// `--bind software|tpm` and `--tcti STRING`: the binding asked for (nil: whatever the vault
    /// records) and the vault options with the TPM the TCTI names (`--tcti`, else `TSS2_TCTI`, else
    /// the kernel's resource manager). The TPM is only reached when a vault is bound to it.
    static func binding(_ args: inout Arguments) -> (bind: VaultStatus.Binding?, options: PinVault.Options) {
        let bind = args.value("--bind").map { text -> VaultStatus.Binding in
            guard let value = VaultStatus.Binding(rawValue: text) else {
                args.fail("--bind must be software, tpm or server, not '\(text)'")
            }
            return value
        }
        let tcti = SoftwareStackTPM.tcti(option: args.value("--tcti"))
        let tls = TLSOptions.parse(&args)
        // A server-bound vault's file records its server's address; the connector makes the client.
        return (
            bind,
            PinVault.Options(
                tpm: SoftwareStackTPM(tcti: tcti),
                serverConnector: HTTPVaultServer.connector(
                    tlsValidation: tls.http, allowInsecureHTTP: tls.allowInsecureHTTP))
        )
    }

    /// The vault's status, checked against `--bind` when one was given.
    static func checkedStatus(_ vault: PinVault, bind: VaultStatus.Binding?, args: Arguments) throws -> VaultStatus {
        let status = try vault.status()
        if let bind, bind != status.binding {
            args.fail("this vault is bound to \(status.binding.rawValue), not \(bind.rawValue) (--bind)")
        }
        return status
    }

    /// Parses the remaining options, then requires `--vault`.
    static func requireVault(_ args: inout Arguments) -> String {
        let directory = args.value("--vault")
        args.finish()
        guard let directory, !directory.isEmpty else { args.usageError("--vault DIR is required") }
        return directory
    }

    static func pinInput(_ args: inout Arguments, option: String, prompt: String) -> PinInput {
        if let fd = args.integer(option, range: Int32(0)...Int32(65535)) { return .descriptor(fd, option: option) }
        return .terminal(prompt: prompt)
    }

    static func initialize(_ args: inout Arguments, directory: inout String, store: StoreOptions) throws -> Int32 {
        let format = parseComplexity(&args, default: .fourToEightDigits)
        let input = pinInput(&args, option: "--pin-fd", prompt: "New PIN")
        let policyText = args.value("--policy")
        let policy = parsePolicy(policyText, &args)
        let rejectWeak = args.flag("--reject-weak")
        let target = args.integer("--target-ms", range: 1...60_000)
        let t = args.integer("-t", range: UInt32(1)...UInt32.max)
        let k = args.integer("-k", range: UInt32(1)...UInt32.max)
        let p = args.integer("-p", range: UInt32(1)...UInt32(64))
        var (bind, options) = binding(&args)
        let maxTries = args.integer("--tpm-max-tries", range: UInt32(1)...UInt32(1000))
        let recovery = args.integer("--tpm-recovery", range: UInt32(0)...UInt32(86_400 * 7))
        let lockoutFD = args.integer("--tpm-lockout-auth-fd", range: Int32(0)...Int32(65535))
        let newLockoutFile = args.value("--tpm-set-lockout-auth")
        let pcrText = args.value("--tpm-pcrs")
        let url = args.value("--url")
        let configuration = args.value("--config")
        directory = requireVault(&args)
        if bind != .server && (url != nil || configuration != nil) {
            args.usageError("--url and --config go with --bind server")
        }
        if bind == .server && (url == nil || configuration == nil) {
            args.usageError("--bind server needs --url URL and --config STRING (what securepin server prints)")
        }
        if bind == .server && policyText != nil {
            args.usageError("--policy is the software counter's: with --bind server the server's policy counts")
        }
        if bind != .tpm
            && (maxTries != nil || recovery != nil || lockoutFD != nil || newLockoutFile != nil || pcrText != nil)
        {
            args.usageError(
                "--tpm-max-tries, --tpm-recovery, --tpm-lockout-auth-fd, --tpm-set-lockout-auth and --tpm-pcrs "
                    + "go with --bind tpm")
        }
        let pcrs = pcrText.map { text -> TPMPCRSelection in
            guard let selection = TPMPCRSelection(parsing: text) else {
                args.usageError("--tpm-pcrs takes PCR numbers 0 to 23, comma-separated (7, or 0,2,7), not '\(text)'")
            }
            return selection
        }
        if lockoutFD != nil && newLockoutFile != nil {
            args.usageError(
                "--tpm-lockout-auth-fd gives the TPM's lockout authorisation, --tpm-set-lockout-auth sets one "
                    + "where there is none: one or the other")
        }
        if bind == .tpm && policyText != nil {
            args.usageError(
                "--policy is the software counter's: with --bind tpm the TPM's lockout counts (--tpm-max-tries)")
        }
        let vaultBinding: VaultBinding
        switch bind {
        case .tpm:
            vaultBinding = .tpm(
                TPMLockoutPolicy(maxTries: maxTries ?? 10, recoverySeconds: recovery ?? 600), pcrs: pcrs ?? .none)
        case .server: vaultBinding = .server(VaultServerAddress(url: url ?? "", configuration: configuration ?? ""))
        case .software, nil: vaultBinding = .software
        }
        // Every check before the secret is read or a PIN asked for.
        if case .descriptor(0, _) = input {
            args.usageError("standard input carries the secret: give the PIN on another descriptor (--pin-fd 3 3<FILE)")
        }
        let fixed = try fixedParameters(t: t, k: k, p: p, target: target, args: args)
        checkNewVaultPath(directory, args: args)
        try PinVault.checkCanCreate(at: directory)  // an existing directory must be empty, yours and 0700
        input.checkAvailable(command: "vault init")
        // auto keeps files for a new vault: a pepper in the keyring ties the vault to this login keyring.
        let keyring = store.request == .keyring ? try store.unlockedKeyring() : nil
        if keyring != nil && vaultBinding != .software {
            args.usageError("--store keyring is for software vaults: a TPM or a server already counts the guesses")
        }
        if let lockoutFD {
            if lockoutFD == 0 {
                args.usageError("standard input carries the secret: give --tpm-lockout-auth-fd 4 4<FILE")
            }
            if case .descriptor(let pinFD, _) = input, pinFD == lockoutFD {
                args.usageError("--tpm-lockout-auth-fd and --pin-fd need two descriptors")
            }
            PinInput.descriptor(lockoutFD, option: "--tpm-lockout-auth-fd").checkAvailable(command: "vault init")
        }
        if let lockoutFD { options.tpmLockoutAuthorization = try lockoutAuthorization(from: lockoutFD, args: args) }
        defer { options.tpmLockoutAuthorization?.destroy() }
        if let newLockoutFile { checkNewLockoutFile(newLockoutFile, vault: directory, tpm: options.tpm, args: args) }
        defer { options.tpmNewLockoutAuthorization?.destroy() }
        let (buffer, count) =
            try isatty(0) == 1
            ? TerminalSecret.read(maximum: PinVault.maximumSecretByteCount)
            : SecureIO.readAll(from: 0, maximum: PinVault.maximumSecretByteCount)
        defer { buffer.destroy() }
        guard count > 0 else { args.fail("the secret on standard input is empty: pipe it in, as in printf 'x' |") }
        let secret = try SecureBytes(count: count)
        buffer.withUnsafeBytes { source in
            secret.withUnsafeMutableBytes {
                $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: source.prefix(count)))
            }
        }
        defer { secret.destroy() }
        let parameters = try fixed ?? calibrated(target: target)
        let pin = PinInput.readNew(input, repeatPrompt: "Repeat PIN", format: format, command: "vault init")
        defer { pin.destroy() }
        PinInput.checkStrength(pin, format: format, reject: rejectWeak, command: "vault init")
        if keyring != nil { options.pepper = try SecureBytes.random(count: KeyringVaultPepper.byteCount) }
        defer { options.pepper?.destroy() }
        if let newLockoutFile {
            options.tpmNewLockoutAuthorization = try newLockoutAuthorization(file: newLockoutFile, args: args)
        }
        let created: PinVault
        do {
            created = try PinVault.create(
                at: directory, secret: secret, pin: pin, policy: policy, pinFormat: VaultPinFormat(format),
                parameters: parameters, binding: vaultBinding, options: options)
        } catch {
            // The file stays only if the TPM took its value.
            if let newLockoutFile, (try? options.tpm?.lockoutState())??.lockoutAuthorizationSet != true {
                unlink(newLockoutFile)
            }
            throw error
        }
        if vaultBinding == .software {
            // The limit of a counter kept in a file the attacker can write (docs/security.md).
            CLI.printError(
                "securepin: vault init: note: a software vault counts failures in its directory, so restoring an "
                    + "older copy rolls the count back; --bind tpm or --bind server counts where no copy resets it")
        }
        if let keyring, let pepper = options.pepper {
            // The vault exists only now (its identifier names the item); without the item it cannot
            // be opened, so a failure here destroys it again.
            let id = try created.identifier()
            do throws(ActivationError) { try keyring.store(pepper, vaultId: id) } catch {
                _ = try? created.destroy()
                throw KeyringFailure(error: error, note: "the vault was destroyed again; nothing is left")
            }
            print(
                "vault created: \(directory) (Argon2id \(parameters), policy \(describe(policy)), "
                    + "PIN format \(describeFormat(format)); its pepper in the keyring: service \(keyring.service), "
                    + "key \(id))")
            return ExitCode.ok
        }
        if case .server(let address) = vaultBinding {
            let limit = (try? created.status().maxFailures).map(String.init) ?? "?"
            print(
                "vault created: \(directory) (Argon2id \(parameters), bound to the server at \(address.url): "
                    + "blocked by the server after \(limit) failures; PIN format \(describeFormat(format)))")
        } else if case .tpm(let lockout, let pcrs) = vaultBinding {
            let sealedTo = pcrs.isEmpty ? "" : " and to PCRs \(pcrs) (SHA-256) as they read now"
            print(
                "vault created: \(directory) (Argon2id \(parameters), bound to the TPM at "
                    + "\(options.tpm?.location ?? "?")\(sealedTo): locked out after \(lockout.maxTries) failures, "
                    + "one forgotten every \(lockout.recoverySeconds) s; PIN format \(describeFormat(format)))")
        } else {
            print(
                "vault created: \(directory) (Argon2id \(parameters), policy \(describe(policy)), "
                    + "PIN format \(describeFormat(format)))")
        }
        return ExitCode.ok
    }

    /// `--tpm-set-lockout-auth FILE`: for a TPM whose lockout hierarchy has the empty authorisation,
    /// a random one (32 hex digits, 128 bits) written 0600 to a new FILE outside the vault, with
    /// fsync, *before* the TPM takes it (a crash in between leaves a file nobody needs, never a TPM
    /// with an authorisation nobody has). The administrator keeps it: `tpm2_dictionarylockout -c -p
    /// "$(cat FILE)"` resets the lockout (the value is the 32 digits, without the file's newline),
    /// and `--tpm-lockout-auth-fd 4 4<FILE` sets the policy later.
    static func newLockoutAuthorization(file: String, args: Arguments) throws -> SecureBytes {
        let absolute = URL(fileURLWithPath: file).standardizedFileURL.path
        let random = try SecureBytes.random(count: 16)
        defer { random.destroy() }
        let text = try SecureBytes(count: 33)
        random.withUnsafeBytes { bytes in
            text.withUnsafeMutableBytes { out in
                for i in 0..<16 {
                    out[2 * i] = ConstantTimeEncoding.hexDigit(bytes[i] >> 4)
                    out[2 * i + 1] = ConstantTimeEncoding.hexDigit(bytes[i])
                }
                out[32] = 0x0A
            }
        }
        defer { text.destroy() }
        let fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            args.fail(
                "--tpm-set-lockout-auth: \(file) cannot be created (\(String(cString: strerror(errno)))); it must not exist"
            )
        }
        let written = text.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == 33, synced else {
            unlink(file)
            args.fail("--tpm-set-lockout-auth: \(file) could not be written; nothing was changed")
        }
        let parent = open((absolute as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if parent >= 0 {
            _ = fsync(parent)
            close(parent)
        }
        let auth = try SecureBytes(count: 32)
        text.withUnsafeBytes { source in
            auth.withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: source.prefix(32))) }
        }
        CLI.printError(
            "securepin: vault init: the TPM's new lockout authorisation is in \(file) (0600): keep it for the "
                + "administrator, away from this machine's vaults; without it nobody can reset the TPM's lockout")
        return auth
    }

    /// Before any PIN is asked for: FILE lies outside the vault, does not exist, and the TPM has
    /// no lockout authorisation yet (a TPM with one keeps it: writing a new one would mislead).
    static func checkNewLockoutFile(_ file: String, vault: String, tpm: (any VaultTPM)?, args: Arguments) {
        let absolute = URL(fileURLWithPath: file).standardizedFileURL.path
        let vaultPath = URL(fileURLWithPath: vault).standardizedFileURL.path
        if absolute == vaultPath || absolute.hasPrefix(vaultPath + "/") {
            args.usageError("--tpm-set-lockout-auth: the lockout authorisation never goes beside the vault")
        }
        if FileManager.default.fileExists(atPath: absolute) {
            args.usageError("--tpm-set-lockout-auth: \(file) exists; it is never overwritten")
        }
        if let tpm, (try? tpm.lockoutState())?.lockoutAuthorizationSet == true {
            args.fail(
                "the TPM has a lockout authorisation already: give it with --tpm-lockout-auth-fd N "
                    + "(--tpm-set-lockout-auth is for a TPM that has none)")
        }
    }

    /// The TPM's lockout authorisation from a descriptor, in secure memory: its bytes, one trailing
    /// newline removed (as `echo` or an editor leaves it: a stray newline would be a wrong
    /// authorisation, which the TPM answers by locking its lockout hierarchy for a while).
    static func lockoutAuthorization(from fd: Int32, args: Arguments) throws -> SecureBytes {
        let (buffer, count) = try SecureIO.readAll(from: fd, maximum: 64)
        defer { buffer.destroy() }
        let newline = count > 0 && buffer.withUnsafeBytes { $0[count - 1] == 0x0A }
        let length = newline ? count - 1 : count
        guard length > 0 else {
            args.fail("--tpm-lockout-auth-fd: the lockout authorisation is empty (an empty one needs no option)")
        }
        let auth = try SecureBytes(count: length)
        buffer.withUnsafeBytes { source in
            auth.withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: source.prefix(length))) }
        }
        return auth
    }

    /// Destroys after a confirmation (a terminal) or `--yes`, and says exactly what it removed. With
    /// `--pin-fd N` the PIN is proved first (counted like an unlock; a wrong one destroys nothing),
    /// which also removes a server-bound vault's record at its server.
    static func destroy(_ args: inout Arguments, directory: inout String, store: StoreOptions) throws -> Int32 {
        let yes = args.flag("--yes")
        let pinFD = args.integer("--pin-fd", range: Int32(0)...Int32(65535))
        var (_, options) = binding(&args)
        directory = requireVault(&args)
        if let pinFD { PinInput.descriptor(pinFD, option: "--pin-fd").checkAvailable(command: "vault destroy") }
        // Only a missing vault stops here: a damaged one (say, a destroy interrupted after its key
        // file was overwritten) must still be destroyable.
        guard PinVault(directory: directory, options: options).exists else { throw VaultError.notFound }
        let peppered = try attachPepper(directory, &options, store: store, args: args, forDestroy: true)
        defer { options.pepper?.destroy() }
        let vault = PinVault(directory: directory, options: options)
        // The PIN's format, and whether a server keeps a record, when the vault can still be read.
        let state = try? vault.status()
        if !yes {
            guard isatty(0) == 1 else {
                CLI.printError(
                    "securepin: vault destroy: refusing to destroy without confirmation: standard input is not a"
                        + " terminal; pass --yes")
                return ExitCode.usage
            }
            FileHandle.standardError.write(
                Data("Destroy the vault in \(directory)? It cannot be recovered. Type 'yes' to confirm: ".utf8))
            guard readLine(strippingNewline: true) == "yes" else {
                CLI.printError("securepin: vault destroy: not confirmed; nothing was destroyed")
                return ExitCode.usage
            }
        }
        let report: VaultDestruction
        if let pinFD {
            guard let state else {
                throw VaultError.damaged(reason: "the vault cannot be read, so no PIN can be checked")
            }
            let pin = PinInput.descriptor(pinFD, option: "--pin-fd").read(
                format: PinFormat(state.pinFormat), command: "vault destroy")
            defer { pin.destroy() }
            report = try vault.destroy(pin: pin)
        } else {
            report = try vault.destroy()
        }
        print("vault destroyed: \(directory)")
        print("overwritten in place and removed: \(report.removedFiles.joined(separator: ", "))")
        if let peppered, !peppered.found {
            print("no pepper in the keyring for this vault (service \(peppered.keyring.service), key \(peppered.id))")
        } else if let peppered {
            // The key file's destroyed halves are the erasure; the item goes as one more.
            do throws(ActivationError) { try peppered.keyring.remove(vaultId: peppered.id) } catch {
                throw KeyringFailure(error: error, note: "the vault's files were destroyed; its pepper item remains")
            }
            print("removed from the keyring: the pepper (service \(peppered.keyring.service), key \(peppered.id))")
        }
        print(
            report.removedDirectory
                ? "removed directory: \(directory) (created by vault init)"
                : "kept directory: \(directory) (the vault did not create it, or it is not empty)")
        if report.removedServerRecord {
            print("removed at the server: record \(state?.serverVaultId ?? "?") (\(state?.serverLocation ?? "?"))")
        } else if let state, state.binding == .server {
            print(
                "kept at the server: record \(state.serverVaultId ?? "?") (useless without the destroyed files; "
                    + "removing it needs the PIN: --pin-fd N)")
        }
        return ExitCode.ok
    }

    /// The `-t`/`-k`/`-p` parameters, checked against the vault's floor and
    /// this machine's ceiling; nil when calibrating or using the default.
    static func fixedParameters(t: UInt32?, k: UInt32?, p: UInt32?, target: Int?, args: Arguments) throws
        -> Argon2id.Parameters?
    {
        if target != nil && (t != nil || k != nil || p != nil) {
            args.usageError("give --target-ms or -t/-k/-p, not both")
        }
        if (t == nil) != (k == nil) || (p != nil && t == nil) {
            args.usageError("-t and -k go together (and -p needs both): for example -t 2 -k 65536")
        }
        guard let t, let k else { return target == nil ? .interactive : nil }
        let parameters = Argon2id.Parameters(memoryKiB: k, iterations: t, parallelism: p ?? 1)
        let floor = Help.floor
        if k < floor.memoryKiB || t < floor.iterations {
            args.fail(
                "-t \(t) -k \(k) is below the vault's floor of \(Help.floorText) (OWASP's Argon2id minimum): "
                    + "use -t \(max(t, floor.iterations)) -k \(max(k, floor.memoryKiB)) or more")
        }
        do throws(SecureCoreError) {
            try Argon2id.validate(parameters, saltByteCount: 16, outputByteCount: 32)
        } catch {
            args.fail(KDFCommand.describe(error))
        }
        return parameters
    }

    /// Calibrates for `target` ms, never below the vault's floor (raised, and said so).
    static func calibrated(target: Int?) throws -> Argon2id.Parameters {
        guard let target else { return .interactive }
        // Calibrating takes seconds: on a terminal, a progress bar says something is happening.
        let showProgress = isatty(2) == 1
        let found = try KDFCalibrator(targetMilliseconds: Double(target)).calibrate { fraction in
            if showProgress { KDFCommand.drawProgress(fraction) }
        }.parameters
        if showProgress { CLI.printError("") }
        let raised = KDFCommand.raisedToFloor(found)
        if raised != found {
            CLI.printError(
                "securepin: vault init: note: \(target) ms calibrates to \(found), below the vault's floor; "
                    + "raised to \(raised)")
        }
        return raised
    }

    /// A new vault's directory: no vault there yet, and a parent that exists.
    static func checkNewVaultPath(_ directory: String, args: Arguments) {
        if PinVault(directory: directory).exists {
            args.fail(
                "a vault already exists at \(directory): destroy it first (securepin vault destroy --vault "
                    + "\(directory)) or choose another --vault")
        }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { args.fail("\(directory) exists and is not a directory") }
            return
        }
        // Not NSString.deletingLastPathComponent: this toolchain's Foundation traps on a bare name ("v").
        let trimmed = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        let parent = trimmed.lastIndex(of: "/").map { $0 == trimmed.startIndex ? "/" : String(trimmed[..<$0]) } ?? ""
        let parentPath = parent.isEmpty ? "." : parent
        guard FileManager.default.fileExists(atPath: parentPath, isDirectory: &isDirectory), isDirectory.boolValue
        else { args.fail("cannot create \(directory): the directory \(parentPath) does not exist") }
        guard access(parentPath, W_OK) == 0 else {
            args.fail("cannot create \(directory): the directory \(parentPath) is not writable")
        }
    }

    /// Reports a locked or throttled vault before a PIN is asked for, and
    /// warns when the next wrong PIN has consequences.
    static func preflight(_ status: VaultStatus, command: String) throws(VaultError) {
        switch status.state {
        case .locked: throw .locked
        case .throttled: throw .throttled(retryAfterSeconds: status.retryAfterSeconds)
        case .ready: break
        }
        guard status.remainingAttempts == 1 else { return }
        switch status.policy {
        case .wipe: CLI.printError("securepin: \(command): warning: the next wrong PIN erases the vault")
        case .hard, .soft, .softSchedule:
            CLI.printError("securepin: \(command): warning: the next wrong PIN locks the vault")
        }
    }

    static func unlock(_ args: inout Arguments, directory: inout String, store: StoreOptions) async throws -> Int32 {
        let input = pinInput(&args, option: "--pin-fd", prompt: "PIN")
        let biometry = args.flag("--biometry")
        if biometry, case .descriptor = input {
            args.usageError("--biometry opens the vault without a PIN: leave --pin-fd out")
        }
        var (bind, options) = binding(&args)
        directory = requireVault(&args)
        if !biometry { input.checkAvailable(command: "vault unlock") }
        let peppered = try attachPepper(directory, &options, store: store, args: args)
        defer { options.pepper?.destroy() }
        if biometry { try useKeyringBiometry(&options) }
        let vault = PinVault(directory: directory, options: options)
        // A missing, damaged, locked or throttled vault fails before the PIN.
        let state = try checkedStatus(vault, bind: bind, args: args)
        try preflight(state, command: "vault unlock")
        do throws(VaultUnlockError<SecureIO.Failure>) {
            if biometry {
                try await vault.unlockWithBiometry(prompt: "unlock the vault at \(directory)") {
                    (secret) throws(SecureIO.Failure) in try SecureIO.writeRaw(secret, to: 1)
                }
            } else {
                let pin = input.read(format: PinFormat(state.pinFormat), command: "vault unlock")
                defer { pin.destroy() }
                try await vault.unlock(pin: pin) { (secret) throws(SecureIO.Failure) in
                    try SecureIO.writeRaw(secret, to: 1)
                }
            }
        } catch .vault(let error) {
            // A wipe policy erased the files: the pepper goes with them.
            if error == .wiped, let peppered { try? peppered.keyring.remove(vaultId: peppered.id) }
            throw error
        } catch .body(let error) {
            throw error
        }
        // On a terminal the prompt must not run on after the secret; into a pipe or a file the
        // secret's bytes stay exact.
        if isatty(1) == 1 {
            var newline: UInt8 = 0x0A
            _ = write(1, &newline, 1)
        }
        return ExitCode.ok
    }

    /// The Secret Service authenticator the client's biometry uses (`client biometry-add`): the
    /// key of the vault's biometric slot in the login keyring, released while it is unlocked.
    static func keyringAuthenticator() throws -> KeyringBiometricAuthenticator {
        do throws(ActivationError) {
            return try KeyringBiometricAuthenticator(keychain: KeychainConfiguration(), instanceId: "securepin-vault")
        } catch {
            throw KeyringFailure(
                error: error, note: "the biometric slot needs the login keyring (Secret Service); nothing was changed")
        }
    }

    /// The keyring authenticator with the one biometric configuration it honours (all three
    /// settings false: no enrolled set, no passcode fallback, no single-use context).
    static func useKeyringBiometry(_ options: inout PinVault.Options) throws {
        options.authenticator = try keyringAuthenticator()
        options.biometricConfiguration = KeyringBiometricAuthenticator.supportedConfiguration
    }

    /// `vault biometry-add`: a biometric slot whose key is in the login keyring; the PIN proves
    /// the user and is counted like an unlock.
    static func biometryAdd(_ args: inout Arguments, directory: inout String, store: StoreOptions) throws -> Int32 {
        let input = pinInput(&args, option: "--pin-fd", prompt: "PIN")
        var (bind, options) = binding(&args)
        directory = requireVault(&args)
        input.checkAvailable(command: "vault biometry-add")
        _ = try attachPepper(directory, &options, store: store, args: args)
        defer { options.pepper?.destroy() }
        try useKeyringBiometry(&options)
        let vault = PinVault(directory: directory, options: options)
        let state = try checkedStatus(vault, bind: bind, args: args)
        try preflight(state, command: "vault biometry-add")
        let pin = input.read(format: PinFormat(state.pinFormat), command: "vault biometry-add")
        defer { pin.destroy() }
        try vault.addBiometricSlot(pin: pin)
        print("biometric slot: added (its key is in the login keyring, released while the keyring is unlocked)")
        return ExitCode.ok
    }

    /// `vault biometry-remove`: the biometric slot and its keyring item go; the PIN keeps working.
    static func biometryRemove(_ args: inout Arguments, directory: inout String, store: StoreOptions) throws
        -> Int32
    {
        var (bind, options) = binding(&args)
        directory = requireVault(&args)
        _ = try attachPepper(directory, &options, store: store, args: args)
        defer { options.pepper?.destroy() }
        try useKeyringBiometry(&options)
        let vault = PinVault(directory: directory, options: options)
        _ = try checkedStatus(vault, bind: bind, args: args)
        try vault.removeBiometricSlot()
        print("biometric slot: removed; the PIN keeps working")
        return ExitCode.ok
    }

    static func changePIN(_ args: inout Arguments, directory: inout String, store: StoreOptions) throws -> Int32 {
        let requested = args.value("--complexity")
        let old = pinInput(&args, option: "--pin-fd", prompt: "Current PIN")
        let new = pinInput(&args, option: "--new-pin-fd", prompt: "New PIN")
        let rejectWeak = args.flag("--reject-weak")
        var (bind, options) = binding(&args)
        directory = requireVault(&args)
        old.checkAvailable(command: "vault change-pin")
        new.checkAvailable(command: "vault change-pin")
        _ = try attachPepper(directory, &options, store: store, args: args)
        defer { options.pepper?.destroy() }
        let vault = PinVault(directory: directory, options: options)
        let state = try checkedStatus(vault, bind: bind, args: args)
        let format = PinFormat(state.pinFormat)
        if let requested, PinComplexity(rawValue: requested).map(PinFormat.init) != format {
            args.fail(
                "this vault's PIN format is \(describeFormat(format)), recorded at init; "
                    + "change-pin keeps it (--complexity \(requested) cannot change it)")
        }
        try preflight(state, command: "vault change-pin")
        let oldPIN = old.read(format: format, command: "vault change-pin")
        defer { oldPIN.destroy() }
        let newPIN = PinInput.readNew(new, repeatPrompt: "Repeat new PIN", format: format, command: "vault change-pin")
        defer { newPIN.destroy() }
        PinInput.checkStrength(newPIN, format: format, reject: rejectWeak, command: "vault change-pin")
        try vault.changePIN(old: oldPIN, new: newPIN)
        print("PIN changed")
        return ExitCode.ok
    }

    static func status(_ args: inout Arguments, directory: inout String, store: StoreOptions) throws -> Int32 {
        let json = args.flag("--json")
        var (bind, options) = binding(&args)
        directory = requireVault(&args)
        let peppered = try attachPepper(directory, &options, store: store, args: args)
        defer { options.pepper?.destroy() }
        let s = try checkedStatus(PinVault(directory: directory, options: options), bind: bind, args: args)
        let enforcer: String
        switch s.binding {
        case .tpm:
            enforcer =
                "the TPM at \(options.tpm?.location ?? "?") (dictionary-attack lockout, shared by its DA-protected objects)"
        case .server:
            enforcer =
                "the server at \(s.serverLocation ?? "?") (counts every OPRF evaluation, blocks at its maximum)"
        case .software:
            enforcer =
                peppered == nil
                ? "this vault's failure record (software; a copy of the directory can be guessed offline, "
                    + "and restoring an older copy rolls the count back)"
                : "this vault's failure record (software; a copy of the directory can be guessed offline only "
                    + "with the keyring's pepper; restoring an older copy rolls the count back)"
        }
        let format = PinFormat(s.pinFormat)
        if json {
            var fields: [String: Any] = [
                "state": s.state.rawValue, "failures": s.failures, "max_failures": s.maxFailures,
                "remaining_attempts": s.remainingAttempts, "retry_after_seconds": s.retryAfterSeconds,
                "biometric_slot": s.hasBiometricSlot, "policy": policyName(s.policy),
                "binding": s.binding.rawValue, "enforced_by": s.binding.rawValue,
                "pin_format": PinComplexity.allCases.first { PinFormat($0) == format }?.rawValue
                    ?? s.pinFormat.description,
            ]
            fields["next_attempt_at"] = s.nextAttemptAt.map { iso8601($0) as Any } ?? NSNull()
            if let id = s.serverVaultId { fields["server_vault_id"] = id }
            if let pcrs = s.tpmPCRs { fields["tpm_pcrs"] = pcrs.indices }
            if let peppered {
                fields["store"] = "keyring"
                fields["keyring_item"] = "\(peppered.keyring.service) \(peppered.id)"
            }
            let data = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        } else {
            let next: String
            switch s.state {
            case .locked:
                next =
                    s.binding == .server
                    ? "never (blocked by the server: its back office can unblock record \(s.serverVaultId ?? "?"))"
                    : "never (locked: only destroy and a new vault help)"
            case .throttled:
                next = "try again in \(s.retryAfterSeconds) s (\(s.nextAttemptAt.map(iso8601) ?? "?"))"
            case .ready: next = "now"
            }
            print("state:              \(s.state.rawValue)")
            print("binding:            \(s.binding.rawValue)")
            print("enforced by:        \(enforcer)")
            if let peppered {
                print(
                    "store:              keyring: the pepper in service \(peppered.keyring.service), key \(peppered.id);"
                        + " the files in \(directory)")
            }
            if let id = s.serverVaultId { print("server record:      \(id)") }
            print("failures:           \(s.failures) of \(s.maxFailures)")
            print("remaining attempts: \(s.remainingAttempts)")
            if let tpm = s.tpmLockout {
                print(
                    "policy:             TPM lockout after \(tpm.maxTries), one failure forgotten every \(tpm.recoverySeconds) s"
                )
                if let pcrs = s.tpmPCRs, !pcrs.isEmpty {
                    print("PCR policy:         PCRs \(pcrs) (SHA-256) must read as when the vault was sealed")
                }
            } else {
                print("policy:             \(describe(s.policy))")
            }
            print("PIN format:         \(describeFormat(format))")
            print("next attempt:       \(next)")
        }
        return ExitCode.ok
    }

    static func iso8601(_ seconds: UInt64) -> String {
        let formatter = ISO8601DateFormatter()
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    static func parsePolicy(_ text: String?, _ args: inout Arguments) -> ThrottlePolicy {
        guard let text else { return .soft() }
        let usage =
            "--policy must be soft, soft:N, soft:F:DELAYS[:N] (such as soft:5:30s,5m,30m), hard:N or wipe:N"
            + " (N from 1 to 1000), not '\(text)'"
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        if parts.first == "soft", parts.count == 3 || parts.count == 4 {
            // soft:F:D1,D2,…[:N]: the vault's own schedule, locked after N (default 20).
            var limit = 20
            if parts.count == 4 {
                guard let n = Int(parts[3]), (1...1000).contains(n) else { args.fail(usage) }
                limit = n
            }
            do throws(VaultError) {
                let policy = ThrottlePolicy.softSchedule(
                    try LockoutSchedule(parsing: "\(parts[1]):\(parts[2])"), maxFailures: limit)
                try policy.validate()
                return policy
            } catch {
                guard case .invalidPolicy(let reason) = error else { args.fail(usage) }
                args.fail("--policy \(text): \(reason)")
            }
        }
        let limit = parts.count == 2 ? Int(parts[1]) : nil
        switch (parts.first, limit) {
        case ("soft", nil) where parts.count == 1: return .soft()
        case ("soft", let n?) where (1...1000).contains(n): return .soft(maxFailures: n)
        case ("hard", let n?) where (1...1000).contains(n): return .hard(maxFailures: n)
        case ("wipe", let n?) where (1...1000).contains(n): return .wipe(maxFailures: n)
        default: args.fail(usage)
        }
    }

    static func describe(_ policy: ThrottlePolicy) -> String {
        switch policy {
        case .soft(let n): "soft, locked after \(n)"
        case .softSchedule(let schedule, let n):
            "soft, from failure \(schedule.freeFailures) waits "
                + schedule.delays.dropLast().map { LockoutSchedule.formatDelay($0) + ", " }.joined()
                + (schedule.delays.count > 1 ? "then " : "") + LockoutSchedule.formatDelay(schedule.delays.last!)
                + " each time, locked after \(n)"
        case .hard(let n): "hard, locked after \(n)"
        case .wipe(let n): "wipe after \(n)"
        }
    }

    /// `soft:20`: the `--policy` spelling.
    static func policyName(_ policy: ThrottlePolicy) -> String {
        switch policy {
        case .soft(let n): "soft:\(n)"
        case .softSchedule(let schedule, let n): "soft:\(schedule):\(n)"
        case .hard(let n): "hard:\(n)"
        case .wipe(let n): "wipe:\(n)"
        }
    }

    /// One line for the error, naming the vault, and the exit code of the table.
    static func report(_ error: VaultError, command: String, directory: String) -> Int32 {
        let (message, code): (String, Int32) =
            switch error {
            case .wrongPIN(let remaining?):
                (
                    "wrong PIN (\(remaining) \(remaining == 1 ? "attempt" : "attempts") remaining)",
                    ExitCode.refused
                )
            case .wrongPIN(nil): ("wrong PIN", ExitCode.refused)
            case .throttled(let seconds):
                ("too many failures: try again in \(seconds) s; nothing was counted", ExitCode.locked)
            case .locked:
                (
                    "locked after too many failures: only securepin vault destroy and a new vault help",
                    ExitCode.locked
                )
            case .wiped: ("too many failures: the vault at \(directory) was erased", ExitCode.locked)
            case .notFound:
                ("no vault at \(directory) (securepin vault init --vault \(directory) creates one)", ExitCode.usage)
            case .alreadyExists:
                ("a vault already exists at \(directory): destroy it first or choose another --vault", ExitCode.usage)
            case .notAVault: ("\(directory)/vault is not a SecurePIN vault file", ExitCode.usage)
            case .newerFormat(let v):
                ("the vault at \(directory) has format \(v), newer than this securepin reads: upgrade", ExitCode.usage)
            case .unsupportedFormat(let v):
                (
                    "the vault at \(directory) has format \(v), which this securepin no longer reads: "
                        + "destroy it (securepin vault destroy --vault \(directory)) and create it anew",
                    ExitCode.usage
                )
            case .unsuitableDirectory(let reason):
                ("cannot use \(directory) for a vault: \(reason)", ExitCode.usage)
            case .damaged(let reason): ("the vault at \(directory) is damaged: \(reason)", ExitCode.usage)
            case .invalidPolicy(let reason): ("the throttle policy is not valid: \(reason)", ExitCode.usage)
            case .parametersBelowFloor:
                (
                    "refused: the vault at \(directory) derives its key below the floor of \(Help.floorText); "
                        + "this program never weakens it", ExitCode.usage
                )
            case .parametersAboveCeiling:
                ("refused: the vault at \(directory) needs more memory than this machine allows", ExitCode.usage)
            case .pinOutsideFormat(let format):
                (
                    "the PIN does not fit this vault's PIN format (\(describeFormat(PinFormat(format)))); "
                        + "nothing was counted", ExitCode.usage
                )
            case .pepperRequired:
                (
                    "the vault at \(directory) keeps its pepper in the keyring (vault init --store keyring or "
                        + "vault migrate-store): use --store keyring or auto", ExitCode.usage
                )
            case .pepperNotSupported(let reason):
                ("the vault at \(directory) cannot take a pepper: \(reason)", ExitCode.usage)
            case .invalidSecretSize(let n):
                ("the secret must be 1 to \(PinVault.maximumSecretByteCount) bytes, not \(n)", ExitCode.usage)
            case .io(let operation, let errno):
                ("\(directory): \(operation) failed: \(String(cString: strerror(errno)))", ExitCode.usage)
            case .cancelled: ("cancelled; nothing was entered", ExitCode.cancelled)
            case .secureCore:
                ("secure memory or cryptography failed (securepin doctor tells more)", ExitCode.refused)
            case .biometryNotConfigured:
                ("the vault at \(directory) has no biometric slot (vault biometry-add adds one)", ExitCode.refused)
            case .biometryInvalidated:
                (
                    "the vault's biometric slot was invalidated by a change of the enrolled biometry: unlock with "
                        + "the PIN and add it again", ExitCode.refused
                )
            case .biometryFailed(.lockout):
                (
                    "the login keyring is locked: unlock it (log in, or unlock the keyring) and try again",
                    ExitCode.locked
                )
            case .biometryFailed(let status): ("biometry is not available: \(status.phrase)", ExitCode.refused)
            case .biometryOptionNotSupported: ("\(error)", ExitCode.usage)
            case .tpmRequired: ("the vault at \(directory) is bound to a TPM and none was given", ExitCode.usage)
            case .tpmUnavailable(let reason):
                ("the vault at \(directory) needs its TPM: \(reason); nothing was counted", ExitCode.refused)
            case .tpmMismatch:
                (
                    "the vault at \(directory) is bound to another TPM (another machine, or this TPM was cleared): "
                        + "no PIN can open it here; nothing was counted", ExitCode.refused
                )
            case .tpmLockedOut(let seconds):
                (
                    "the TPM is in dictionary-attack lockout: it refuses every PIN, the right one too; it forgets "
                        + "one failure every \(seconds) s; nothing was counted", ExitCode.locked
                )
            case .tpmPCRsChanged(let pcrs):
                (
                    "the vault at \(directory) is sealed to PCRs \(pcrs) of this TPM and they no longer read as "
                        + "when it was sealed (another OS or boot chain, a changed Secure Boot state, or a firmware "
                        + "or boot loader update): no PIN can open it until they do; the PIN was not checked and "
                        + "nothing was counted", ExitCode.refused
                )
            case .tpmFailed(.lockoutAuthorizationRefused):
                (
                    "the TPM refused its lockout authorisation (set with --tpm-lockout-auth-fd, or empty without it); "
                        + "nothing was written. A TPM locks its lockout hierarchy for its lockout recovery time after "
                        + "a wrong one, so check it before trying again", ExitCode.refused
                )
            case .tpmLockoutAuthorizationNotSet:
                (
                    "the TPM's lockout hierarchy has the empty authorisation, so anyone who can send it commands "
                        + "could reset its guess limit (TPM2_DictionaryAttackLockReset) whenever the vault locks; "
                        + "nothing was written. Set one first (tpm2_changeauth -c lockout, kept by the administrator, "
                        + "then --tpm-lockout-auth-fd N), or let vault init set a random one: --tpm-set-lockout-auth "
                        + "FILE", ExitCode.refused
                )
            case .tpmFailed(let error): ("the TPM failed: \(error)", ExitCode.refused)
            case .serverRequired:
                ("the vault at \(directory) is bound to a server and no client was given", ExitCode.usage)
            case .network(let reason):
                (
                    "the vault at \(directory) needs its server, which cannot be reached: \(reason); "
                        + "nothing was counted here", ExitCode.network
                )
            case .serverTLS(let reason):
                (
                    "the vault at \(directory) needs its server, whose TLS is not trusted: \(reason); "
                        + "nothing was counted (--ca-file, --pin-sha256)", ExitCode.network
                )
            case .serverBlocked:
                (
                    "the server blocks this vault after too many failures: it refuses every PIN, the right one "
                        + "too; only its operator can lift the block", ExitCode.locked
                )
            case .serverRefused(let reason): ("the vault's server refused: \(reason)", ExitCode.refused)
            }
        CLI.printError("securepin: \(command): \(message)")
        return code
    }
}
