import Foundation
import PinVaultServer
import PostgresStore
import ReferenceServer
import SecureCore
import TestSupport
import Testing

@testable import PinVault

#if canImport(Glibc)
    import Glibc
#endif

/// The test cluster `make test` starts (`Tests/postgres/cluster.sh`), if any.
let postgresTestCluster = ProcessInfo.processInfo.environment["SECUREPIN_TEST_POSTGRES_DSN"].flatMap {
    $0.isEmpty ? nil : $0
}

/// Two `securepin server` processes on one fresh PostgreSQL database.
final class TwoInstances: @unchecked Sendable {
    let directory: String
    let a: ReferenceServerProcess
    let b: ReferenceServerProcess

    init(maxFailures: Int) throws {
        guard let base = postgresTestCluster else { throw CocoaError(.featureUnsupported) }
        directory = temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let name = "v_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        var baseText = base
        let admin = try PostgresPool(
            connectionString: try baseText.withUTF8 { try SecureBytes(copying: UnsafeRawBufferPointer($0)) })
        try admin.withConnection { (c) throws(PostgresError) in try c.execute("CREATE DATABASE \(name)") }
        let dsn = Data((base + " dbname=\(name)").utf8)
        guard
            FileManager.default.createFile(
                atPath: directory + "/server.dsn", contents: dsn, attributes: [.posixPermissions: 0o600])
        else { throw CocoaError(.fileWriteUnknown) }
        try AdminToken.store(try AdminToken.random(), to: directory + "/admin.token")
        let arguments = [
            "--store", "postgres", "--dsn-file", directory + "/server.dsn", "--key-file", directory + "/server.key",
            "--statement-timeout", "30000",
        ]
        let executable = try BuiltExecutable.path("securepin")
        let extra = ["--max-failures", String(maxFailures)]
        // One after the other: the first creates the key file and the schema.
        a = try ReferenceServerProcess(
            executable: executable, storeArguments: arguments, tokenFile: directory + "/admin.token",
            extraArguments: extra)
        b = try ReferenceServerProcess(
            executable: executable, storeArguments: arguments, tokenFile: directory + "/admin.token",
            extraArguments: extra)
    }

    /// Vault options whose server client goes to `instance`, whatever URL the file records.
    func options(_ instance: ReferenceServerProcess) -> PinVault.Options {
        let url = instance.baseURL
        return PinVault.Options(
            floor: testFloor,
            serverConnector: { address in
                HTTPVaultServer.connector(timeout: 10)(
                    VaultServerAddress(url: url, configuration: address.configuration))
            })
    }

    func stop() {
        a.kill9()
        b.kill9()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

@Suite(
    "The vault's server binding on PostgreSQL: two instances, one counter",
    .serialized, .enabled(if: postgresTestCluster != nil, "no PostgreSQL test cluster (make test starts one)"))
struct PostgresVaultTests {
    @Test func attemptsThroughEitherInstanceAreCountedOnceAndBlockExactly() throws {
        let servers = try TwoInstances(maxFailures: 3)
        defer { servers.stop() }
        #expect(servers.a.configuration == servers.b.configuration)
        let directory = temporaryDirectory()
        let address = VaultServerAddress(url: servers.a.baseURL, configuration: servers.a.configuration)
        let created = try PinVault.create(
            at: directory, secret: secret("refresh-token-42"), pin: pin("2468"), parameters: testParameters,
            binding: .server(address), options: servers.options(servers.a))
        defer { _ = try? created.destroy() }
        let viaA = PinVault(directory: directory, options: servers.options(servers.a))
        let viaB = PinVault(directory: directory, options: servers.options(servers.b))
        // Opened through the other instance; a wrong PIN there is counted where A sees it.
        #expect(try attempt(viaB, "2468").get() == "refresh-token-42")
        guard case .failure(.wrongPIN(let remaining)) = attempt(viaB, "1111") else {
            Issue.record("a wrong PIN must be reported as one")
            return
        }
        #expect(remaining == 2)
        #expect(try viaA.status().failures == 1)
        #expect(try attempt(viaA, "2468").get() == "refresh-token-42")
        #expect(try viaB.status().failures == 0)
        // Three wrong PINs spread over both instances block at exactly three, everywhere.
        _ = attempt(viaA, "1111")
        _ = attempt(viaB, "2222")
        _ = attempt(viaA, "3333")
        #expect(try viaB.status().failures == 3)
        guard case .failure(.serverBlocked) = attempt(viaB, "2468") else {
            Issue.record("the right PIN must be refused once blocked, through either instance")
            return
        }
        guard case .failure(.serverBlocked) = attempt(viaA, "2468") else {
            Issue.record("the right PIN must be refused once blocked, through either instance")
            return
        }
    }

    @Test func aRecordRemovedThroughOneInstanceIsGoneForTheOther() throws {
        let servers = try TwoInstances(maxFailures: 5)
        defer { servers.stop() }
        let directory = temporaryDirectory()
        let address = VaultServerAddress(url: servers.a.baseURL, configuration: servers.a.configuration)
        let vault = try PinVault.create(
            at: directory, secret: secret("refresh-token-42"), pin: pin("2468"), parameters: testParameters,
            binding: .server(address), options: servers.options(servers.a))
        let hex = try #require(try vault.status().serverVaultId)
        let viaB = PinVault(directory: directory, options: servers.options(servers.b))
        let report = try viaB.destroy(pin: try pin("2468"))
        #expect(report.removedServerRecord)
        let client = try HTTPVaultServer(
            address: VaultServerAddress(url: servers.a.baseURL, configuration: servers.a.configuration))
        let id = try #require(BackOfficeVaultRequest(vaultId: hex).bytes)
        #expect(throws: VaultServerError.unknownVault) { _ = try client.status(vaultId: id) }
    }
}
