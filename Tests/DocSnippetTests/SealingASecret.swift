import Foundation
import PinVault
import SecureCore
import Testing

// snippet.begin sealing-a-secret
/// Seals `secret` under `pin` in `directory`, opens it again, and changes the PIN.
func sealAndOpen(secret: SecureBytes, pin: Password, newPIN: Password, directory: String) async throws -> Int {
    let vault = try PinVault.create(
        at: directory, secret: secret, pin: pin,
        policy: .hard(maxFailures: 5),  // or .soft(), .wipe(maxFailures: 10)
        parameters: .owaspMinimum)
    // The secret exists only inside the closure, and is wiped when it returns.
    let length = try await vault.unlock(pin: pin) { secret in secret.count }
    try vault.changePIN(old: pin, new: newPIN)
    let status = try vault.status()  // failures and state, without a PIN
    precondition(status.failures == 0)
    return length
}
// snippet.end

// snippet.begin wrong-pin
/// What a wrong PIN looks like to the caller: a typed error, and the attempt counted.
func tryPIN(_ pin: Password, on vault: PinVault) async -> String {
    do throws(VaultError) {
        try await vault.unlock(pin: pin) { _ in }
        return "opened"
    } catch .wrongPIN(let remaining) {
        return "wrong PIN, \(remaining.map(String.init) ?? "unlimited") attempts remaining"
    } catch {
        return "refused: \(error)"
    }
}
// snippet.end

@Test("article: sealing a secret under a PIN") func sealingASecret() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("snippet-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let secret = try SecureBytes.random(count: 24)
    let pin = try snippetPIN("2468")
    let newPIN = try snippetPIN("1357")
    #expect(try await sealAndOpen(secret: secret, pin: pin, newPIN: newPIN, directory: directory) == 24)
    #expect(await tryPIN(pin, on: PinVault(directory: directory)) == "wrong PIN, 4 attempts remaining")
    #expect(await tryPIN(newPIN, on: PinVault(directory: directory)) == "opened")
}
