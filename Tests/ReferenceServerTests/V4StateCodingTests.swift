import ActivationServer
import PowerAuthProtocol
import SecureCore
import Testing

@testable import ReferenceServer

@Suite("The sealed V4 state's binary form: the server public key stored with it, older rows still read")
struct V4StateCodingTests {
    static func state(_ algorithm: ProtocolAlgorithm) throws -> V4ActivationState {
        var state = try V4ActivationState(algorithm: algorithm)
        state.activationSecret = try SecureBytes.random(count: 32)
        state.devicePublicKey = try ECP384KeyPair.generate().publicKey
        return state
    }

    static func bytes(_ secure: SecureBytes) -> [UInt8] { secure.withUnsafeBytes { Array($0) } }

    static func secure(_ bytes: [UInt8]) throws -> SecureBytes {
        let out = try SecureBytes(count: bytes.count)
        out.withUnsafeMutableBytes { target in for (i, b) in bytes.enumerated() { target[i] = b } }
        return out
    }

    @Test(
        "a new row ends with the server's public key, and reads it back without recomputing",
        arguments: [ProtocolAlgorithm.ecP384, .ecP384MLL3, .ecP384MLL5])
    func storedPublicKey(algorithm: ProtocolAlgorithm) throws {
        let state = try Self.state(algorithm)
        let encoded = Self.bytes(try V4StateCoding.encode(state))
        #expect(encoded[0] & V4StateCoding.storedPublicKeyFlag != 0)
        #expect(Array(encoded.suffix(97)) == state.serverKeyPair.publicKey)
        let decoded = try V4StateCoding.decode(try Self.secure(encoded))
        #expect(decoded.algorithm == algorithm)
        #expect(decoded.serverKeyPair.publicKey == state.serverKeyPair.publicKey)
        #expect(decoded.devicePublicKey == state.devicePublicKey)
        // The pair still signs what its public key verifies.
        let message = Array("stored".utf8)
        let signature = try decoded.serverKeyPair.sign(message)
        #expect(
            try ECP384KeyPair.verify(signature: signature, message: message, publicKey: decoded.serverKeyPair.publicKey)
        )
    }

    @Test(
        "a row in the earlier layout (no stored public key) reads, the key recomputed; a flag without the key is refused",
        arguments: [ProtocolAlgorithm.ecP384, .ecP384MLL3, .ecP384MLL5])
    func earlierLayout(algorithm: ProtocolAlgorithm) throws {
        let state = try Self.state(algorithm)
        var encoded = Self.bytes(try V4StateCoding.encode(state))
        var earlier = Array(encoded.dropLast(97))
        earlier[0] &= ~V4StateCoding.storedPublicKeyFlag
        let decoded = try V4StateCoding.decode(try Self.secure(earlier))
        #expect(decoded.serverKeyPair.publicKey == state.serverKeyPair.publicKey)
        #expect(Self.reveal(decoded.activationSecret) == Self.reveal(state.activationSecret))
        // Written again, it gains the stored key.
        #expect(Self.bytes(try V4StateCoding.encode(decoded)).suffix(97).elementsEqual(state.serverKeyPair.publicKey))
        // The flag with the key cut off, or a key that is not a SEC1 point's encoding: refused.
        encoded[encoded.count - 97] = 0x02
        #expect(throws: ReferenceServerError.corruptRecord(reason: "the V4 state")) {
            _ = try V4StateCoding.decode(try Self.secure(encoded))
        }
        var flagged = earlier
        flagged[0] |= V4StateCoding.storedPublicKeyFlag
        #expect(throws: ReferenceServerError.corruptRecord(reason: "the V4 state")) {
            _ = try V4StateCoding.decode(try Self.secure(flagged))
        }
    }

    @Test("a pending upgrade is stored with both public keys")
    func withUpgrade() throws {
        let current = try Self.state(.ecP384)
        let pending = try Self.state(.ecP384MLL5)
        let encoded = try V4StateCoding.encode(current, upgrade: pending)
        let (a, b) = try V4StateCoding.decodeWithUpgrade(encoded)
        #expect(a.serverKeyPair.publicKey == current.serverKeyPair.publicKey)
        #expect(b?.serverKeyPair.publicKey == pending.serverKeyPair.publicKey)
        #expect(b?.algorithm == .ecP384MLL5)
    }

    static func reveal(_ secret: SecureBytes?) -> [UInt8]? { secret.map { bytes($0) } }
}
