import Foundation
import SecureCore
import Testing

/// What `/proc/self/maps` says of the page at `address`: readable, no-access, or not mapped (`nil`).
private func readable(_ address: UInt) -> Bool? {
    // Read to the end with read(2): the file is generated as it is read, and has no size.
    let fd = open("/proc/self/maps", O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        bytes += chunk[0..<n]
    }
    let maps = String(decoding: bytes, as: UTF8.self)
    for line in maps.split(separator: "\n") {
        let fields = line.split(separator: " ")
        let range = fields[0].split(separator: "-").compactMap { UInt($0, radix: 16) }
        guard range.count == 2, address >= range[0], address < range[1] else { continue }
        return fields[1].first == "r"
    }
    return nil
}

private func address(_ bytes: SecureBytes) -> UInt {
    bytes.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
}

// Buffers above 2 KiB get a slab of their own, so no other test's scope (tests run in parallel,
// and the server suites answer requests in scopes) can hold the pages these tests look at.
private let large = 3000

@Suite("Request scope")
struct RequestScopeTests {
    @Test("a secret made in a scope is readable until the scope ends, then no-access; its protection is whole")
    func scratchPagesCloseAtTheEnd() throws {
        let outside = try SecureBytes.random(count: large)
        let inside = try SecureMemory.withRequestScope { () throws(SecureCoreError) in
            let key = try SecureBytes(count: large)
            key.withUnsafeMutableBytes { $0[large - 1] = 0xA5 }
            #expect(readable(address(key)) == true)  // held by the scope between uses
            #expect(readable(address(outside)) == false)  // made outside: closes after each use
            return key
        }
        #expect(readable(address(inside)) == false)
        #expect(inside.withUnsafeBytes { $0[large - 1] } == 0xA5)
        #expect(inside.protection.isSuperset(of: [.guardPages, .dontDump, .noAccessWhenIdle]))
        #expect(inside.protection.contains(.locked) == outside.protection.contains(.locked))
        inside.destroy()
    }

    @Test("nested scopes: only the outermost end closes; a secret freed in the scope stays held till then")
    func nestedScopes() throws {
        let key = try SecureMemory.withRequestScope { () throws(SecureCoreError) in
            let key = try SecureBytes.random(count: large)
            let freed = try SecureBytes.random(count: large)
            let freedPage = address(freed)
            freed.destroy()
            // Empty but held: unmapped when the scope ends (checked by test_core.c:test_scope; here,
            // with tests on other threads mapping memory, the address may be reused at once).
            #expect(readable(freedPage) == true)
            try SecureMemory.withRequestScope { () throws(SecureCoreError) in
                #expect(key.withUnsafeBytes { $0.count } == large)
            }
            #expect(readable(address(key)) == true)  // the inner end closes nothing
            return key
        }
        #expect(readable(address(key)) == false)
        key.destroy()
    }

    @Test("what the body throws is rethrown as is")
    func bodyErrorRethrown() {
        #expect(throws: SecureCoreError.destroyed) {
            try SecureMemory.withRequestScope { () throws(SecureCoreError) in throw .destroyed }
        }
    }
}
