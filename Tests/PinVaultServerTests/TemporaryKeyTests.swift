import Foundation
import PinVault
import PowerAuthProtocol
import SecureCore
import TestSupport
import Testing
import VaultOPRFProtocol

@testable import PinVaultServer

/// A blinded element of a fresh input (public).
func blindedElement() throws -> [UInt8] {
    let input = try secret("a PIN-derived input")
    defer { input.destroy() }
    let blind = try OPRF.randomBlind()
    defer { blind.destroy() }
    return try OPRF.blind(input, with: blind)
}

/// A vault record on `client`'s server with its verifier stored, so that evaluations are counted.
func activeRecord(_ client: HTTPVaultServer) throws -> [UInt8] {
    let (vaultId, first) = try client.register(blinded: try blindedElement())
    #expect(first.counters.failures == 0)
    let verifier = try SecureBytes(count: VaultOPRFAPI.proofByteCount)
    defer { verifier.destroy() }
    try client.enroll(vaultId: vaultId, verifier: verifier)
    return vaultId
}

@Suite("The vault's requests under PowerAuth 3.3 temporary keys (real securepin server on loopback)", .serialized)
struct TemporaryKeyTests {
    @Test func aRequestUnderATemporaryKeyTheServerNeverIssuedIsRefusedAndCountsNothing() throws {
        try withServer { server in
            let client = try HTTPVaultServer(address: server.address)
            let vaultId = try activeRecord(client)
            let genuine = try client.currentTemporaryKey()
            // An evaluation sealed to a genuine temporary public key under an identifier the server never issued.
            let blinded = try blindedElement()
            let plaintext = try VaultOPRFAPI.request(.evaluate, vaultId: vaultId) { $0.copyBytes(from: blinded) }
            defer { plaintext.destroy() }
            let configuration = try VaultOPRFAPI.eciesConfiguration(
                try SDKConfiguration(parsing: server.address.configuration),
                temporaryKeyId: UUID().uuidString.lowercased())
            let (cryptogram, _) = try ECIESEncryptor(configuration: configuration, serverPublicKey: genuine.publicKey)
                .encryptRequest(plaintext)
            let body = try JSONEncoder().encode(VaultOPRFAPI.Cryptogram(cryptogram))
            let (status, data) = try client.post(VaultOPRFAPI.Operation.evaluate.path, body)
            #expect(status == 400)
            #expect(
                try JSONDecoder().decode(VaultOPRFAPI.Failure.self, from: data).error
                    == VaultOPRFAPI.temporaryKeyRefused)
            #expect(try client.status(vaultId: vaultId).failures == 0)
            // The control: the same evaluation under the key the server issued is counted.
            #expect(try client.evaluate(vaultId: vaultId, blinded: blinded).counters.failures == 1)
        }
    }

    @Test func aKeyOutlivesARestartAndAKeyTheServerCannotOpenIsRefusedUncountedThenReplaced() throws {
        try withServer { server in
            let client = try HTTPVaultServer(address: server.address)
            let vaultId = try activeRecord(client)
            let issued = try client.currentTemporaryKey()
            // Temporary keys are stateless (sealed in their identifiers): a restarted server still
            // opens a key it issued before.
            server.process.kill9()
            try server.restart()
            let restarted = try HTTPVaultServer(address: server.address)
            restarted.temporaryKey.withLock { $0 = issued }
            #expect(try restarted.status(vaultId: vaultId).failures == 0)
            #expect(restarted.temporaryKey.withLock { $0 } == issued)
            // A key the server cannot open (another server's, an expired one; here one whose sealed
            // identifier was altered) is refused before anything is counted.
            var bytes = Array(issued.temporaryKeyId.utf8)
            bytes[bytes.count / 2] = bytes[bytes.count / 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            let stale = ApplicationTemporaryKey(
                temporaryKeyId: String(decoding: bytes, as: UTF8.self), publicKey: issued.publicKey,
                expiresAt: issued.expiresAt)
            let blinded = try blindedElement()
            let plaintext = try VaultOPRFAPI.request(.evaluate, vaultId: vaultId) { $0.copyBytes(from: blinded) }
            defer { plaintext.destroy() }
            let (cryptogram, _) = try ECIESEncryptor(
                configuration: try VaultOPRFAPI.eciesConfiguration(
                    try SDKConfiguration(parsing: server.address.configuration), temporaryKeyId: stale.temporaryKeyId),
                serverPublicKey: stale.publicKey
            ).encryptRequest(plaintext)
            let (status, _) = try restarted.post(
                VaultOPRFAPI.Operation.evaluate.path, try JSONEncoder().encode(VaultOPRFAPI.Cryptogram(cryptogram)))
            #expect(status == 400)
            // The client's own call is refused once for the key, fetches a new one and succeeds.
            restarted.temporaryKey.withLock { $0 = stale }
            #expect(try restarted.status(vaultId: vaultId).failures == 0)
            #expect(restarted.temporaryKey.withLock { $0 } != stale)
            #expect(try restarted.evaluate(vaultId: vaultId, blinded: blinded).counters.failures == 1)
        }
    }
}
