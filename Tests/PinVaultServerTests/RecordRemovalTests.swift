import Foundation
import ReferenceServer
import SecureCore
import TestSupport
import Testing
import VaultOPRFProtocol

@testable import PinVault
@testable import PinVaultServer

/// The record's identifier as bytes (from `VaultStatus.serverVaultId`).
func vaultIdBytes(_ vault: PinVault) throws -> [UInt8] {
    let hex = try #require(try vault.status().serverVaultId)
    let request = BackOfficeVaultRequest(vaultId: hex)
    return try #require(request.bytes)
}

/// Whether the server still knows a record.
func serverKnows(_ server: ServerUnderTest, _ vaultId: [UInt8]) throws -> Bool {
    let client = try HTTPVaultServer(address: server.address)
    do throws(VaultServerError) {
        _ = try client.status(vaultId: vaultId)
        return true
    } catch .unknownVault {
        return false
    }
}

@Suite("Removing a server-bound vault's record, and the back office's unblock (real server)", .serialized)
struct RecordRemovalTests {
    @Test func destroyWithAWrongPINDestroysNothingAndIsCounted() throws {
        try withServer { server in
            let vault = try makeVault(server)
            defer { _ = try? vault.destroy() }
            let id = try vaultIdBytes(vault)
            let before = snapshot(vault.directory.path)
            #expect(throws: VaultError.wrongPIN(remainingAttempts: server.maxFailures - 1)) {
                try vault.destroy(pin: try pin("1111"))
            }
            #expect(snapshot(vault.directory.path) == before)
            #expect(try serverKnows(server, id))
            #expect(try vault.status().failures == 1)
            #expect(try attempt(vault, "2468").get() == "refresh-token-42")
        }
    }

    @Test func destroyWithThePINRemovesTheServerRecordThenTheFiles() throws {
        try withServer { server in
            let vault = try makeVault(server)
            let id = try vaultIdBytes(vault)
            let report = try vault.destroy(pin: try pin("2468"))
            #expect(report.removedServerRecord)
            #expect(report.removedFiles.contains("vault"))
            #expect(!FileManager.default.fileExists(atPath: vault.directory.path + "/vault"))
            #expect(try !serverKnows(server, id))
        }
    }

    @Test func aPINChangeRemovesTheOldRecordOnceTheOldKeyHalfIsGone() throws {
        try withServer { server in
            let vault = try makeVault(server)
            defer { _ = try? vault.destroy() }
            let old = try vaultIdBytes(vault)
            try vault.changePIN(old: pin("2468"), new: pin("135790"))
            let new = try vaultIdBytes(vault)
            #expect(new != old)
            #expect(try !serverKnows(server, old))
            #expect(try serverKnows(server, new))
            #expect(try vault.status().failures == 0)
            #expect(try attempt(vault, "135790").get() == "refresh-token-42")
        }
    }

    @Test func aConfirmationProofDoesNotRemoveAndSpendsTheChallenge() throws {
        try withServer { server in
            let client = try HTTPVaultServer(address: server.address)
            let vaultId = try activeRecord(client)  // verifier: 32 zero bytes
            let verifier = try SecureBytes(count: VaultOPRFAPI.proofByteCount)
            defer { verifier.destroy() }
            let evaluation = try client.evaluate(vaultId: vaultId, blinded: try blindedElement())
            // The confirmation proof of this very challenge, sent as a removal: refused, record kept.
            let confirmation = try VaultOPRFAPI.proof(
                verifier: verifier, vaultId: vaultId, challenge: evaluation.challenge)
            #expect(throws: VaultServerError.self) {
                _ = try client.call(.remove, vaultId: vaultId) { $0.copyBytes(from: confirmation) }
            }
            #expect(try serverKnows(server, vaultId))
            // The challenge is spent: even the right removal proof of it is refused now.
            #expect(throws: VaultServerError.self) {
                try client.remove(vaultId: vaultId, verifier: verifier, challenge: evaluation.challenge)
            }
            #expect(try client.status(vaultId: vaultId).failures == 1)
            // A fresh evaluation and its removal proof delete the record.
            let next = try client.evaluate(vaultId: vaultId, blinded: try blindedElement())
            try client.remove(vaultId: vaultId, verifier: verifier, challenge: next.challenge)
            #expect(try !serverKnows(server, vaultId))
        }
    }

    @Test func theBackOfficeUnblocksABlockedVaultAndTheRightPINOpensAgain() async throws {
        let server = try ServerUnderTest(maxFailures: 2)
        defer { server.stop() }
        let vault = try makeVault(server)
        defer { _ = try? vault.destroy() }
        _ = attempt(vault, "1111")
        _ = attempt(vault, "1112")
        guard case .failure(.serverBlocked) = attempt(vault, "2468") else {
            Issue.record("the right PIN must be refused once the server blocked the vault")
            return
        }
        let hex = try #require(try vault.status().serverVaultId)
        let token = try AdminToken.load(at: server.directory + "/admin.token")
        defer { token.destroy() }
        let office = try BackOfficeClient(baseURL: try #require(URL(string: server.process.baseURL)), token: token)
        let blocked = try await office.vaultDetail(hex)
        #expect(blocked.state == "BLOCKED")
        #expect(blocked.failures == 2)
        let unblocked = try await office.unblockVault(hex)
        #expect(unblocked == BackOfficeVault(vaultId: hex, state: "ACTIVE", failures: 0, maxFailures: 2))
        #expect(try attempt(vault, "2468").get() == "refresh-token-42")
        await #expect(throws: BackOfficeError.self) {
            _ = try await office.unblockVault(String(repeating: "0", count: 32))
        }
    }
}
