import ActivationServer
import Foundation
import PostQuantum
import PostgresStore
import PowerAuthProtocol
import ReferenceServer
import SQLiteStore
import SecureCore
import TestSupport
import Testing

@Suite("Storage of protocol V4 state (SQLite schema 3-4, PostgreSQL schema 3-4)")
struct V4StorageTests {
    static func reveal(_ value: SecureBytes?) -> [UInt8] { value?.withUnsafeBytes { Array($0) } ?? [] }

    /// One backend's database: opened (again) under a storage key, and its raw `v4_sealed` column.
    struct Database {
        let backend: StoreBackend
        let path: String
        let connectionString: SecureBytes?

        init(_ backend: StoreBackend) throws {
            self.backend = backend
            path = try temporaryDirectory() + "/server.sqlite"
            connectionString = backend == .postgres ? try StoreBackend.freshPostgresDatabase() : nil
        }

        func open(_ storageKey: SecureBytes) throws -> any ReferenceActivationStore {
            guard let connectionString else { return try SQLiteActivationStore(path: path, storageKey: storageKey) }
            return try PostgresActivationStore(connectionString: connectionString, storageKey: storageKey)
        }

        func sealedV4(_ activationId: String) throws -> [UInt8]? {
            guard let connectionString else {
                return try SQLiteDatabase(path: path).query(
                    "SELECT v4_sealed FROM activation WHERE id = ?", [.text(activationId)]
                ).first?[0].bytes
            }
            return try PostgresPool(connectionString: connectionString).withConnection { (c) throws(PostgresError) in
                try c.query("SELECT v4_sealed FROM activation WHERE id = $1", [.text(activationId)]).first?[0].bytes
            }
        }
    }

    @Test(
        "SQLite: two stores on one file that both find no V4 master key keep the first one stored, not their own",
        arguments: [StoreBackend.sqlite])
    func v4MasterKeyFirstStoreWins(backend: StoreBackend) throws {
        let database = try Database(backend)
        let storageKey = try SecureBytes.random(count: 32)
        let first = try database.open(storageKey)
        let second = try database.open(storageKey)
        _ = try first.loadOrStoreConfiguration(
            { () throws(ActivationServerError) in try ActivationServerConfiguration.generate() },
            restore: { (key, secret, master) throws(ActivationServerError) in
                try ActivationServerConfiguration(restoring: key, applicationSecret: secret, masterKeyPair: master)
            })
        func generate() throws(ActivationServerError) -> ECP384KeyPair {
            do throws(ProtocolError) { return try ECP384KeyPair.generate() } catch { throw .protocolFailure(error) }
        }
        // The second store finds none and generates; before it writes, the first stores its own. (On
        // PostgreSQL this interleaving cannot happen: the key is made under an advisory lock, and
        // `PostgresStorageTests.concurrentFirstStart` shows four stores agreeing on one key.)
        var firstKey: ECP384KeyPair?
        let kept = try second.loadOrStoreV4MasterKey { () throws(ActivationServerError) in
            do throws(ReferenceServerError) {
                firstKey = try first.loadOrStoreV4MasterKey { () throws(ActivationServerError) in try generate() }
            } catch {
                throw .storage(reason: "\(error)")
            }
            return try generate()
        }
        #expect(kept.publicKey == firstKey?.publicKey)
        let again = try database.open(storageKey).loadOrStoreV4MasterKey { () throws(ActivationServerError) in
            try generate()
        }
        #expect(again.publicKey == firstKey?.publicKey)
    }

    @Test(
        "an activation's V4 state is sealed at rest and survives reopening; the counter moves with an attempt",
        arguments: StoreBackend.available, [ProtocolAlgorithm.ecP384, .ecP384MLL3, .ecP384MLL5])
    func v4StateRoundTrip(backend: StoreBackend, algorithm: ProtocolAlgorithm) throws {
        let database = try Database(backend)
        let storageKey = try SecureBytes.random(count: 32)
        let store = try database.open(storageKey)
        _ = try store.loadOrStoreConfiguration(
            { () throws(ActivationServerError) in try ActivationServerConfiguration.generate() },
            restore: { (key, secret, master) throws(ActivationServerError) in
                try ActivationServerConfiguration(restoring: key, applicationSecret: secret, masterKeyPair: master)
            })
        let master = try store.loadOrStoreV4MasterKey { () throws(ActivationServerError) in
            do throws(ProtocolError) { return try ECP384KeyPair.generate() } catch { throw .protocolFailure(error) }
        }
        var record = ActivationRecord(
            activationId: "4f0c1d2e-aaaa-4bbb-8ccc-000000000001", activationCode: "AAAAA-AAAAA-AAAAA-AAAAA",
            userId: "u", serverKeyPair: try ActivationCrypto().generateKeyPair(), counter: HashCounter.random(),
            maxFailedAttempts: 5)
        record.v4 = try V4ActivationState(algorithm: algorithm)
        record.state = .active
        try store.insert(record)
        let fetched = try #require(try store.fetch(activationId: record.activationId)?.v4)
        #expect(fetched.serverKeyPair.publicKey == record.v4?.serverKeyPair.publicKey)
        #expect(fetched.activationSecret == nil && fetched.devicePublicKey == nil && fetched.confirmationPending)
        #expect(fetched.algorithm == algorithm)
        let postQuantum = try record.v4?.postQuantumKeyPair()
        #expect((postQuantum == nil) == (algorithm == .ecP384))
        #expect(try fetched.postQuantumKeyPair()?.publicKey == postQuantum?.publicKey)

        let secret = try SecureBytes.random(count: 32)
        let device = try ECP384KeyPair.generate().publicKey
        let nextKnowledge = try SecureBytes.random(count: 32)
        // A hybrid device's ML-DSA key (after the seed, for rows written since devices send it).
        let devicePostQuantum = try algorithm.signatureParameterSet.map { set in
            let pair = try MLDSA.KeyPair.generate(set)
            defer { pair.destroy() }
            return pair.publicKey
        }
        try store.update(activationId: record.activationId) { r in
            r.v4?.activationSecret = secret
            r.v4?.devicePublicKey = device
            r.v4?.devicePostQuantumPublicKey = devicePostQuantum
            r.v4?.confirmationPending = false
            r.v4?.knowledgeNext = nextKnowledge
            r.v4?.keyGeneration = 7
        }
        let start = try #require(record.v4?.counter)
        let result = try store.recordAttempt(
            activationId: record.activationId,
            outcome: .accepted(codeIndex: 2, nextCounter: record.counter, resetsFailures: true), now: Date(),
            failureBlockDuration: nil)
        #expect(result.accepted)

        let reopened = try database.open(storageKey)
        let again = try #require(try reopened.fetch(activationId: record.activationId))
        let state = try #require(again.v4)
        #expect(Self.reveal(state.activationSecret) == Self.reveal(secret))
        #expect(state.devicePublicKey == device && !state.confirmationPending)
        #expect(state.devicePostQuantumPublicKey == devicePostQuantum)
        #expect(Self.reveal(state.knowledgeNext) == Self.reveal(nextKnowledge))
        #expect(state.knowledgeKey == nil && state.biometryKey == nil && state.biometryNext == nil)
        #expect(state.keyGeneration == 7)
        #expect(state.algorithm == algorithm)
        #expect(try state.postQuantumKeyPair()?.publicKey == postQuantum?.publicKey)
        #expect(state.counter == (try start.advanced(by: 3)))
        #expect(again.counterIndex == 3)
        let masterAgain = try reopened.loadOrStoreV4MasterKey { () throws(ActivationServerError) in
            Issue.record("a stored master key was not found")
            throw .storage(reason: "unexpected")
        }
        #expect(masterAgain.publicKey == master.publicKey)

        // Sealed: the secret's bytes are nowhere in the file's row, and another key cannot open it.
        let sealed = try #require(try database.sealedV4(record.activationId))
        let secretBytes = Self.reveal(secret)
        #expect(!(0...(sealed.count - 32)).contains { Array(sealed[$0..<($0 + 32)]) == secretBytes })
        let stranger = try database.open(try SecureBytes.random(count: 32))
        #expect(throws: ActivationServerError.self) { try stranger.fetch(activationId: record.activationId) }
    }

    @Test(
        "a pending upgrade to a stronger suite is sealed with the current state, survives reopening, and goes",
        arguments: StoreBackend.available)
    func pendingSuiteUpgradeRoundTrip(backend: StoreBackend) throws {
        let database = try Database(backend)
        let storageKey = try SecureBytes.random(count: 32)
        let store = try database.open(storageKey)
        _ = try store.loadOrStoreConfiguration(
            { () throws(ActivationServerError) in try ActivationServerConfiguration.generate() },
            restore: { (key, secret, master) throws(ActivationServerError) in
                try ActivationServerConfiguration(restoring: key, applicationSecret: secret, masterKeyPair: master)
            })
        var record = ActivationRecord(
            activationId: "4f0c1d2e-aaaa-4bbb-8ccc-000000000002", activationCode: "AAAAA-AAAAA-AAAAA-AAAAB",
            userId: "u", serverKeyPair: try ActivationCrypto().generateKeyPair(), counter: HashCounter.random(),
            maxFailedAttempts: 5)
        record.v4 = try V4ActivationState(algorithm: .ecP384)
        record.v4?.activationSecret = try SecureBytes.random(count: 32)
        record.v4?.devicePublicKey = try ECP384KeyPair.generate().publicKey
        record.state = .active
        try store.insert(record)
        var pending = try V4ActivationState(algorithm: .ecP384MLL5)
        let pendingSecret = try SecureBytes.random(count: 32)
        pending.activationSecret = pendingSecret
        pending.devicePublicKey = try ECP384KeyPair.generate().publicKey
        pending.confirmationPending = false
        let waiting = pending
        try store.update(activationId: record.activationId) { r in
            r.v4Upgrade = waiting
            r.v4?.keyGeneration &+= 1
        }
        let reopened = try database.open(storageKey)
        let again = try #require(try reopened.fetch(activationId: record.activationId))
        #expect(again.v4?.algorithm == .ecP384)
        #expect(again.v4?.serverKeyPair.publicKey == record.v4?.serverKeyPair.publicKey)
        #expect(Self.reveal(again.v4?.activationSecret) == Self.reveal(record.v4?.activationSecret))
        let upgrade = try #require(again.v4Upgrade)
        #expect(upgrade.algorithm == .ecP384MLL5 && upgrade.devicePublicKey == pending.devicePublicKey)
        #expect(Self.reveal(upgrade.activationSecret) == Self.reveal(pendingSecret))
        #expect(try upgrade.postQuantumKeyPair()?.publicKey == (try pending.postQuantumKeyPair()?.publicKey))
        // The confirmation makes it current; the pending part goes.
        try reopened.update(activationId: record.activationId) { r in
            r.v4 = r.v4Upgrade
            r.v4Upgrade = nil
        }
        let switched = try #require(try database.open(storageKey).fetch(activationId: record.activationId))
        #expect(switched.v4?.algorithm == .ecP384MLL5 && switched.v4Upgrade == nil)
        #expect(Self.reveal(switched.v4?.activationSecret) == Self.reveal(pendingSecret))
    }

    @Test(
        "the ML-DSA master keys: one per parameter set, stored once, sealed, the same after reopening and for a second store",
        arguments: StoreBackend.available)
    func postQuantumMasterKeys(backend: StoreBackend) throws {
        let database = try Database(backend)
        let storageKey = try SecureBytes.random(count: 32)
        let store = try database.open(storageKey)
        let second = try database.open(storageKey)
        let level3 = try store.loadOrStoreV4PostQuantumMasterKey(.mldsa65)
        let level5 = try second.loadOrStoreV4PostQuantumMasterKey(.mldsa87)
        #expect(level3.parameterSet == .mldsa65 && level3.publicKey.count == 1952)
        #expect(level5.parameterSet == .mldsa87 && level5.publicKey.count == 2592)
        #expect(try second.loadOrStoreV4PostQuantumMasterKey(.mldsa65).publicKey == level3.publicKey)
        let reopened = try database.open(storageKey)
        #expect(try reopened.loadOrStoreV4PostQuantumMasterKey(.mldsa65).publicKey == level3.publicKey)
        #expect(try reopened.loadOrStoreV4PostQuantumMasterKey(.mldsa87).publicKey == level5.publicKey)
        // The reloaded key signs what the stored public key verifies.
        let message = Array("hybrid".utf8)
        let signature = try reopened.loadOrStoreV4PostQuantumMasterKey(.mldsa65).sign(message)
        #expect(MLDSA.isValid(signature: signature, of: message, publicKey: level3.publicKey, .mldsa65))
        // Sealed: another storage key cannot open the seed.
        let stranger = try database.open(try SecureBytes.random(count: 32))
        #expect(throws: ReferenceServerError.self) { try stranger.loadOrStoreV4PostQuantumMasterKey(.mldsa65) }
    }
}
