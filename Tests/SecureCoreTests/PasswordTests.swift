import SecureCore
import Testing

@Suite("Password")
struct PasswordTests {
    func utf8Bytes(_ bytes: [UInt8]) throws -> SecureBytes {
        try bytes.withUnsafeBytes { try SecureBytes(copying: $0) }
    }

    @Test func fromSecureUTF8Bytes() throws {
        let bytes = try utf8Bytes([0x61, 0xC3, 0xA9, 0xF0, 0x9F, 0x98, 0x80])
        let pw = try Password(utf8: bytes)
        #expect(pw.length == 3)
        #expect(try scalars(of: pw) == [0x61, 0xE9, 0x1F600])
        let prefix = try Password(utf8: bytes, count: 1)
        #expect(try scalars(of: prefix) == [0x61])
    }

    @Test(arguments: [
        [UInt8(0xC0), 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82], [0x80], [0xFF],
    ])
    func malformedUTF8IsRejected(bytes: [UInt8]) throws {
        #expect(throws: SecureCoreError.malformedUTF8) { try Password(utf8: utf8Bytes(bytes)) }
    }

    @Test func countOutsideTheBufferIsRejected() throws {
        let bytes = try utf8Bytes([0x61])
        #expect(throws: SecureCoreError.invalidSize(2)) { try Password(utf8: bytes, count: 2) }
        #expect(throws: SecureCoreError.invalidSize(-1)) { try Password(utf8: bytes, count: -1) }
    }

    @Test func secureClearEmptiesAndDestroyEnds() throws {
        let pw = try makePassword([0x31, 0x32]).copyToImmutable()
        pw.secureClear()
        #expect(pw.length == 0)
        #expect(pw.withUnsafeUTF8Bytes { $0.count } == 0)
        pw.destroy()
        #expect(pw.isDestroyed)
        #expect(throws: SecureCoreError.destroyed) { try pw.isEqual(to: pw) }
    }

    @Test("revealing a destroyed password stops the process (a precondition)")
    func destroyedPasswordRevealTraps() async {
        await #expect(processExitsWith: .failure) {
            let pw = try makePassword([0x31, 0x32]).copyToImmutable()
            pw.destroy()
            _ = pw.withUnsafeUTF8Bytes { $0.count }
        }
        await #expect(processExitsWith: .success) {
            let pw = try makePassword([0x31, 0x32]).copyToImmutable()
            _ = pw.withUnsafeUTF8Bytes { $0.count }
            pw.destroy()
        }
    }

    @Test func errorThrownInsideTheClosurePropagates() throws {
        struct Marker: Error {}
        let pw = try makePassword([0x31]).copyToImmutable()
        #expect(throws: Marker.self) { try pw.withUnsafeUTF8Bytes { _ in throw Marker() } }
        #expect(try scalars(of: pw) == [0x31])  // still usable afterwards
    }

    @Test func closureMayUseThePasswordAgain() throws {
        let pw = try makePassword([0x31, 0x32]).copyToImmutable()
        let nested = try pw.withUnsafeUTF8Bytes { _ in try pw.isEqual(to: pw) && pw.length == 2 }
        #expect(nested)
    }

    @Test func sharedAcrossTasks() async throws {
        let pw = try makePassword([0x35, 0x36]).copyToImmutable()
        let counts = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<8 { group.addTask { pw.withUnsafeUTF8Bytes { $0.count } } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(counts == Array(repeating: 2, count: 8))
    }

    @Test func descriptionIsRedacted() throws {
        let pw = try makePassword([0x34, 0x32]).copyToImmutable()
        #expect(String(describing: pw) == "Password(2 characters, redacted)")
        #expect(!String(reflecting: pw).contains("4"))
    }
}
