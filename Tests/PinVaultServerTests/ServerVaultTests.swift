import Foundation
import PinVaultServer
import ReferenceServer
import SecureCore
import Synchronization
import TestSupport
import Testing

@testable import PinVault

#if canImport(Glibc)
    import Glibc
#endif

let testParameters = Argon2id.Parameters(memoryKiB: 64, iterations: 1)
let testFloor = Argon2id.Parameters(memoryKiB: 8, iterations: 1)

func temporaryDirectory() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("spc-server-vault-\(UUID().uuidString)").path
}

/// The URL the server under test listens on now.
final class CurrentURL: Sendable {
    let value = Mutex<String>("")
}

/// A real `securepin server` child process on a loopback port, with its own database; restartable
/// on the same database (a new port each time: the tests' connector follows it).
final class ServerUnderTest: @unchecked Sendable {
    let directory: String
    let maxFailures: Int
    private(set) var process: ReferenceServerProcess
    /// Where the current process listens; the vault's connector reads it.
    let current = CurrentURL()

    init(maxFailures: Int = 5) throws {
        directory = temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.maxFailures = maxFailures
        try AdminToken.store(try AdminToken.random(), to: directory + "/admin.token")
        process = try Self.start(directory, maxFailures)
        let url = process.baseURL
        current.value.withLock { $0 = url }
    }

    static func start(_ directory: String, _ maxFailures: Int) throws -> ReferenceServerProcess {
        try ReferenceServerProcess(
            executable: try BuiltExecutable.path("securepin"), database: directory + "/server.sqlite",
            tokenFile: directory + "/admin.token", extraArguments: ["--max-failures", String(maxFailures)])
    }

    var address: VaultServerAddress { VaultServerAddress(url: process.baseURL, configuration: process.configuration) }

    func restart() throws {
        process = try Self.start(directory, maxFailures)
        let url = process.baseURL
        current.value.withLock { $0 = url }
    }

    /// Vault options whose server client goes to the current process (the file records the first
    /// process's port; a restarted server listens elsewhere).
    var options: PinVault.Options {
        let current = self.current
        return PinVault.Options(
            floor: testFloor,
            serverConnector: { address in
                let url = current.value.withLock { $0 }
                return HTTPVaultServer.connector(timeout: 10)(
                    VaultServerAddress(url: url, configuration: address.configuration))
            })
    }

    func stop() {
        process.kill9()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

func withServer<R>(maxFailures: Int = 5, _ body: (ServerUnderTest) throws -> R) throws -> R {
    let server = try ServerUnderTest(maxFailures: maxFailures)
    defer { server.stop() }
    return try body(server)
}

func makeVault(_ server: ServerUnderTest, at directory: String = temporaryDirectory(), pin digits: String = "2468")
    throws -> PinVault
{
    try PinVault.create(
        at: directory, secret: secret("refresh-token-42"), pin: pin(digits), parameters: testParameters,
        binding: .server(server.address), options: server.options)
}

func attempt(_ vault: PinVault, _ digits: String) -> Result<String, VaultError> {
    do throws(VaultError) {
        let p: Password
        do { p = try pin(digits) } catch { throw .cancelled }
        return .success(try vault.unlock(pin: p) { text($0) })
    } catch {
        return .failure(error)
    }
}

/// Every file of a directory with its bytes, to show an operation wrote nothing.
func snapshot(_ directory: String) -> [String: [UInt8]] {
    var files: [String: [UInt8]] = [:]
    for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
        if let data = FileManager.default.contents(atPath: directory + "/" + name) { files[name] = [UInt8](data) }
    }
    return files
}

func copyDirectory(_ from: String, _ to: String) throws {
    try FileManager.default.copyItem(atPath: from, toPath: to)
}

@Suite("Vault bound to a server's OPRF (real securepin server on loopback)", .serialized)
struct ServerVaultTests {
    @Test func roundTripOverHTTPWritesVersionFourAndReportsTheServer() throws {
        try withServer { server in
            let vault = try makeVault(server)
            defer { _ = try? vault.destroy() }
            #expect(try attempt(vault, "2468").get() == "refresh-token-42")
            let status = try vault.status()
            #expect(status.binding == .server)
            #expect(status.failures == 0)
            #expect(status.maxFailures == server.maxFailures)
            #expect(status.serverLocation == server.process.baseURL)
            let bytes = try #require(FileManager.default.contents(atPath: vault.directory.path + "/vault"))
            #expect(bytes[8] == 0 && bytes[9] == 4)  // format version 4, big-endian after the magic
            // A wrong PIN is counted by the server; the right one returns its counter to zero.
            guard case .failure(.wrongPIN(let remaining)) = attempt(vault, "1111") else {
                Issue.record("a wrong PIN must be reported as one")
                return
            }
            #expect(remaining == server.maxFailures - 1)
            #expect(try vault.status().failures == 1)
            #expect(try attempt(vault, "2468").get() == "refresh-token-42")
            #expect(try vault.status().failures == 0)
            // A PIN change re-registers: the new PIN opens, the old one is a wrong PIN.
            try vault.changePIN(old: pin("2468"), new: pin("135790"))
            #expect(try attempt(vault, "135790").get() == "refresh-token-42")
            guard case .failure(.wrongPIN) = attempt(vault, "2468") else {
                Issue.record("the old PIN must no longer open the vault")
                return
            }
        }
    }

    @Test func sixteenConcurrentClientsWithWrongPINsAreCountedAndBlockedAtTheMaximum() throws {
        try withServer(maxFailures: 5) { server in
            let original = try makeVault(server)
            defer { _ = try? original.destroy() }
            // Sixteen copies of the directory: sixteen clients, each with its own lock, one server record.
            let copies = (0..<16).map { _ in temporaryDirectory() }
            for copy in copies { try copyDirectory(original.directory.path, copy) }
            defer { for copy in copies { try? FileManager.default.removeItem(atPath: copy) } }
            let outcomes = Mutex<[VaultError?]>([])
            let options = server.options
            DispatchQueue.concurrentPerform(iterations: copies.count) { i in
                let outcome: VaultError?
                switch attempt(PinVault(directory: copies[i], options: options), String(format: "%04d", 1000 + i)) {
                case .success: outcome = nil
                case .failure(let error): outcome = error
                }
                outcomes.withLock { $0.append(outcome) }
            }
            let all = outcomes.withLock { $0 }
            let wrong = all.filter { if case .wrongPIN = $0 { true } else { false } }.count
            let blocked = all.filter { $0 == .serverBlocked }.count
            print("16 concurrent wrong PINs, server limit 5: \(wrong) counted as wrong, \(blocked) refused (blocked)")
            #expect(all.count == 16)
            #expect(wrong == 5)
            #expect(blocked == 11)
            let status = try original.status()
            #expect(status.failures == 5)
            #expect(status.state == .locked)
            // Blocked means blocked: the right PIN is refused too, and nothing is evaluated.
            guard case .failure(.serverBlocked) = attempt(original, "2468") else {
                Issue.record("the right PIN must be refused once the server blocks the vault")
                return
            }
        }
    }

    @Test func aCopyCannotBeOpenedWithoutTheServerAndNothingIsCountedLocally() throws {
        let copy = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: copy) }
        var options = PinVault.Options(floor: testFloor)
        try withServer { server in
            let vault = try makeVault(server)
            defer { _ = try? vault.destroy() }
            try copyDirectory(vault.directory.path, copy)
            options = server.options
        }
        // The server is gone (killed, its database removed): the copy, with the right PIN.
        let before = snapshot(copy)
        let copied = PinVault(directory: copy, options: options)
        guard case .failure(.network) = attempt(copied, "2468") else {
            Issue.record("an unreachable server must be a network error, never a wrong PIN")
            return
        }
        guard case .failure(.network) = attempt(copied, "1111") else {
            Issue.record("a wrong PIN without the server must be a network error too")
            return
        }
        do throws(VaultError) {
            _ = try copied.status()
            Issue.record("status without the server must fail")
        } catch .network {
        } catch {
            Issue.record("status without the server: \(error)")
        }
        #expect(snapshot(copy) == before)  // no failure record, no byte changed
        // Without a client at all, the error is typed as well, and nothing is counted.
        let bare = PinVault(directory: copy, options: PinVault.Options(floor: testFloor))
        guard case .failure(.serverRequired) = attempt(bare, "2468") else {
            Issue.record("a server-bound vault without a connector must say so")
            return
        }
        #expect(snapshot(copy) == before)
    }

    @Test func theServersCounterSurvivesKillNine() throws {
        try withServer(maxFailures: 5) { server in
            let vault = try makeVault(server)
            defer { _ = try? vault.destroy() }
            for digits in ["1111", "2222", "3333"] {
                guard case .failure(.wrongPIN) = attempt(vault, digits) else {
                    Issue.record("expected a wrong PIN")
                    return
                }
            }
            server.process.kill9()
            guard case .failure(.network) = attempt(vault, "2468") else {
                Issue.record("a killed server must be a network error")
                return
            }
            try server.restart()
            #expect(try vault.status().failures == 3)
            #expect(try attempt(vault, "2468").get() == "refresh-token-42")
            #expect(try vault.status().failures == 0)
        }
    }

    @Test func anUnreachableServerAtCreateLeavesNothingBehind() throws {
        let directory = temporaryDirectory()
        let dead = VaultServerAddress(url: "http://127.0.0.1:9", configuration: "ARBZ")
        #expect(throws: VaultError.self) {
            _ = try PinVault.create(
                at: directory, secret: secret("x"), pin: pin("2468"), parameters: testParameters,
                binding: .server(dead),
                options: PinVault.Options(floor: testFloor, serverConnector: HTTPVaultServer.connector()))
        }
        #expect(!FileManager.default.fileExists(atPath: directory))
    }
}
