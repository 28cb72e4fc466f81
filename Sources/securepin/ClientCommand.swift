import Activation
import ActivationHTTP
import ActivationKeyring
import Biometry
import Foundation
import HTTPClient
import PinEntry
import PowerAuthProtocol
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `securepin client <step>`: a PowerAuth client over HTTP (V3.3, or V4 with
/// `--algorithm EC_P384|EC_P384_ML_L3|EC_P384_ML_L5`), one subcommand per step, the device state in `--state DIR` or in
/// the Secret Service (`--store`). It parses options and calls ``ActivationService``; a network
/// error never removes the local state.
enum ClientCommand {
    /// The algorithm of `--algorithm NAME`; without the option the library's default
    /// (`EC_P384_ML_L3`) when the configuration string offers it (keys `0x02` and `0x03`), else
    /// `LEGACY_P256` as before, so that a V3.3 server keeps working without the option.
    /// - Returns: `nil` for an unknown name.
    /// The suite a configuration string offers when none is named: the library's default when the
    /// string carries its master keys, else the strongest suite it carries keys for.
    static func offeredAlgorithm(configuration: String) -> ProtocolAlgorithm {
        let preferred = ActivationConfiguration.defaultAlgorithm
        if ActivationConfiguration.offers(preferred, configuration: configuration) { return preferred }
        return ProtocolAlgorithm.allCases.reversed().first {
            ActivationConfiguration.offers($0, configuration: configuration)
        }
            ?? .legacyP256
    }

    /// The suite to open the client with, from `--algorithm`, the stored activation and the
    /// configuration string: the stored activation's own suite, or a stronger one asked for
    /// (the activation keeps working in its own until `upgrade` moves it). A weaker one asked for
    /// is an error that names both suites; an available upgrade a note.
    /// - Returns: the suite, or the message to fail with.
    static func chooseAlgorithm(
        option: ProtocolAlgorithm?, stored: ProtocolAlgorithm?, configuration: String, subcommand: String
    ) -> Result<(algorithm: ProtocolAlgorithm, note: String?), ChoiceError> {
        let offered = offeredAlgorithm(configuration: configuration)
        // A suite whose master keys the string lacks: the configuration's own refusal names the key.
        if let option, !ActivationConfiguration.offers(option, configuration: configuration) {
            return .success((option, nil))
        }
        guard let stored else { return .success((option ?? offered, nil)) }
        if subcommand == "upgrade" {
            let target = option ?? offered
            guard target.isStronger(than: stored) else {
                return .failure(
                    ChoiceError(
                        "the activation uses \(stored.rawValue), the upgrade asks for \(target.rawValue): "
                            + (target == stored ? "nothing to upgrade" : "no downgrade exists"),
                        exitCode: target == stored ? ExitCode.refused : ExitCode.usage))
            }
            return .success((target, nil))
        }
        if let option, option != stored {
            // A stronger suite: the activation keeps working in its own until the upgrade runs.
            guard option.isStronger(than: stored) else {
                return .failure(
                    ChoiceError(
                        "the activation uses \(stored.rawValue), --algorithm asks for \(option.rawValue): no "
                            + "downgrade exists: leave --algorithm out to use \(stored.rawValue)"))
            }
            return .success(
                (
                    option,
                    "the activation uses \(stored.rawValue), --algorithm asks for \(option.rawValue): upgrade "
                        + "available: run 'securepin client upgrade --algorithm \(option.rawValue)'"
                ))
        }
        guard ActivationConfiguration.offers(stored, configuration: configuration) else {
            return .failure(
                ChoiceError(
                    "the activation uses \(stored.rawValue), and the configuration string lacks its master keys"))
        }
        let note =
            offered.isStronger(than: stored)
            ? "the activation uses \(stored.rawValue), the configuration offers \(offered.rawValue): upgrade "
                + "available ('securepin client upgrade --algorithm \(offered.rawValue)')" : nil
        return .success((stored, note))
    }

    struct ChoiceError: Error {
        let message: String
        /// 2 (usage) for a conflict in what was asked, 1 (refused) for an upgrade already done.
        let exitCode: Int32
        init(_ message: String, exitCode: Int32 = ExitCode.usage) {
            self.message = message
            self.exitCode = exitCode
        }
    }

    static func run(_ arguments: [String]) async -> Int32 {
        guard let sub = arguments.first else { CLI.fail("client: missing command", usage: Help.briefGroup("client")) }
        if ["-h", "--help", "help"].contains(sub) {
            print(Help.group("client"))
            return ExitCode.ok
        }
        guard (Help.subcommands["client"] ?? []).contains(where: { $0.name == sub }) else {
            CLI.unknownSubcommand("client", sub)
        }
        let command = "client \(sub)"
        var args = Arguments(Array(arguments.dropFirst()), command: command, usage: Help.of(command))
        if sub == "migrate-store" { return migrateStore(&args) }
        let store = parseStore(&args)
        let keychain = parseKeychain(&args)
        let url = args.value("--url")
        let config = args.value("--config")
        let state = args.value("--state")
        let instance = args.value("--instance") ?? "securepin-client"
        let json = args.flag("--json")
        let algorithmOption = args.value("--algorithm")
        let tls = TLSOptions.parse(&args)
        var input: PinInput?
        var format = PinFormat(.fourToEightDigits)
        var code: String?
        var name: String?
        var factors = FactorSet.possessionKnowledge
        if !["status", "biometry-remove"].contains(sub) {
            format = parseComplexity(&args, default: .fourToEightDigits)
            input = VaultCommand.pinInput(&args, option: "--pin-fd", prompt: "PIN")
        }
        var newInput: PinInput?
        if sub == "change-pin" {
            newInput = VaultCommand.pinInput(&args, option: "--new-pin-fd", prompt: "new PIN")
        }
        let local = sub == "remove" && args.flag("--local")
        // A new PIN is checked as vault init checks one: a warning, or with --reject-weak a refusal.
        let rejectWeak = ["activate", "change-pin"].contains(sub) && args.flag("--reject-weak")
        if sub == "activate" {
            code = args.value("--code")
            name = args.value("--name")
        }
        if sub == "validate", let text = args.value("--factors") {
            guard let parsed = try? FactorSet(parsing: text), parsed != .possessionKnowledgeBiometry else {
                args.fail("--factors must be possession, possession_knowledge or possession_biometry, not '\(text)'")
            }
            factors = parsed
        }
        args.finish()
        guard let url, !url.isEmpty else { args.usageError("--url BASE is required") }
        if let parsed = URL(string: url), parsed.scheme?.lowercased() == "http", let host = parsed.host,
            !HTTPClient.isLoopback(host), !tls.allowInsecureHTTP
        {
            args.fail(
                "--url \(url) is plain http to \(host), which is not loopback: use https, or "
                    + "--allow-insecure-http for a network you control")
        }
        guard let config, !config.isEmpty else { args.usageError("--config STRING is required") }
        var option: ProtocolAlgorithm?
        if let algorithmOption {
            guard let parsed = ProtocolAlgorithm(rawValue: algorithmOption) else {
                args.usageError("--algorithm must be LEGACY_P256, EC_P384, EC_P384_ML_L3 or EC_P384_ML_L5")
            }
            option = parsed
        }
        if sub == "upgrade", let option, !option.isV4 {
            args.usageError("client upgrade needs a V4 --algorithm (EC_P384, EC_P384_ML_L3 or EC_P384_ML_L5)")
        }
        guard let state, !state.isEmpty else { args.usageError("--state DIR is required") }
        if sub == "activate", code == nil { args.usageError("--code CODE is required") }
        let needsPIN =
            !["status", "biometry-remove"].contains(sub) && !(sub == "validate" && factors != .possessionKnowledge)
            && !local
        if needsPIN { input?.checkAvailable(command: command) }
        newInput?.checkAvailable(command: command)

        let service: ActivationService
        let place: String
        let algorithm: ProtocolAlgorithm
        do throws(ActivationError) {
            let choice = try ActivationStore.open(
                store, instanceId: instance, directory: state, keychain: keychain)
            // The stored activation's suite, read with a provisional configuration (key 0x01,
            // which every configuration string carries, is all it needs).
            let provisional = try ActivationConfiguration(
                instanceId: instance, baseEndpointURL: url, configuration: config,
                algorithm: ProtocolAlgorithm.legacyP256.rawValue)
            let stored = try ActivationService.storedAlgorithm(configuration: provisional, storage: choice.storage)
            switch chooseAlgorithm(option: option, stored: stored, configuration: config, subcommand: sub) {
            case .success(let chosen):
                algorithm = chosen.algorithm
                if let note = chosen.note { CLI.printError("securepin: \(command): note: \(note)") }
            case .failure(let failure):
                CLI.printError("securepin: \(command): \(failure.message)")
                return failure.exitCode
            }
            if sub == "upgrade", !algorithm.isV4 {
                args.usageError("client upgrade needs a V4 --algorithm (EC_P384, EC_P384_ML_L3 or EC_P384_ML_L5)")
            }
            if sub == "confirm", !algorithm.isV4 {
                args.usageError("client confirm needs a V4 --algorithm (protocol V3.3 has no activation/confirm)")
            }
            var settings = tls.client
            settings.userAgent = HTTPClient.userAgent(application: "securepin", version: Help.version)
            let configuration = try ActivationConfiguration(
                instanceId: instance, baseEndpointURL: url, configuration: config, algorithm: algorithm.rawValue,
                biometryKeyAccount: keychain.biometryKey(instanceId: instance),
                // The keyring's biometry honours only this configuration (no enrolled set, no
                // passcode fallback, no single-use context); files have no biometry at all.
                biometricConfiguration: choice.kind == .keyring
                    ? KeyringBiometricAuthenticator.supportedConfiguration : BiometricConfiguration(),
                clientConfiguration: settings)
            place =
                (choice.kind == .files ? state : "the keyring") + " (store: \(choice.kind.rawValue), \(choice.reason))"
            if choice.kind == .files, sub.hasPrefix("biometry-") || factors.factors.contains(.biometry) {
                // No key file pretends to be a biometry factor: the key needs the keyring's gate.
                CLI.printError(
                    "securepin: \(command): the biometry factor needs the keyring (--store keyring): its key "
                        + "is released by the unlocked login keyring, and a key file in \(state) would have no gate; "
                        + "this activation is in files (store: files, \(choice.reason))")
                return ExitCode.usage
            }
            // The keyring's "biometry": no sensor, the unlocked login keyring is the gate.
            let authenticator =
                choice.kind == .keyring
                ? try KeyringBiometricAuthenticator(keychain: keychain, instanceId: instance) : nil
            let transport = try HTTPActivationTransport(configuration: configuration)
            service = try ActivationService(
                configuration: configuration, storage: choice.storage, transport: transport,
                authenticator: authenticator)
        } catch {
            if case .storageLocked = error {
                CLI.printError("securepin: \(command): \(describe(error))")
                return ExitCode.locked
            }
            args.fail(describe(error))
        }
        let out = Output(json: json)
        do throws(ActivationError) {
            // An upgrade a crash interrupted is settled before anything else is signed.
            if sub != "upgrade", await service.hasPendingUpgrade() {
                _ = try await service.resolvePendingUpgrade()
            }
            switch sub {
            case "activate":
                if await service.hasValidActivation() {
                    // Say what to do, not only that one exists: a REMOVED one is forgotten locally.
                    let existing = try? await service.fetchActivationStatus()
                    if existing?.state == .removed {
                        CLI.printError(
                            "securepin: \(command): the activation in \(place) was REMOVED on the server: forget it "
                                + "here first ('securepin client remove --local'), then activate again")
                    } else {
                        let state = existing.map { " (\(stateName($0.state)))" } ?? ""
                        CLI.printError(
                            "securepin: \(command): an activation already exists in \(place)\(state): remove it "
                                + "first ('securepin client remove', or 'client remove --local' if the server no "
                                + "longer knows it)")
                    }
                    return ExitCode.refused
                }
                let pin = readPIN(input, format: format, command: command, needed: true)!
                defer { pin.destroy() }
                PinInput.checkStrength(pin, format: format, reject: rejectWeak, command: command)
                let result = try await service.createActivation(
                    activationCode: code ?? "", name: name ?? "securepin client", password: pin)
                let status = try? await service.fetchActivationStatus()
                out.emit([
                    ("activationId", .text(result.activationId)), ("fingerprint", .text(result.activationFingerprint)),
                    ("state", .text(status.map { stateName($0.state) } ?? "PENDING_COMMIT")),
                ])
                return ExitCode.ok
            case "status":
                guard await service.hasValidActivation() else { args.fail("no activation in \(place)") }
                let status = try await service.fetchActivationStatus()
                var fields: [(String, Output.Value)] = [
                    ("state", .text(stateName(status.state))), ("failedAttempts", .number(status.failCount)),
                    ("maxFailedAttempts", .number(status.maxFailCount)),
                    ("remainingAttempts", .number(status.remainingAttempts)),
                ]
                if let end = status.blockExpirationTime {
                    fields.append(("blockExpirationTime", .number(Int(end.timeIntervalSince1970))))
                }
                if let custom = status.customObject { fields.append(("customObject", .json(.object(custom)))) }
                out.emit(fields)
                if status.state == .removed {
                    CLI.printError(
                        "securepin: \(command): the server has REMOVED this activation: it signs nothing any more; "
                            + "forget it here with 'securepin client remove --local', then activate again")
                    return ExitCode.refused
                }
                return status.state == .blocked ? ExitCode.locked : ExitCode.ok
            case "remove" where local:
                guard await service.hasValidActivation() else { args.fail("no activation in \(place)") }
                let id = await service.activationIdentifier() ?? ""
                try await service.removeActivationLocal()
                out.emit([("activationId", .text(id)), ("removedLocally", .bool(true))])
                return ExitCode.ok
            default:
                break
            }
            guard await service.hasValidActivation() else { args.fail("no activation in \(place)") }
            let pin = readPIN(needsPIN ? input : nil, format: format, command: command, needed: needsPIN)
            defer { pin?.destroy() }
            let authentication: ActivationAuthentication =
                factors == .possessionBiometry
                ? .possessionWithBiometry(prompt: "sign with the keyring's biometry key")
                : pin.map { .possessionWithPassword($0) } ?? .possession()
            switch sub {
            case "confirm":
                guard let current = pin else { args.fail("confirm needs the PIN") }
                try await service.confirmActivation(password: current)
                out.emit([
                    ("activationId", .text(await service.activationIdentifier() ?? "")), ("confirmed", .bool(true)),
                    ("biometry", .bool(await service.hasBiometryFactor())),
                ])
            case "validate":
                try await service.validateSignature(authentication: authentication)
                out.emit([("accepted", .bool(true)), ("factors", .text(authentication.factorSet.rawValue))])
            case "token-create":
                let token = try await service.createToken(authentication: authentication)
                defer { token.destroy() }
                try await service.storeToken(token)
                out.emit([("tokenId", .text(token.tokenId)), ("factors", .text(token.factorSet.rawValue))])
            case "change-pin":
                guard let current = pin, let newInput else { args.fail("change-pin needs the current and the new PIN") }
                // The new PIN is read and checked before the current one goes to the server: a
                // refused new PIN sends nothing and counts nothing.
                let newPIN = newInput.read(format: format, command: command)
                defer { newPIN.destroy() }
                PinInput.checkStrength(newPIN, format: format, reject: rejectWeak, command: command)
                let mutable = try coreCopy(current)
                let data = try await service.beginPasswordChange(currentPassword: mutable)
                try await service.finishPasswordChange(newPassword: newPIN, data: data)
                out.emit([("changed", .bool(true))])
            case "biometry-add":
                guard let current = pin else { args.fail("biometry-add needs the PIN") }
                try await service.addBiometryFactor(password: current)
                out.emit(biometryFields(await service.biometricStatus(), keychain: keychain, instance: instance))
            case "biometry-remove":
                try await service.removeBiometryFactor()
                out.emit(biometryFields(await service.biometricStatus(), keychain: keychain, instance: instance))
            case "upgrade":
                guard let current = pin else { args.fail("upgrade needs the PIN") }
                try await service.upgrade(password: current)
                out.emit([
                    ("activationId", .text(await service.activationIdentifier() ?? "")), ("protocol", .text("4.0")),
                    ("algorithm", .text(algorithm.rawValue)),
                    ("fingerprint", .text(try await service.activationFingerprint())),
                ])
            case "vault-unlock":
                let key = try await service.unlockVault(authentication: authentication)
                let count = key.count
                key.destroy()
                out.emit([
                    ("unlocked", .bool(true)), ("vaultKeyBytes", .number(count)),
                    (
                        "note",
                        .text(
                            algorithm.isV4
                                ? "the vault key matched this activation's check value and was wiped; it is never printed"
                                : "the vault key opened this device's sealed key and was wiped; it is never printed")
                    ),
                ])
            default:
                let id = await service.activationIdentifier() ?? ""
                try await service.removeActivation(authentication: authentication)
                out.emit([("activationId", .text(id)), ("state", .text("REMOVED"))])
            }
            return ExitCode.ok
        } catch {
            return await report(error, service: service, command: command, json: json)
        }
    }

    /// A mutable copy of a PIN (the service's change API takes one); PINs here are ASCII.
    static func coreCopy(_ pin: Password) throws(ActivationError) -> sending MutablePassword {
        do throws(SecureCoreError) {
            let copy = try MutablePassword()
            try pin.withUnsafeUTF8Bytes { (bytes) throws(SecureCoreError) in
                for byte in bytes { try copy.addCharacter(UInt32(byte)) }
            }
            return copy
        } catch {
            throw .core(error)
        }
    }

    /// `--store auto|keyring|files` (default auto).
    static func parseStore(_ args: inout Arguments) -> ActivationStoreRequest {
        guard let text = args.value("--store") else { return .auto }
        guard let request = ActivationStoreRequest(rawValue: text) else {
            args.fail("--store must be auto, keyring or files, not '\(text)'")
        }
        return request
    }

    /// The keychain names: the seed's defaults, each replaced by its option when given.
    static func parseKeychain(_ args: inout Arguments) -> KeychainConfiguration {
        let group = args.value("--access-group")
        let status = args.value("--keychain-status") ?? KeychainConfiguration.defaultStatus
        let possession = args.value("--keychain-possession") ?? KeychainConfiguration.defaultPossession
        let biometry = args.value("--keychain-biometry") ?? KeychainConfiguration.defaultBiometry
        let tokens = args.value("--keychain-token-store") ?? KeychainConfiguration.defaultTokenStore
        let possessionKey = args.value("--possession-key") ?? KeychainConfiguration.defaultPossessionKey
        let biometryKey = args.value("--biometry-key")
        do throws(ActivationError) {
            return try KeychainConfiguration(
                status: status, possession: possession, biometry: biometry, tokenStore: tokens,
                possessionKey: possessionKey, biometryKey: biometryKey, accessGroup: group)
        } catch {
            args.fail(describe(error))
        }
    }

    /// What biometry-add and biometry-remove print: the truth about the factor's gate.
    static func biometryFields(_ status: ActivationBiometricStatus, keychain: KeychainConfiguration, instance: String)
        -> [(String, Output.Value)]
    {
        [
            ("biometryConfigured", .bool(status.isBiometricFactorConfigured)),
            ("biometryType", .text(status.biometryType.rawValue)),
            ("systemStatus", .text(status.systemStatus.rawValue)),
            ("service", .text(keychain.keychainInstanceName_Biometry)),
            ("key", .text(keychain.biometryKey(instanceId: instance))),
            (
                "note",
                .text(
                    "no sensor: the key is in the keyring and the unlocked login keyring is the gate, "
                        + "not a finger or a face")
            ),
        ]
    }

    /// `securepin client migrate-store --state DIR [--instance ID] [--json]`: the activation in
    /// the state directory's files moves to the Secret Service, copied and read back before
    /// any file is removed.
    static func migrateStore(_ args: inout Arguments) -> Int32 {
        let state = args.value("--state")
        let instance = args.value("--instance") ?? "securepin-client"
        let keychain = parseKeychain(&args)
        let json = args.flag("--json")
        args.finish()
        guard let state, !state.isEmpty else { args.usageError("--state DIR is required") }
        do throws(ActivationError) { try ActivationConfiguration.validate(instanceId: instance) } catch {
            args.fail(describe(error))
        }
        do throws(ActivationError) {
            let collection = try ActivationStore.secretServiceCollection()
            let migration = try ActivationStore.migrateToKeyring(
                instanceId: instance, directory: state, keychain: keychain)
            Output(json: json).emit([
                ("instance", .text(instance)), ("store", .text("keyring")), ("collection", .text(collection)),
                ("moved", .number(migration.moved.count)),
                (
                    "note",
                    .text(
                        migration.moved.isEmpty
                            ? "already in the keyring; nothing was left in the files"
                            : "copied, read back and checked, then removed from \(state)")
                ),
            ])
            return ExitCode.ok
        } catch {
            let problem =
                switch error {
                case .missingActivation: "no activation of \(instance) in \(state) or in the keyring"
                default: describe(error)
                }
            CLI.printError("securepin: client migrate-store: \(problem)")
            if case .storageLocked = error { return ExitCode.locked }
            if case .missingActivation = error { return ExitCode.usage }
            return ExitCode.refused
        }
    }

    /// Reads the PIN when the step needs one.
    static func readPIN(_ input: PinInput?, format: PinFormat, command: String, needed: Bool) -> Password? {
        guard needed, let input else { return nil }
        return input.read(format: format, command: command)
    }

    /// One line on standard error, the exit code by the rule of the CLI; after a refused
    /// code, the server's count (and 3 when that refusal blocked the activation).
    static func report(_ error: ActivationError, service: ActivationService, command: String, json: Bool) async
        -> Int32
    {
        switch error {
        case .authentication, .credentialsRejected:
            let status = try? await service.fetchActivationStatus()
            if let status, status.state == .blocked {
                CLI.printError("securepin: \(command): refused; the activation is now BLOCKED")
                if json { Output(json: true).emit([("accepted", .bool(false)), ("state", .text("BLOCKED"))]) }
                return ExitCode.locked
            }
            let remaining = status.map { "; \($0.remainingAttempts) of \($0.maxFailCount) attempts remaining" } ?? ""
            CLI.printError("securepin: \(command): refused by the server (wrong PIN or code)\(remaining)")
            if json {
                var fields: [(String, Output.Value)] = [("accepted", .bool(false))]
                if let status { fields.append(("remainingAttempts", .number(status.remainingAttempts))) }
                Output(json: true).emit(fields)
            }
            return ExitCode.refused
        case .storageLocked:
            CLI.printError("securepin: \(command): \(describe(error)); nothing was changed")
            return ExitCode.locked
        case .biometryNotAvailable(.lockout):
            CLI.printError("securepin: \(command): \(describe(error)); nothing was changed")
            return ExitCode.locked
        case .protocolError(.invalidActivationCode), .protocolError(.emptyPIN), .wrongParameter, .missingActivation,
            .biometryNotConfigured, .biometryNotAvailable:
            CLI.printError("securepin: \(command): \(describe(error))")
            return ExitCode.usage
        case .server(_, let code) where code == ActivationAPI.ErrorCode.activation:
            let status = try? await service.fetchActivationStatus()
            if status?.state == .blocked {
                CLI.printError("securepin: \(command): the activation is BLOCKED")
                return ExitCode.locked
            }
            CLI.printError("securepin: \(command): \(describe(error))")
            return ExitCode.refused
        default:
            CLI.printError("securepin: \(command): \(describe(error)); the local state is unchanged")
            return ExitCode.refused
        }
    }

    static func describe(_ error: ActivationError) -> String {
        switch error {
        case .network(let reason): "the server cannot be reached: \(reason)"
        case .tls(let reason):
            "the server is not trusted: \(reason); nothing was sent that counts (--ca-file, --pin-sha256)"
        case .server(let status, let code): "the server answered HTTP \(status) \(code)"
        case .missingActivation: "no activation in the state directory"
        case .algorithmMismatch(let activation, let configuration):
            "the activation uses \(activation.rawValue), the configuration asks for \(configuration.rawValue)"
                + (configuration.isStronger(than: activation) ? ": upgrade available" : ": no downgrade exists")
        case .protocolError(.invalidActivationCode(let why)): "the activation code is not valid: \(why)"
        case .protocolError(.invalidConfiguration(let why)): "the configuration string is not valid: \(why)"
        case .invalidActivationState(let reason): reason
        case .wrongParameter(let reason): reason
        case .invalidResponse(let reason): "the server's answer is not valid: \(reason)"
        case .storageLocked, .storageUnavailable: ActivationStore.describe(error)
        case .biometryNotConfigured: "the biometry factor is not added on this device (client biometry-add)"
        case .biometryNotAvailable(.lockout):
            "the keyring is locked: unlock it (log in, or unlock the keyring) and try again"
        case .biometryNotAvailable(let status): "the biometry factor is not available: \(status.phrase)"
        // The library's own sentences, case by case: a new case does not compile until it is placed.
        case .protocolError, .core, .invalidActivationData, .upgradeSDK, .weakPassword, .storage, .authentication,
            .credentialsRejected, .credentialsExpired, .biometryInvalidated, .biometryFailed,
            .biometryOptionNotSupported,
            .cancelled:
            error.description
        }
    }

    static func stateName(_ state: ClientActivationState) -> String {
        switch state {
        case .created: "CREATED"
        case .pendingCommit: "PENDING_COMMIT"
        case .active: "ACTIVE"
        case .blocked: "BLOCKED"
        case .removed: "REMOVED"
        case .deadlock: "DEADLOCK"
        }
    }

    /// `key: value` lines, or one JSON object with `--json`.
    struct Output {
        enum Value {
            case text(String)
            case number(Int)
            case bool(Bool)
            /// A JSON value as the server sent it (`customObject`): nested in `--json`, compact
            /// JSON text otherwise.
            case json(JSONValue)
        }
        let json: Bool

        /// A JSON value as `JSONSerialization` takes it; whole numbers stay whole.
        static func foundationObject(_ value: JSONValue) -> Any {
            switch value {
            case .null: NSNull()
            case .bool(let flag): flag
            case .number(let number): value.int64Value.map { $0 as Any } ?? number
            case .string(let text): text
            case .array(let values): values.map(foundationObject)
            case .object(let members): members.mapValues(foundationObject)
            }
        }

        static func compactText(_ value: JSONValue) -> String {
            let data =
                (try? JSONSerialization.data(
                    withJSONObject: foundationObject(value),
                    options: [.sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])) ?? Data()
            return String(decoding: data, as: UTF8.self)
        }

        func emit(_ fields: [(String, Value)]) {
            if json {
                var object: [String: Any] = [:]
                for (key, value) in fields {
                    switch value {
                    case .text(let text): object[key] = text
                    case .number(let number): object[key] = number
                    case .bool(let flag): object[key] = flag
                    case .json(let value): object[key] = Self.foundationObject(value)
                    }
                }
                let data =
                    (try? JSONSerialization.data(
                        withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
                    ?? Data()
                print(String(decoding: data, as: UTF8.self))
            } else {
                for (key, value) in fields {
                    switch value {
                    case .text(let text): print("\(key): \(text)")
                    case .number(let number): print("\(key): \(number)")
                    case .bool(let flag): print("\(key): \(flag)")
                    case .json(let value): print("\(key): \(Self.compactText(value))")
                    }
                }
            }
        }
    }
}
