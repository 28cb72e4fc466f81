import Foundation
import PinVault
import PinVaultServer
import ReferenceServer
import SecureCore

extension DemoCommand {
    /// The PIN of part 3, fixed so that the offline search below ends quickly and always the same way.
    static let copiedVaultPIN: [UInt32] = [0, 4, 2, 7]

    /// Part 3: what a copy of the vault directory is worth, software binding beside server binding.
    /// Both vaults use a tiny Argon2id cost (8 KiB, t = 1: the demo's, never a real vault's) so that
    /// the offline search runs for real in a second or two.
    static func bindingStory(_ story: Story, directory: String) async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let tokenFile = directory + "/admin.token"
        try AdminToken.store(try AdminToken.random(), to: tokenFile)
        var child: ReferenceServerProcess?
        defer { child?.kill9() }
        try await story.step("start a reference server for the server binding (OPRF, attempts counted by the server)") {
            let executable =
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0]
            let server = try ReferenceServerProcess(
                executable: executable, database: directory + "/server.sqlite", tokenFile: tokenFile)
            child = server
            DemoDirectory.children.withLock { $0.append(server.pid) }
            return "http://127.0.0.1:\(server.port), blocks a vault after 5 failures"
        }
        guard let server = child else { throw StepFailed(description: "no server") }
        let tiny = Argon2id.Parameters(memoryKiB: 8, iterations: 1)
        let options = PinVault.Options(floor: tiny, serverConnector: HTTPVaultServer.connector())
        let token = try SecureBytes.random(count: 32)
        defer { token.destroy() }
        let right = try pin(copiedVaultPIN)
        defer { right.destroy() }
        let software = directory + "/software", bound = directory + "/server-bound"
        try await story.step("create a software vault and a server-bound vault under PIN 0427, tiny Argon2id cost") {
            _ = try PinVault.create(at: software, secret: token, pin: right, parameters: tiny, options: options)
            _ = try PinVault.create(
                at: bound, secret: token, pin: right, parameters: tiny,
                binding: .server(VaultServerAddress(url: server.baseURL, configuration: server.configuration)),
                options: options)
            return "m=8 KiB, t=1 (the demo's cost; a real vault's is about 70 ms a guess)"
        }
        let softwareCopy = directory + "/stolen-software", boundCopy = directory + "/stolen-server-bound"
        try await story.step("a thief copies both vault directories") {
            try FileManager.default.copyItem(atPath: software, toPath: softwareCopy)
            try FileManager.default.copyItem(atPath: bound, toPath: boundCopy)
            return "key file, vault file and failure record of each"
        }
        try await story.step("the software copy: guess 0000, 0001, … offline, restoring its failure record each time") {
            let (guesses, seconds) = try guessOffline(softwareCopy, options: options, token: token)
            let rate = Double(guesses) / max(seconds, 1e-9)
            return String(
                format: "opened with 0427 after %d guesses, %.0f guesses/s at this cost; "
                    + "all 10,000 PINs would take %.1f s", guesses, rate, 10_000 / rate)
        }
        try await story.step("the server-bound copy, server up: every guess is counted by the server") {
            let copy = PinVault(directory: boundCopy, options: options)
            var refused = 0
            for n in 0..<8 {
                let guess = try pin([UInt32(n / 1000), UInt32(n / 100 % 10), UInt32(n / 10 % 10), UInt32(n % 10)])
                defer { guess.destroy() }
                do {
                    _ = try copy.unlock(pin: guess) { _ in 0 }
                    throw StepFailed(description: "a wrong guess opened the server-bound copy")
                } catch VaultError.wrongPIN {
                } catch VaultError.serverBlocked {
                    refused += 1
                }
            }
            let status = try copy.status()
            try expect(
                status.failures == 5 && refused == 3, "the server counted \(status.failures), refused \(refused)")
            do {
                _ = try PinVault(directory: bound, options: options).unlock(pin: right) { _ in 0 }
                throw StepFailed(description: "the blocked vault opened")
            } catch VaultError.serverBlocked {}
            return "5 guesses counted, then blocked: 3 refused, and the owner's right PIN too"
        }
        try await story.step("the server-bound copy offline (server gone): no guess can be tested at all") {
            child = nil
            server.kill9()
            let copy = PinVault(directory: boundCopy, options: options)
            for digits in [copiedVaultPIN, [9, 9, 9, 9]] {
                let guess = try pin(digits)
                defer { guess.destroy() }
                do {
                    _ = try copy.unlock(pin: guess) { _ in 0 }
                    throw StepFailed(description: "the copy opened without its server")
                } catch VaultError.network {}
            }
            return "the right PIN and a wrong one both fail alike (network error): 0 guesses/s offline"
        }
    }

    /// The attack on a software vault's copy: every PIN from 0000 up, the failure record (a file
    /// the thief controls) put back before each guess, so no counter or delay ever applies.
    static func guessOffline(_ directory: String, options: PinVault.Options, token: SecureBytes) throws -> (
        Int, Double
    ) {
        let record = directory + "/failures"
        let pristine = try Data(contentsOf: URL(fileURLWithPath: record))
        let vault = PinVault(directory: directory, options: options)
        let start = ContinuousClock.now
        for n in 0..<10_000 {
            try pristine.write(to: URL(fileURLWithPath: record))
            let guess = try pin([UInt32(n / 1000), UInt32(n / 100 % 10), UInt32(n / 10 % 10), UInt32(n % 10)])
            defer { guess.destroy() }
            do {
                let same = try vault.unlock(pin: guess) { (secret: SecureBytes) -> Bool in
                    (try? secret.isEqual(to: token)) ?? false
                }
                try expect(same, "the copy opened with another secret")
                let elapsed = start.duration(to: .now)
                return (n + 1, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            } catch VaultError.wrongPIN {}
        }
        throw StepFailed(description: "no PIN opened the software copy")
    }
}
