import Foundation
import PowerAuthProtocol
import SecureCore

/// The public half of a stored activation: identifiers, public keys, the
/// counter, the knowledge key wrapped under the PIN and the biometry key
/// sealed under the vault key. JSON with a format version. Nothing in it
/// unlocks a factor without the PIN, the possession key or the server.
struct LocalActivationRecord: Codable, Equatable {
    static let currentFormatVersion = 1
    /// How many earlier counters are kept to recognise a server that is behind.
    static let counterHistoryLength = 32

    var formatVersion: Int
    var instanceId: String
    var activationId: String
    var algorithm: String
    var devicePublicKey: String
    var serverPublicKey: String
    var counter: String
    var counterIndex: UInt64
    /// Earlier counters, most recent first.
    var counterHistory: [String]
    var knowledgeKey: WrappedKnowledgeKey
    var sealedBiometryKey: AEAD.SealedBox
    var biometryEnabled: Bool
    var enrolledSetFingerprint: String?
    /// `foldedHMAC(possession, label) ‖ foldedHMAC(transport, label)`: ties the key file to this record.
    var keyCheck: String

    /// The format version alone, read before the whole record.
    private struct VersionProbe: Decodable { var formatVersion: Int }

    /// Parses the stored bytes. Total: damaged data gives
    /// ``ActivationError/invalidActivationData(reason:)``, a newer format
    /// ``ActivationError/upgradeSDK(foundVersion:)``.
    static func decode(_ bytes: [UInt8], instanceId: String) throws(ActivationError) -> LocalActivationRecord {
        let data = Data(bytes)
        let probe: VersionProbe
        do {
            probe = try JSONDecoder().decode(VersionProbe.self, from: data)
        } catch {
            throw .invalidActivationData(reason: "the activation state is not readable")
        }
        guard probe.formatVersion <= currentFormatVersion else { throw .upgradeSDK(foundVersion: probe.formatVersion) }
        guard probe.formatVersion == currentFormatVersion else {
            throw .invalidActivationData(reason: "unknown activation state version \(probe.formatVersion)")
        }
        let record: LocalActivationRecord
        do {
            record = try JSONDecoder().decode(LocalActivationRecord.self, from: data)
        } catch {
            throw .invalidActivationData(reason: "the activation state is damaged")
        }
        try record.validate(instanceId: instanceId)
        return record
    }

    func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding plain strings, integers and arrays cannot fail.
        return Array((try? encoder.encode(self)) ?? Data())
    }

    func validate(instanceId expected: String) throws(ActivationError) {
        func bad(_ what: String) -> ActivationError {
            .invalidActivationData(reason: "the activation state has \(what)")
        }
        guard instanceId == expected else { throw bad("another instance id") }
        guard (try? ProtocolAlgorithm(name: algorithm)) == .legacyP256 else { throw bad("an unknown algorithm") }
        guard (try? AuthorizationHeader.validateActivationId(activationId)) != nil else { throw bad("a bad id") }
        guard let device = Base64.decode(devicePublicKey), let server = Base64.decode(serverPublicKey),
            (try? P256.validate(publicKey: device)) != nil, (try? P256.validate(publicKey: server)) != nil
        else { throw bad("a bad public key") }
        guard (try? HashCounter(base64: counter)) != nil,
            counterHistory.count <= Self.counterHistoryLength,
            counterHistory.allSatisfy({ (try? HashCounter(base64: $0)) != nil })
        else { throw bad("a bad counter") }
        guard (try? knowledgeKey.validate()) != nil else { throw bad("a bad wrapped knowledge key") }
        guard sealedBiometryKey.algorithm.isAvailable,
            sealedBiometryKey.nonce.count == sealedBiometryKey.algorithm.nonceByteCount,
            sealedBiometryKey.ciphertext.count == ProtocolConstants.keyByteCount + AEAD.tagByteCount
        else { throw bad("a bad sealed biometry key") }
        guard let check = Base64.decode(keyCheck), check.count == 2 * ProtocolConstants.keyByteCount else {
            throw bad("a bad key check")
        }
    }

    var currentCounter: HashCounter {
        get throws(ActivationError) {
            try protocolStep { () throws(ProtocolError) in try HashCounter(base64: counter) }
        }
    }

    /// Moves the counter one step, remembering the old value.
    mutating func advanceCounter() throws(ActivationError) {
        let old = try currentCounter
        counter = try protocolStep { () throws(ProtocolError) in try old.next().base64 }
        counterIndex &+= 1
        counterHistory = Array(([old.base64] + counterHistory).prefix(Self.counterHistoryLength))
    }
}

/// The secret half: the possession and transport keys, in one blob written
/// from and read into secure memory: `"SPCK" ‖ 0x01 ‖ possession(16) ‖ transport(16)`.
struct LocalActivationKeys {
    static let magic: [UInt8] = Array("SPCK".utf8)
    static let version: UInt8 = 1
    static let byteCount = 5 + 2 * ProtocolConstants.keyByteCount
    static let keyCheckLabel = Array("SecurePIN activation key check".utf8)

    let possession: SecureBytes
    let transport: SecureBytes

    func destroy() {
        possession.destroy()
        transport.destroy()
    }

    /// `foldedHMAC(possession, label) ‖ foldedHMAC(transport, label)` (public).
    func keyCheck() throws(ActivationError) -> [UInt8] {
        try coreStep { () throws(SecureCoreError) in
            try HMACSHA256.foldedTag(Self.keyCheckLabel, key: possession)
                + HMACSHA256.foldedTag(Self.keyCheckLabel, key: transport)
        }
    }

    func serialized() throws(ActivationError) -> SecureBytes {
        let out = try coreStep { () throws(SecureCoreError) in try SecureBytes(count: Self.byteCount) }
        out.withUnsafeMutableBytes { buffer in
            buffer.copyBytes(from: Self.magic + [Self.version])
            possession.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[5..<21]).copyMemory(from: $0) }
            transport.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[21..<37]).copyMemory(from: $0) }
        }
        return out
    }

    static func parse(_ blob: SecureBytes) throws(ActivationError) -> LocalActivationKeys {
        defer { blob.destroy() }
        guard blob.count == byteCount else { throw .invalidActivationData(reason: "the key file has the wrong size") }
        let header = blob.withUnsafeBytes { Array($0[0..<5]) }
        guard Array(header[0..<4]) == magic else { throw .invalidActivationData(reason: "the key file is damaged") }
        guard header[4] == version else {
            if header[4] > version { throw .upgradeSDK(foundVersion: Int(header[4])) }
            throw .invalidActivationData(reason: "the key file has an unknown version")
        }
        let possession = try coreStep { () throws(SecureCoreError) in
            try blob.withUnsafeBytes { (bytes) throws(SecureCoreError) in
                try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: bytes[5..<21]))
            }
        }
        let transport = try coreStep { () throws(SecureCoreError) in
            try blob.withUnsafeBytes { (bytes) throws(SecureCoreError) in
                try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: bytes[21..<37]))
            }
        }
        return LocalActivationKeys(possession: possession, transport: transport)
    }
}
