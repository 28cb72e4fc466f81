import SecureCore
import Testing

@Suite("SecureBytes")
struct SecureBytesTests {
    @Test func zeroFilledAndWritable() throws {
        let key = try SecureBytes(count: 32)
        #expect(key.count == 32)
        #expect(key.withUnsafeBytes { $0.allSatisfy { $0 == 0 } })
        key.withUnsafeMutableBytes { $0[0] = 7 }
        #expect(key.withUnsafeBytes { $0[0] } == 7)
    }

    @Test func randomBytesDiffer() throws {
        let a = try SecureBytes.random(count: 32)
        let b = try SecureBytes.random(count: 32)
        #expect(try !a.isEqual(to: b))
        #expect(try a.isEqual(to: a))
        #expect(a.withUnsafeBytes { !$0.allSatisfy { $0 == 0 } })
    }

    @Test func constantTimeEquality() throws {
        let a = try [UInt8](1...16).withUnsafeBytes { try SecureBytes(copying: $0) }
        let b = try [UInt8](1...16).withUnsafeBytes { try SecureBytes(copying: $0) }
        let c = try [UInt8](1...17).withUnsafeBytes { try SecureBytes(copying: $0) }
        #expect(try a.isEqual(to: b))
        #expect(try !a.isEqual(to: c))
    }

    @Test(arguments: [0, -1, 16 * 1024 * 1024 + 1])
    func invalidSizes(count: Int) {
        #expect(throws: SecureCoreError.invalidSize(count)) { try SecureBytes(count: count) }
    }

    @Test("copy() gives independent bytes in new secure memory")
    func copyIsIndependent() throws {
        let original = try SecureBytes.random(count: 48)
        let copy = try original.copy()
        #expect(copy !== original)
        #expect(try copy.isEqual(to: original))
        #expect(copy.protection == original.protection)
        copy.withUnsafeMutableBytes { $0[0] ^= 0xFF }
        #expect(try !copy.isEqual(to: original))
        original.destroy()
        #expect(copy.withUnsafeBytes { $0.count } == 48)
        #expect(throws: SecureCoreError.destroyed) { try original.copy() }
    }

    @Test func largeBuffer() throws {
        let big = try SecureBytes.random(count: 1 << 20)
        #expect(big.count == 1 << 20)
        #expect(big.protection.contains(.guardPages))
    }

    @Test func destroyedBufferThrows() throws {
        let key = try SecureBytes.random(count: 16)
        key.destroy()
        #expect(key.isDestroyed)
        #expect(throws: SecureCoreError.destroyed) { try key.isEqual(to: key) }
        #expect(key.protection == [])
    }

    @Test("reading or writing a destroyed buffer stops the process (a precondition)")
    func destroyedBufferAccessorsTrap() async {
        await #expect(processExitsWith: .failure) {
            let key = try SecureBytes.random(count: 16)
            key.destroy()
            _ = key.withUnsafeBytes { $0.count }
        }
        await #expect(processExitsWith: .failure) {
            let key = try SecureBytes.random(count: 16)
            key.destroy()
            key.withUnsafeMutableBytes { $0[0] = 1 }
        }
        await #expect(processExitsWith: .success) {
            let key = try SecureBytes.random(count: 16)
            _ = key.withUnsafeBytes { $0.count }
            key.destroy()
        }
    }

    @Test func descriptionIsRedacted() throws {
        let key = try [UInt8](repeating: 0x41, count: 8).withUnsafeBytes { try SecureBytes(copying: $0) }
        #expect(String(describing: key) == "SecureBytes(8 bytes, redacted)")
        #expect(!String(reflecting: key).contains("A"))
        #expect(Mirror(reflecting: key).children.count == 1)
    }
}
