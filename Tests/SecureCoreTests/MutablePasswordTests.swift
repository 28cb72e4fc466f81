import SecureCore
import Testing

/// Reveals a password's content as code points (test-only helper: the test
/// owns the expected values anyway).
func scalars(of password: Password) throws -> [UInt32] {
    password.withUnsafeUTF8Bytes { bytes in
        String(decoding: bytes, as: UTF8.self).unicodeScalars.map(\.value)
    }
}

func scalars(of password: MutablePassword) throws -> [UInt32] {
    let copy = try password.copyToImmutable()
    defer { copy.destroy() }
    return try scalars(of: copy)
}

func makePassword(_ values: [UInt32]) throws -> MutablePassword {
    let pw = try MutablePassword()
    for v in values { try pw.addCharacter(v) }
    return pw
}

@Suite("MutablePassword")
struct MutablePasswordTests {
    @Test func addAndRemoveLast() throws {
        let pw = try MutablePassword()
        #expect(pw.length == 0)
        try pw.addCharacter(0x31)
        try pw.addCharacter(UInt32(0x30 + 2))
        try pw.addCharacter("a" as Unicode.Scalar)
        #expect(pw.length == 3)
        #expect(try scalars(of: pw) == [0x31, 0x32, 0x61])
        try pw.removeLastCharacter()
        #expect(try scalars(of: pw) == [0x31, 0x32])
    }

    @Test func insertAtZeroMiddleAndEnd() throws {
        let pw = try makePassword([0x31, 0x32, 0x33])
        try pw.insertCharacter(0x78, at: 0)
        try pw.insertCharacter(0x79, at: 4)
        try pw.insertCharacter("z" as Unicode.Scalar, at: 2)
        #expect(try scalars(of: pw) == [0x78, 0x31, 0x7A, 0x32, 0x33, 0x79])
        try pw.removeCharacter(at: 0)
        try pw.removeCharacter(at: 4)
        #expect(try scalars(of: pw) == [0x31, 0x7A, 0x32, 0x33])
    }

    @Test func outOfRangeLeavesPasswordUnchanged() throws {
        let pw = try makePassword([0x31, 0x32])
        #expect(throws: SecureCoreError.indexOutOfRange(index: 3, length: 2)) { try pw.insertCharacter(0x33, at: 3) }
        #expect(throws: SecureCoreError.indexOutOfRange(index: -1, length: 2)) { try pw.insertCharacter(0x33, at: -1) }
        #expect(throws: SecureCoreError.indexOutOfRange(index: 2, length: 2)) { try pw.removeCharacter(at: 2) }
        #expect(throws: SecureCoreError.indexOutOfRange(index: -5, length: 2)) { try pw.removeCharacter(at: -5) }
        #expect(try scalars(of: pw) == [0x31, 0x32])
        try pw.clear()
        #expect(throws: SecureCoreError.self) { try pw.removeLastCharacter() }
        #expect(pw.length == 0)
    }

    @Test(arguments: [UInt32(0xD800), 0xDBFF, 0xDC00, 0xDFFF, 0x11_0000, 0xFFFF_FFFF])
    func invalidCodePointIsRejectedWithoutChange(value: UInt32) throws {
        let pw = try makePassword([0x41])
        #expect(throws: SecureCoreError.invalidCodePoint) { try pw.addCharacter(value) }
        #expect(throws: SecureCoreError.invalidCodePoint) { try pw.insertCharacter(value, at: 0) }
        #expect(try scalars(of: pw) == [0x41])
    }

    @Test func nonBMPAndEveryUTF8Width() throws {
        let values: [UInt32] = [0x24, 0xA2, 0x20AC, 0x1_0348, 0x1F600, 0x10_FFFF, 0]
        let pw = try makePassword(values)
        #expect(pw.length == values.count)
        let immutable = try pw.copyToImmutable()
        let utf8 = immutable.withUnsafeUTF8Bytes { Array($0) }
        var expected: [UInt8] = []
        for v in values { expected += Array(String(Unicode.Scalar(v)!).utf8) }
        #expect(utf8 == expected)
    }

    @Test func equalityIsByContentAndLength() throws {
        let a = try makePassword([0x31, 0x32, 0x33, 0x34])
        let b = try makePassword([0x31, 0x32, 0x33, 0x34])
        let c = try makePassword([0x31, 0x32, 0x33])
        let d = try makePassword([0x31, 0x32, 0x33, 0x35])
        let empty1 = try MutablePassword()
        let empty2 = try MutablePassword()
        #expect(try a.isEqual(to: b))
        #expect(try !a.isEqual(to: c))
        #expect(try !c.isEqual(to: a))
        #expect(try !a.isEqual(to: d))
        #expect(try empty1.isEqual(to: empty2))
        #expect(try a.isEqual(to: a))
        #expect(try a.isEqual(to: b.copyToImmutable()))
    }

    @Test func copyToImmutableIsIndependent() throws {
        let pw = try makePassword([0x39, 0x38])
        let copy = try pw.copyToImmutable()
        try pw.clear()
        try pw.addCharacter(0x30)
        #expect(try scalars(of: copy) == [0x39, 0x38])
        pw.destroy()
        #expect(try scalars(of: copy) == [0x39, 0x38])
    }

    @Test func useAfterDestroyThrows() throws {
        let pw = try makePassword([0x31])
        pw.destroy()
        pw.destroy()
        #expect(pw.isDestroyed)
        #expect(pw.length == 0)
        #expect(pw.protection == [])
        #expect(throws: SecureCoreError.destroyed) { try pw.addCharacter(0x31) }
        #expect(throws: SecureCoreError.destroyed) { try pw.insertCharacter(0x31, at: 0) }
        #expect(throws: SecureCoreError.destroyed) { try pw.removeCharacter(at: 0) }
        #expect(throws: SecureCoreError.destroyed) { try pw.removeLastCharacter() }
        #expect(throws: SecureCoreError.destroyed) { try pw.clear() }
        #expect(throws: SecureCoreError.destroyed) { try pw.copyToImmutable() }
        #expect(throws: SecureCoreError.destroyed) { try pw.isEqual(to: MutablePassword()) }
    }

    @Test func maximumLength() throws {
        let pw = try MutablePassword()
        for _ in 0..<1024 { try pw.addCharacter(0x61) }
        #expect(throws: SecureCoreError.tooLong(maximum: 1024)) { try pw.addCharacter(0x61) }
        #expect(pw.length == 1024)
    }

    @Test func descriptionAndMirrorAreRedacted() throws {
        let pw = try makePassword([0x37, 0x33, 0x39, 0x31])
        let texts = [
            String(describing: pw), String(reflecting: pw), "\(pw)",
            String(describing: Mirror(reflecting: pw).children.map { "\($0.label ?? ""):\($0.value)" }),
        ]
        for text in texts {
            #expect(!text.contains("7391"))
            #expect(!text.contains("7"))
        }
        #expect(String(describing: pw) == "MutablePassword(4 characters, redacted)")
        pw.destroy()
        #expect(String(describing: pw) == "MutablePassword(destroyed)")
    }

    @Test func protectionIsReported() throws {
        let pw = try MutablePassword()
        #expect(pw.protection.contains(.guardPages))
        #expect(pw.protection.contains(.dontDump))
        #expect(pw.protection.protectsAgainstFork)
    }
}
