import Foundation
import SecureCore
import TestSupport
import Testing

@testable import PinVault

/// The vault records the PIN format chosen at creation (format version 2),
/// and a PIN outside it is refused before anything is counted.
@Suite("PinVault PIN format")
struct PinFormatTests {
    static let digits4to8 = VaultPinFormat(characters: .digits, minimumLength: 4, maximumLength: 8)!

    func makeFormatted(log: EventLog? = nil, policy: ThrottlePolicy = .soft()) throws -> PinVault {
        try PinVault.create(
            at: temporaryDirectory(), secret: secret("s"), pin: pin("2468"), policy: policy,
            pinFormat: Self.digits4to8, parameters: testParameters, options: options(log: log))
    }

    @Test func theFormatIsRecordedAndReportedByStatus() throws {
        let vault = try makeFormatted()
        #expect(try vault.status().pinFormat == Self.digits4to8)
        let bytes = try #require(fileBytes(vault, "vault"))
        #expect(bytes[8] == 0 && bytes[9] == 2, "format version 2")
        // Bytes 32...36: characters 1 (digits), minimum 4, maximum 8.
        #expect(Array(bytes[32...36]) == [1, 0, 4, 0, 8])
        #expect(try vault.unlock(pin: pin("2468")) { try text($0) } == "s")
    }

    @Test(arguments: ["1234567890", "24 68", "12a4", "123"])
    func aPINOutsideTheFormatIsNotCounted(_ candidate: String) throws {
        let log = EventLog()
        let vault = try makeFormatted(log: log, policy: .wipe(maxFailures: 1))
        #expect(throws: VaultError.pinOutsideFormat(Self.digits4to8)) { try vault.unlock(pin: pin(candidate)) { _ in } }
        #expect(log.all.isEmpty, "nothing counted, no key derivation")
        #expect(try vault.status().failures == 0)
        #expect(throws: VaultError.pinOutsideFormat(Self.digits4to8)) {
            try vault.changePIN(old: pin("2468"), new: pin(candidate))
        }
        #expect(log.all.isEmpty)
        #expect(try vault.unlock(pin: pin("2468")) { try text($0) } == "s")
    }

    @Test func creationRefusesAPINOutsideItsOwnFormat() throws {
        #expect(throws: VaultError.pinOutsideFormat(Self.digits4to8)) {
            try PinVault.create(
                at: temporaryDirectory(), secret: secret("s"), pin: pin("123456789"), pinFormat: Self.digits4to8,
                parameters: testParameters, options: options())
        }
    }

    @Test func editingTheRecordedFormatIsRefusedBeforeCounting() throws {
        let vault = try makeFormatted()
        var bytes = try #require(fileBytes(vault, "vault"))
        bytes[36] = 9  // maximum 8 -> 9, with a fresh checksum: the file MAC refuses it before counting
        bytes = Array(bytes.prefix(bytes.count - 32))
        bytes += try Digest.blake2b256(bytes)
        try Data(bytes).write(to: URL(fileURLWithPath: vault.directory.file("vault")))
        #expect(
            throws: VaultError.damaged(reason: "the vault file does not authenticate under its key file (edited?)")
        ) { try vault.unlock(pin: pin("2468")) { _ in } }
    }

    @Test func unknownFormatsAreDamaged() throws {
        let vault = try makeFormatted()
        let original = try #require(fileBytes(vault, "vault"))
        for (offset, value) in [(32, UInt8(0)), (32, 3), (34, 0), (36, 3), (35, 2)] {
            var bytes = original
            bytes[offset] = value
            bytes = Array(bytes.prefix(bytes.count - 32))
            bytes += try Digest.blake2b256(bytes)
            #expect(throws: VaultError.damaged(reason: "unknown PIN format")) {
                try VaultFile.decode(bytes, floor: testFloor, limits: .default)
            }
        }
    }

    @Test func admitsChecksLengthAndCharacters() throws {
        let printable = try #require(VaultPinFormat(characters: .printable, minimumLength: 2, maximumLength: 4))
        #expect(try printable.admits(pin("a b")))
        #expect(try printable.admits(pin("é€")))
        #expect(try !printable.admits(pin("a\u{7}")))
        #expect(try !printable.admits(pin("a\u{85}")))
        #expect(try !printable.admits(pin("abcde")))
        #expect(VaultPinFormat(characters: .digits, minimumLength: 0, maximumLength: 4) == nil)
        #expect(VaultPinFormat(characters: .digits, minimumLength: 5, maximumLength: 4) == nil)
        #expect(VaultPinFormat(characters: .digits, minimumLength: 1, maximumLength: 257) == nil)
    }
}
