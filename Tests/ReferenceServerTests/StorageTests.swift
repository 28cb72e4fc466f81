import Activation
import ActivationServer
import Foundation
import PowerAuthProtocol
import ReferenceServer
import SQLiteStore
import SecureCore
import TestSupport
import Testing

@Suite("SQLite storage: keys sealed at rest, key file, schema")
struct StorageTests {
    @Test("the key file is created 0600 and a group-readable one is refused")
    func keyFileMode() throws {
        let directory = try temporaryDirectory()
        let path = directory + "/k.key"
        let key = try ServerKeyFile.loadOrCreate(at: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let again = try ServerKeyFile.load(at: path)
        #expect(try again.isEqual(to: key))
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: path)
        #expect(throws: ReferenceServerError.self) { try ServerKeyFile.load(at: path) }
    }

    @Test("private keys are sealed: another key file cannot open the database's records")
    func sealedAtRest() async throws {
        let s = try InProcessServer()
        let (_, id) = try await s.activeDevice()
        s.server.stop()
        let database = try SQLiteDatabase(path: s.directory + "/server.sqlite")
        let row = try #require(
            try database.query(
                "SELECT server_public_key, server_private_sealed, server_private_nonce FROM activation WHERE id = ?",
                [.text(id)]
            ).first)
        let sealed = try #require(row[1].bytes)
        #expect(sealed.count == 32 + 16)  // a P-256 scalar plus the Poly1305 tag
        #expect(try #require(row[2].bytes).count == 24)
        let otherKey = try SecureBytes.random(count: 32)
        let stranger = try SQLiteActivationStore(path: s.directory + "/server.sqlite", storageKey: otherKey)
        // The record's plain columns read (they are not secret); its key does not open.
        let read = try #require(try stranger.fetch(activationId: id))
        #expect(throws: ActivationServerError.self) { try read.serverPrivateKey.key() }
        let owner = try SQLiteActivationStore(
            path: s.directory + "/server.sqlite",
            storageKey: try ServerKeyFile.load(at: s.directory + "/server.sqlite.key"))
        let owned = try #require(try owner.fetch(activationId: id))
        #expect(owned.state == .active)
        #expect(try owned.serverPrivateKey.key().count == 32)
    }

    @Test("a database from a newer schema is refused and left untouched")
    func newerSchema() throws {
        let directory = try temporaryDirectory()
        let path = directory + "/server.sqlite"
        let database = try SQLiteDatabase(path: path)
        try database.execute("PRAGMA user_version = \(SQLiteActivationStore.schemaVersion + 1)")
        let key = try SecureBytes.random(count: 32)
        #expect(throws: ReferenceServerError.self) { try SQLiteActivationStore(path: path, storageKey: key) }
        #expect(try database.userVersion() == SQLiteActivationStore.schemaVersion + 1)
    }
}
