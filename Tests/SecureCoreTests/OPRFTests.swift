import Foundation
import Testing

@_spi(Testing) @testable import SecureCore

/// RFC 9497's ristretto255-SHA512 OPRF-mode vectors (Appendix A.1.1), read from
/// `Tests/Vectors/oprf/`, through the Swift face of the C core.
@Suite("OPRF (RFC 9497, ristretto255-SHA512)")
struct OPRFTests {
    /// One section of the vector file: its "Key = hex" fields.
    struct Section {
        let kind: String
        var fields: [String: [UInt8]] = [:]
    }

    static func unhex(_ s: Substring) -> [UInt8]? {
        guard s.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex {
            let j = s.index(i, offsetBy: 2)
            guard let byte = UInt8(s[i..<j], radix: 16) else { return nil }
            out.append(byte)
            i = j
        }
        return out
    }

    static func sections() throws -> [Section] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Vectors/oprf/rfc9497-ristretto255-sha512-oprf.txt")
        var sections: [Section] = []
        for line in try String(contentsOf: url, encoding: .utf8).split(separator: "\n") {
            if line.hasPrefix("[") {
                sections.append(Section(kind: String(line.dropFirst().dropLast())))
            } else if let eq = line.range(of: " = "), !sections.isEmpty {
                let value = try #require(unhex(line[eq.upperBound...]))
                sections[sections.count - 1].fields[String(line[..<eq.lowerBound])] = value
            }
        }
        return sections
    }

    func field(_ section: Section, _ key: String) throws -> [UInt8] { try #require(section.fields[key]) }

    @Test func rfc9497Vectors() throws {
        let sections = try Self.sections()
        let keySection = try #require(sections.first { $0.kind == "key" })
        let seed = try secureBytes(try field(keySection, "Seed"))
        let key = try OPRF.deriveKey(seed: seed, info: try field(keySection, "KeyInfo"))
        let wantKey = try field(keySection, "skSm")
        #expect(key.withUnsafeBytes { Array($0) } == wantKey)
        var passed = 0
        let vectors = sections.filter { $0.kind == "vector" }
        for vector in vectors {
            let input = try secureBytes(try field(vector, "Input"))
            let blind = try secureBytes(try field(vector, "Blind"))
            let blinded = try OPRF.blind(input, with: blind)
            let evaluated = try OPRF.blindEvaluate(blinded, key: key)
            let output = try OPRF.finalize(input, blind: blind, evaluated: evaluated)
            let wantBlinded = try field(vector, "BlindedElement")
            let wantEvaluated = try field(vector, "EvaluationElement")
            let wantOutput = try field(vector, "Output")
            let ok =
                blinded == wantBlinded && evaluated == wantEvaluated
                && output.withUnsafeBytes { Array($0) } == wantOutput
            #expect(ok)
            if ok { passed += 1 }
        }
        print("RFC 9497 ristretto255-SHA512 OPRF vectors (Swift): 1 key derivation, \(passed)/\(vectors.count) passed")
        #expect(vectors.count == 2)
        #expect(passed == vectors.count)
    }

    @Test func randomBlindGivesTheSameOutput() throws {
        let key = try OPRF.deriveKey(seed: try SecureBytes.random(count: 32), info: Array("vault".utf8))
        let input = try secureBytes(Array("482916".utf8))
        let first = try OPRF.randomBlind()
        let second = try OPRF.randomBlind()
        let blindedFirst = try OPRF.blind(input, with: first)
        let blindedSecond = try OPRF.blind(input, with: second)
        #expect(blindedFirst != blindedSecond)
        let outFirst = try OPRF.finalize(
            input, blind: first, evaluated: try OPRF.blindEvaluate(blindedFirst, key: key))
        let outSecond = try OPRF.finalize(
            input, blind: second, evaluated: try OPRF.blindEvaluate(blindedSecond, key: key))
        #expect(try outFirst.isEqual(to: outSecond))
        let other = try secureBytes(Array("482917".utf8))
        let outOther = try OPRF.finalize(
            other, blind: first, evaluated: try OPRF.blindEvaluate(try OPRF.blind(other, with: first), key: key))
        #expect(try !outFirst.isEqual(to: outOther))
    }

    @Test func invalidElementsAreRefused() throws {
        let key = try OPRF.deriveKey(seed: try SecureBytes.random(count: 32), info: [])
        #expect(throws: SecureCoreError.invalidKey) {
            try OPRF.blindEvaluate([UInt8](repeating: 0, count: 32), key: key)
        }
        #expect(throws: SecureCoreError.invalidKey) {
            try OPRF.blindEvaluate([UInt8](repeating: 0xFF, count: 32), key: key)
        }
        #expect(throws: SecureCoreError.invalidKey) { try OPRF.blindEvaluate([1, 2, 3], key: key) }
        let input = try secureBytes([1, 2, 3, 4])
        #expect(throws: SecureCoreError.invalidKey) {
            try OPRF.finalize(input, blind: try OPRF.randomBlind(), evaluated: [UInt8](repeating: 0, count: 32))
        }
        #expect(throws: SecureCoreError.sizeMismatch(expected: 32, actual: 16)) {
            try OPRF.deriveKey(seed: try SecureBytes.random(count: 16), info: [])
        }
    }
}
