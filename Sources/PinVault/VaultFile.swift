import SecureCore

/// The vault file, version 2 (software), 3 (bound to a TPM), 4 (bound to a server), 5 (TPM under
/// a PCR policy) or 6 (a soft policy with its own schedule), as `docs/vault-format.md` specifies it. Every
/// constant of the format lives here; ``decode(_:floor:limits:)`` checks each
/// MUST of the specification in its order and returns a typed error.
struct VaultFile: Equatable {
    static let magic: [UInt8] = Array("SPCVAULT".utf8)
    /// The newest version this library reads.
    static let version: UInt16 = 6
    /// What a vault without a binding is written as: readers of version 2 keep reading it.
    static let softwareVersion: UInt16 = 2
    /// The first version that records a binding (a TPM's sealed object) in the bound header.
    static let bindingVersion: UInt16 = 3
    /// The first version whose binding may be a server's OPRF (binding type 2).
    static let serverBindingVersion: UInt16 = 4
    /// The first version whose binding may be a TPM object under a PCR policy (binding type 3).
    static let pcrBindingVersion: UInt16 = 5
    /// The first version whose policy may carry its own lockout schedule (policy kind 4).
    static let scheduleVersion: UInt16 = 6
    /// Policy kind of a soft policy with a recorded schedule (version 6).
    static let policySoftSchedule: UInt8 = 4
    /// Versions before this one are recognised and refused (``VaultError/unsupportedFormat(version:)``).
    static let oldestReadableVersion: UInt16 = 2
    /// The first version that records the PIN format in the bound header.
    static let pinFormatVersion: UInt16 = 2
    static let fixedHeaderSize = 38  // magic .. slot count
    static let boundHeaderSize = 37  // the part every slot and the payload authenticate
    static let slotSize = 136
    static let maxSlots = 8
    /// Most Argon2id lanes (and threads) a vault may ask for: a reader refuses more before any work.
    static let maxParallelism: UInt32 = 64
    static let saltSize = 16
    static let fingerprintSize = 32
    static let nonceSize = 24
    static let wrappedKeySize = 48  // 32-byte data key + 16-byte tag
    static let checksumSize = 32
    static let macSize = 32  // HMAC-SHA256 under the key file's file-MAC key (version 2)
    static let maxSecretSize = 64 * 1024
    static let payloadLabel: [UInt8] = Array("SPC payload v1".utf8)
    static let slotLabel: [UInt8] = Array("SPC slot v1".utf8)

    enum SlotType: UInt8 {
        case pin = 1
        case biometric = 2
    }

    static let kdfNone: UInt8 = 0
    static let kdfArgon2id: UInt8 = 1
    static let aeadXChaCha20Poly1305: UInt8 = 1
    static let slotFlagPepper: UInt8 = 0x01
    /// The PIN slot's key also needs the value sealed in the TPM the header names (version 3).
    static let slotFlagTPM: UInt8 = 0x02
    /// The PIN slot's key also needs the OPRF output of the server the header names (version 4).
    static let slotFlagServer: UInt8 = 0x04
    /// Binding type of a server binding (version 4).
    static let bindingServer: UInt8 = 2
    /// Size of the vault's identifier at its server.
    static let serverVaultIdSize = 16
    /// Largest server URL or configuration string a version 4 header holds.
    static let maxServerTextSize = 8192
    static let bindingSoftware: UInt8 = 0
    static let bindingTPM: UInt8 = 1
    /// Binding type of a TPM binding whose sealed object has a PCR policy (version 5): the TPM
    /// fields, then the PCR mask.
    static let bindingTPMPCR: UInt8 = 3
    /// Largest TPM public area, private blob or name a version 3 header holds.
    static let maxTPMBlobSize = 1024

    struct Slot: Equatable {
        var type: SlotType
        var kdf: UInt8
        var parameters: Argon2id.Parameters
        var flags: UInt8
        var salt: [UInt8]
        var biometricFingerprint: [UInt8]
        var nonce: [UInt8]
        var wrappedKey: [UInt8]

        /// The descriptor bytes (everything before the nonce).
        var descriptor: [UInt8] {
            var w = ByteWriter()
            w.u8(type.rawValue)
            w.u8(kdf)
            w.u32(parameters.memoryKiB)
            w.u32(parameters.iterations)
            w.u32(parameters.parallelism)
            w.u8(flags)
            w.bytes(salt)
            w.bytes(biometricFingerprint)
            w.u8(VaultFile.aeadXChaCha20Poly1305)
            return w.out
        }
    }

    var vaultID: [UInt8]
    var policy: ThrottlePolicy
    /// Which half of the key file (0 or 1) every slot key and the MAC are bound to (version 2).
    var keyHalf: UInt8 = 0
    var slots: [Slot]
    var payloadNonce: [UInt8]
    var payloadCiphertext: [UInt8]
    /// The version this file is written in: ``softwareVersion`` without a binding,
    /// ``bindingVersion`` with one.
    var version: UInt16 = VaultFile.softwareVersion
    /// The PIN format every unlock and PIN change applies.
    var pinFormat: VaultPinFormat = .unrecorded
    /// The TPM binding (version 3): the DA policy set at creation and the sealed object.
    var tpm: TPMBindingRecord? = nil
    /// The server binding (version 4): the server's address and the vault's identifier there.
    var server: ServerBindingRecord? = nil

    /// Magic, version, flags, vault id, policy and (version 2) the PIN format: what every AEAD binds.
    var boundHeader: [UInt8] {
        var w = ByteWriter()
        w.bytes(VaultFile.magic)
        w.u16(version)
        w.u16(0)
        w.bytes(vaultID)
        w.u8(policy.kind)
        w.u16(UInt16(policy.maxFailures))
        w.u8(keyHalf)
        if version >= VaultFile.pinFormatVersion {
            w.u8(pinFormat.characters.rawValue)
            w.u16(UInt16(pinFormat.minimumLength))
            w.u16(UInt16(pinFormat.maximumLength))
        }
        if version >= VaultFile.bindingVersion {
            if let tpm {
                w.u8(tpm.object.pcrs.isEmpty ? VaultFile.bindingTPM : VaultFile.bindingTPMPCR)
                w.u32(tpm.policy.maxTries)
                w.u32(tpm.policy.recoverySeconds)
                w.u32(tpm.policy.lockoutRecoverySeconds)
                for blob in [tpm.object.parentName, tpm.object.publicArea, tpm.object.privateBlob] {
                    w.u16(UInt16(blob.count))
                    w.bytes(blob)
                }
                if !tpm.object.pcrs.isEmpty { w.u32(tpm.object.pcrs.mask) }
            } else if let server {
                w.u8(VaultFile.bindingServer)
                w.bytes(server.vaultId)
                for text in [server.address.url, server.address.configuration] {
                    w.u16(UInt16(text.utf8.count))
                    w.bytes(Array(text.utf8))
                }
            } else {
                w.u8(VaultFile.bindingSoftware)
            }
        }
        if version >= VaultFile.scheduleVersion, let schedule = policy.schedule {
            w.u16(UInt16(schedule.freeFailures))
            w.u8(UInt8(schedule.delays.count))
            for delay in schedule.delays { w.u32(delay) }
        }
        return w.out
    }

    /// Associated data of a slot's wrapped key: label, bound header, descriptor.
    func slotAssociatedData(_ slot: Slot) -> [UInt8] { VaultFile.slotLabel + boundHeader + slot.descriptor }

    /// Associated data of the payload: label and bound header.
    var payloadAssociatedData: [UInt8] { VaultFile.payloadLabel + boundHeader }

    /// The file: body, its MAC under `macKey` (from the key file), checksum.
    func encode(macKey: SecureBytes) throws(SecureCoreError) -> [UInt8] {
        let body = self.body
        return try encode(mac: HMACSHA256.authenticate(body, key: macKey))
    }

    /// Whether `mac` authenticates this file's body under `macKey` (constant time).
    func verifyMAC(_ mac: [UInt8], macKey: SecureBytes) throws(SecureCoreError) -> Bool {
        ConstantTime.isEqual(try HMACSHA256.authenticate(body, key: macKey), mac)
    }

    /// The file with a given MAC (the fuzz target's round trip).
    func encode(mac: [UInt8]) throws(SecureCoreError) -> [UInt8] {
        let out = body + mac
        return out + (try Digest.blake2b256(out))
    }

    /// Every byte the MAC covers: bound header … payload.
    var body: [UInt8] {
        var w = ByteWriter()
        w.bytes(boundHeader)
        w.u8(UInt8(slots.count))
        for slot in slots {
            w.bytes(slot.descriptor)
            w.bytes(slot.nonce)
            w.bytes(slot.wrappedKey)
        }
        w.u8(VaultFile.aeadXChaCha20Poly1305)
        w.bytes(payloadNonce)
        w.u32(UInt32(payloadCiphertext.count))
        w.bytes(payloadCiphertext)
        return w.out
    }

    /// Parses and checks a vault file without running any key derivation.
    /// The MAC is returned, not checked: that needs the key file (``verifyMAC(_:macKey:)``).
    static func decode(_ bytes: [UInt8], floor: Argon2id.Parameters, limits: Argon2id.Limits) throws(VaultError)
        -> (file: VaultFile, mac: [UInt8])
    {
        var r = ByteReader(bytes)
        // 1. Magic, then version: a newer file is recognised, not called damaged.
        guard bytes.count >= magic.count, Array(bytes.prefix(magic.count)) == magic else { throw .notAVault }
        r.skip(magic.count)
        guard let version = r.u16() else { throw .damaged(reason: "truncated before the version") }
        guard version <= VaultFile.version else { throw .newerFormat(version: Int(version)) }
        guard version != 0 else { throw .damaged(reason: "version 0 is not valid") }
        guard version >= oldestReadableVersion else { throw .unsupportedFormat(version: Int(version)) }
        // 2. The checksum covers every byte before it: flipped or edited bytes stop here.
        guard bytes.count >= fixedHeaderSize + macSize + checksumSize else {
            throw .damaged(reason: "truncated header")
        }
        let body = bytes.prefix(bytes.count - checksumSize)
        let digest: [UInt8]
        do { digest = try Digest.blake2b256(body) } catch { throw .secureCore(error) }
        guard digest == Array(bytes.suffix(checksumSize)) else {
            throw .damaged(reason: "checksum mismatch (truncated, damaged or edited)")
        }
        // 3. Fixed header.
        guard r.u16() == 0 else { throw .damaged(reason: "unknown flags") }
        let vaultID = r.bytes(16)!
        let policyKind = r.u8()!
        let maxFailures = Int(r.u16()!)
        guard (1...3).contains(policyKind) || (policyKind == policySoftSchedule && version >= scheduleVersion),
            maxFailures >= 1
        else { throw .damaged(reason: "unknown throttle policy") }
        guard let keyHalf = r.u8(), keyHalf <= 1 else { throw .damaged(reason: "key-file half is not 0 or 1") }
        var pinFormat = VaultPinFormat.unrecorded
        if version >= pinFormatVersion {
            guard let kind = r.u8(), let minimum = r.u16(), let maximum = r.u16() else {
                throw .damaged(reason: "truncated header")
            }
            guard let characters = VaultPinFormat.Characters(rawValue: kind),
                let format = VaultPinFormat(
                    characters: characters, minimumLength: Int(minimum), maximumLength: Int(maximum))
            else { throw .damaged(reason: "unknown PIN format") }
            pinFormat = format
        }
        var tpm: TPMBindingRecord? = nil
        var server: ServerBindingRecord? = nil
        if version >= bindingVersion {
            guard let binding = r.u8() else { throw .damaged(reason: "truncated header") }
            switch binding {
            case bindingSoftware: break
            case bindingTPM, bindingTPMPCR:
                guard binding == bindingTPM || version >= pcrBindingVersion else {
                    throw .damaged(reason: "unknown binding")
                }
                guard let maxTries = r.u32(), let recovery = r.u32(), let lockoutRecovery = r.u32() else {
                    throw .damaged(reason: "truncated TPM binding")
                }
                var blobs: [[UInt8]] = []
                for _ in 0..<3 {
                    guard let length = r.u16(), (1...maxTPMBlobSize).contains(Int(length)),
                        let blob = r.bytes(Int(length))
                    else { throw .damaged(reason: "truncated or oversized TPM binding") }
                    blobs.append(blob)
                }
                var pcrs = TPMPCRSelection.none
                if binding == bindingTPMPCR {
                    guard let mask = r.u32() else { throw .damaged(reason: "truncated TPM binding") }
                    guard let selection = TPMPCRSelection(mask: mask), !selection.isEmpty else {
                        throw .damaged(reason: "PCR selection out of range")
                    }
                    pcrs = selection
                }
                tpm = TPMBindingRecord(
                    policy: TPMLockoutPolicy(
                        maxTries: maxTries, recoverySeconds: recovery, lockoutRecoverySeconds: lockoutRecovery),
                    object: TPMSealedObject(
                        publicArea: blobs[1], privateBlob: blobs[2], parentName: blobs[0], pcrs: pcrs))
            case bindingServer where version >= serverBindingVersion:
                guard let vaultId = r.bytes(serverVaultIdSize) else {
                    throw .damaged(reason: "truncated server binding")
                }
                var texts: [String] = []
                for _ in 0..<2 {
                    guard let length = r.u16(), (1...maxServerTextSize).contains(Int(length)),
                        let raw = r.bytes(Int(length)), let text = String(validating: raw, as: UTF8.self)
                    else { throw .damaged(reason: "truncated or oversized server binding") }
                    texts.append(text)
                }
                server = ServerBindingRecord(
                    vaultId: vaultId, address: VaultServerAddress(url: texts[0], configuration: texts[1]))
            default: throw .damaged(reason: "unknown binding")
            }
        }
        var schedule: LockoutSchedule? = nil
        if policyKind == policySoftSchedule {
            guard let free = r.u16(), let count = r.u8() else { throw .damaged(reason: "truncated lockout schedule") }
            guard (1...LockoutSchedule.maximumDelayCount).contains(Int(count)) else {
                throw .damaged(reason: "lockout schedule delay count out of range")
            }
            var delays: [UInt32] = []
            for _ in 0..<count {
                guard let delay = r.u32() else { throw .damaged(reason: "truncated lockout schedule") }
                delays.append(delay)
            }
            do { schedule = try LockoutSchedule(freeFailures: Int(free), delays: delays) } catch {
                throw .damaged(reason: "lockout schedule out of range")
            }
        }
        guard let policy = ThrottlePolicy(kind: policyKind, maxFailures: maxFailures, schedule: schedule) else {
            throw .damaged(reason: "throttle policy out of range")
        }
        guard let countByte = r.u8() else { throw .damaged(reason: "truncated header") }
        let count = Int(countByte)
        guard (1...maxSlots).contains(count) else { throw .damaged(reason: "slot count \(count) out of range") }
        // 4. Slots: every parameter within the floor and ceiling before any KDF runs.
        var slots: [Slot] = []
        for _ in 0..<count {
            guard let typeByte = r.u8(), let kdf = r.u8(), let m = r.u32(), let t = r.u32(), let p = r.u32(),
                let flags = r.u8(), let salt = r.bytes(saltSize), let fingerprint = r.bytes(fingerprintSize),
                let aead = r.u8(), let nonce = r.bytes(nonceSize), let wrapped = r.bytes(wrappedKeySize)
            else { throw .damaged(reason: "truncated slot") }
            guard let type = SlotType(rawValue: typeByte) else { throw .damaged(reason: "unknown slot type") }
            guard aead == aeadXChaCha20Poly1305 else { throw .damaged(reason: "unknown AEAD in slot") }
            guard flags & ~(slotFlagPepper | slotFlagTPM | slotFlagServer) == 0 else {
                throw .damaged(reason: "unknown slot flags")
            }
            let parameters = Argon2id.Parameters(memoryKiB: m, iterations: t, parallelism: p)
            switch type {
            case .pin:
                guard kdf == kdfArgon2id else { throw .damaged(reason: "PIN slot without Argon2id") }
                try checkBounds(parameters, floor: floor, limits: limits)
                // A TPM-bound vault's PIN slots all need the TPM; no other slot does.
                guard (flags & slotFlagTPM != 0) == (tpm != nil) else {
                    throw .damaged(reason: "PIN slot and TPM binding disagree")
                }
                guard (flags & slotFlagServer != 0) == (server != nil) else {
                    throw .damaged(reason: "PIN slot and server binding disagree")
                }
            case .biometric:
                guard kdf == kdfNone, m == 0, t == 0, p == 0, flags & (slotFlagTPM | slotFlagServer) == 0 else {
                    throw .damaged(reason: "biometric slot with a KDF")
                }
            }
            slots.append(
                Slot(
                    type: type, kdf: kdf, parameters: parameters, flags: flags, salt: salt,
                    biometricFingerprint: fingerprint, nonce: nonce, wrappedKey: wrapped))
        }
        guard slots.contains(where: { $0.type == .pin }) else { throw .damaged(reason: "no PIN slot") }
        // 5. Payload, then nothing but the checksum.
        guard r.u8() == aeadXChaCha20Poly1305 else { throw .damaged(reason: "unknown payload AEAD") }
        guard let nonce = r.bytes(nonceSize), let length = r.u32() else { throw .damaged(reason: "truncated payload") }
        guard length >= 17, length <= maxSecretSize + 16 else { throw .damaged(reason: "payload length out of range") }
        guard let ciphertext = r.bytes(Int(length)) else { throw .damaged(reason: "truncated payload") }
        guard let mac = r.bytes(macSize), r.remaining == checksumSize else {
            throw .damaged(reason: "trailing bytes after the payload")
        }
        let file = VaultFile(
            vaultID: vaultID, policy: policy, keyHalf: keyHalf, slots: slots, payloadNonce: nonce,
            payloadCiphertext: ciphertext, version: version, pinFormat: pinFormat, tpm: tpm, server: server)
        return (file, mac)
    }

    static func checkBounds(_ p: Argon2id.Parameters, floor: Argon2id.Parameters, limits: Argon2id.Limits)
        throws(VaultError)
    {
        // Each lane is a thread: a tampered p = 4096 would start thousands of them.
        guard p.parallelism <= maxParallelism else { throw .parametersAboveCeiling }
        do throws(SecureCoreError) {
            try Argon2id.validate(p, saltByteCount: saltSize, outputByteCount: 32, limits: limits)
        } catch .memoryAboveCeiling {
            throw .parametersAboveCeiling
        } catch .invalidIterations where p.iterations > limits.maxIterations {
            throw .parametersAboveCeiling
        } catch {
            throw .damaged(reason: "invalid Argon2id parameters")
        }
        guard p.memoryKiB >= floor.memoryKiB, p.iterations >= floor.iterations else { throw .parametersBelowFloor }
    }
}

/// Big-endian writer.
struct ByteWriter {
    var out: [UInt8] = []
    mutating func u8(_ v: UInt8) { out.append(v) }
    mutating func u16(_ v: UInt16) { out += [UInt8(v >> 8), UInt8(v & 0xFF)] }
    mutating func u32(_ v: UInt32) { out += (0..<4).map { UInt8((v >> (24 - 8 * UInt32($0))) & 0xFF) } }
    mutating func u64(_ v: UInt64) { out += (0..<8).map { UInt8((v >> (56 - 8 * UInt64($0))) & 0xFF) } }
    mutating func bytes(_ b: [UInt8]) { out += b }
}

/// Big-endian reader that returns nil instead of reading past the end.
struct ByteReader {
    private let data: [UInt8]
    private var offset = 0
    init(_ data: [UInt8]) { self.data = data }
    var remaining: Int { data.count - offset }
    mutating func skip(_ n: Int) { offset = min(data.count, offset + n) }
    mutating func bytes(_ n: Int) -> [UInt8]? {
        guard n >= 0, remaining >= n else { return nil }
        defer { offset += n }
        return Array(data[offset..<offset + n])
    }
    mutating func u8() -> UInt8? { bytes(1)?[0] }
    mutating func u16() -> UInt16? { bytes(2).map { UInt16($0[0]) << 8 | UInt16($0[1]) } }
    mutating func u32() -> UInt32? { bytes(4).map { $0.reduce(0) { $0 << 8 | UInt32($1) } } }
    mutating func u64() -> UInt64? { bytes(8).map { $0.reduce(0) { $0 << 8 | UInt64($1) } } }
}
