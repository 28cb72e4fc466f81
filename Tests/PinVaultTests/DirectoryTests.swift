import Foundation
import SecureCore
import TestSupport
import Testing

@testable import PinVault

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Vault directory ownership")
struct DirectoryTests {
    func mode(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    func makeDirectory(mode: mode_t) -> String {
        let path = temporaryDirectory()
        mkdir(path, mode)
        chmod(path, mode)
        return path
    }

    func create(at path: String) throws -> PinVault {
        try PinVault.create(
            at: path, secret: secret("s"), pin: pin("1234"), parameters: testParameters, options: options())
    }

    @Test func aDirectoryTheVaultCreatedIsRemovedByDestroy() throws {
        let path = temporaryDirectory()
        let vault = try create(at: path)
        #expect(try mode(path) == 0o700)
        let report = try vault.destroy()
        #expect(report.removedDirectory)
        #expect(report.removedFiles == ["key", "vault", "failures", "created-directory", "lock"])
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func anEmptyDirectoryOfMineIsUsedAndKept() throws {
        let path = makeDirectory(mode: 0o700)
        let vault = try create(at: path)
        let report = try vault.destroy()
        #expect(!report.removedDirectory)
        #expect(report.removedFiles == ["key", "vault", "failures", "lock"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: path).isEmpty)
        #expect(try mode(path) == 0o700)
    }

    @Test func aDirectoryOpenToOthersIsRefusedAndItsModeKept() throws {
        for permissions: mode_t in [0o755, 0o750, 0o701] {
            let path = makeDirectory(mode: permissions)
            #expect(throws: VaultError.self) { try create(at: path) }
            do {
                _ = try create(at: path)
            } catch VaultError.unsuitableDirectory(let reason) {
                #expect(reason.contains("open to the group or others"))
            }
            #expect(try mode(path) == Int(permissions), "the mode of a directory the vault did not create changed")
            #expect(try FileManager.default.contentsOfDirectory(atPath: path).isEmpty)
        }
    }

    @Test func aNonEmptyDirectoryIsRefusedAndUntouched() throws {
        let path = makeDirectory(mode: 0o700)
        try Data("keep".utf8).write(to: URL(fileURLWithPath: path + "/notes.txt"))
        #expect(
            throws: VaultError.unsuitableDirectory(
                reason: "\(path) is not empty (it holds notes.txt); use a new or empty directory")
        ) {
            try create(at: path)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: path) == ["notes.txt"])
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to give a directory to another user"))
    func anotherUsersDirectoryIsRefused() throws {
        let path = makeDirectory(mode: 0o700)
        chown(path, 65534, 65534)
        #expect(throws: VaultError.unsuitableDirectory(reason: "\(path) belongs to another user")) {
            try create(at: path)
        }
    }

    @Test func destroyRemovesOnlyTheVaultsFiles() throws {
        let path = temporaryDirectory()
        let vault = try create(at: path)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: path + "/notes.txt"))
        let report = try vault.destroy()
        #expect(!report.removedDirectory)
        #expect(try FileManager.default.contentsOfDirectory(atPath: path) == ["notes.txt"])
    }
}
