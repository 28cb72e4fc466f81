import Foundation
import SecureCore
import Testing

/// One vector file of `Tests/Vectors/powerauth/`: every value is a string.
struct VectorFile: Decodable {
    struct Case: Decodable {
        let input: [String: String]
        let output: [String: String]
    }

    let description: String
    let data: [Case]

    /// Loads a file, found relative to this source file so tests run from any
    /// working directory of a fresh clone.
    static func load(_ name: String) throws -> VectorFile {
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Vectors/powerauth/\(name)")
        return try JSONDecoder().decode(VectorFile.self, from: Data(contentsOf: url))
    }
}

/// Test-only decoding of vector fields.
enum Vec {
    struct Missing: Error { let key: String }

    static func string(_ dict: [String: String], _ key: String) throws -> String {
        guard let value = dict[key] else { throw Missing(key: key) }
        return value
    }

    static func bytes(_ dict: [String: String], _ key: String) throws -> [UInt8] {
        guard let data = Data(base64Encoded: try string(dict, key)) else { throw Missing(key: key) }
        return [UInt8](data)
    }

    /// A vector's key material, copied into secure memory (the test's own
    /// copy is public test data).
    static func secret(_ dict: [String: String], _ key: String) throws -> SecureBytes {
        let raw = try bytes(dict, key)
        return try raw.withUnsafeBytes { try SecureBytes(copying: $0) }
    }

    static func int(_ dict: [String: String], _ key: String) throws -> Int {
        guard let value = Int(try string(dict, key)) else { throw Missing(key: key) }
        return value
    }

    /// Reads the bytes of a key in secure memory, for comparing with a vector.
    static func reveal(_ key: SecureBytes) throws -> [UInt8] {
        key.withUnsafeBytes { Array($0) }
    }
}

/// Runs `body` over every case of `file`, reports the count, and requires
/// that every case ran and that there was at least one.
func runVectors(_ file: String, _ body: (VectorFile.Case) throws -> Void) throws {
    let vectors = try VectorFile.load(file)
    var ran = 0
    for item in vectors.data {
        try body(item)
        ran += 1
    }
    print("\(file): \(ran) of \(vectors.data.count) vectors ran")
    #expect(ran == vectors.data.count)
    #expect(ran > 0)
}
