import Foundation
import SecureCore
import TestSupport
import Testing

@testable import PostQuantum

/// PowerAuth's V4 vector files (copied from upstream into `Tests/Vectors/powerauth/v4`).
enum Vectors {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Vectors/powerauth/v4")

    static func object(_ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: directory.appendingPathComponent(name))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    struct NotBase64: Error {}

    static func base64(_ text: String?) throws -> [UInt8] {
        guard let text, let data = Data(base64Encoded: text) else { throw NotBase64() }
        return [UInt8](data)
    }

    static func base64URL(_ text: String) throws -> [UInt8] {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return try base64(s)
    }
}

func secureCopy(_ bytes: [UInt8]) throws -> SecureBytes {
    let copy = try SecureBytes(count: bytes.count)
    copy.withUnsafeMutableBytes { $0.copyBytes(from: bytes) }
    return copy
}

func reveal(_ secret: SecureBytes) -> [UInt8] { secret.withUnsafeBytes { Array($0) } }

@Suite("ML-KEM (FIPS 203) through the PostQuantum module")
struct MLKEMTests {
    @Test("PowerAuth MLKEM_768_Test_Vectors.json: every decapsulation gives upstream's secret")
    func powerAuthDecapsulationVectors() throws {
        let cases = try #require(
            try Vectors.object("MLKEM_768_Test_Vectors.json")["mlkem_test_vectors"] as? [[String: String]])
        var passed = 0
        for item in cases {
            let der = try Vectors.base64(item["pqcClientPrivateKey"])
            // The pre-standard PKCS#8 layout: `04 40` and the bare 64-byte seed d ‖ z at the end.
            #expect(der.count == 84 && der[18] == 0x04 && der[19] == 0x40)
            let seed = try secureCopy(Array(der[20..<84]))
            defer { seed.destroy() }
            let keys = try MLKEM.KeyPair(.mlkem768, seed: seed)
            defer { keys.destroy() }
            let secret = try keys.decapsulate(try Vectors.base64(item["pqcCiphertext"]))
            defer { secret.destroy() }
            if reveal(secret) == (try Vectors.base64(item["sharedSecret"])) { passed += 1 }
        }
        print("MLKEM_768_Test_Vectors.json: \(passed) of \(cases.count) decapsulations match")
        #expect(passed == cases.count && passed == 100)
    }

    @Test("round trip, implicit rejection, sizes and the modulus check", arguments: MLKEM.ParameterSet.allCases)
    func roundTrip(_ set: MLKEM.ParameterSet) throws {
        let keys = try MLKEM.KeyPair.generate(set)
        defer { keys.destroy() }
        #expect(keys.encapsulationKey.count == set.encapsulationKeyByteCount)
        #expect(keys.decapsulationKey.count == set.decapsulationKeyByteCount)
        let (ciphertext, sent) = try MLKEM.encapsulate(set, to: keys.encapsulationKey)
        defer { sent.destroy() }
        let received = try keys.decapsulate(ciphertext)
        defer { received.destroy() }
        #expect(try sent.isEqual(to: received))
        // A flipped bit: the implicit-rejection secret, the same each time, never the sender's.
        var flipped = ciphertext
        flipped[17] ^= 0x01
        let rejected = try keys.decapsulate(flipped)
        defer { rejected.destroy() }
        let again = try keys.decapsulate(flipped)
        defer { again.destroy() }
        #expect(try !rejected.isEqual(to: sent))
        #expect(try rejected.isEqual(to: again))
        #expect(throws: PostQuantumError.invalidSize(expected: set.ciphertextByteCount, actual: 5)) {
            try keys.decapsulate([1, 2, 3, 4, 5])
        }
        // FIPS 203 7.2: a 12-bit coefficient of q or more is not an encapsulation key.
        var bad = keys.encapsulationKey
        bad[0] = 0xFF
        bad[1] |= 0x0F
        #expect(throws: PostQuantumError.invalidKey) { _ = try MLKEM.encapsulate(set, to: bad) }
        // Deterministic from the seed, and with an explicit m.
        let seed = try SecureBytes.random(count: MLKEM.seedByteCount)
        defer { seed.destroy() }
        let one = try MLKEM.KeyPair(set, seed: seed)
        let two = try MLKEM.KeyPair(set, seed: seed)
        defer {
            one.destroy()
            two.destroy()
        }
        #expect(one.encapsulationKey == two.encapsulationKey)
        #expect(try one.decapsulationKey.isEqual(to: two.decapsulationKey))
        let m = try SecureBytes.random(count: 32)
        defer { m.destroy() }
        let first = try MLKEM.encapsulate(set, to: one.encapsulationKey, message: m)
        let second = try MLKEM.encapsulate(set, to: one.encapsulationKey, message: m)
        defer {
            first.sharedSecret.destroy()
            second.sharedSecret.destroy()
        }
        #expect(first.ciphertext == second.ciphertext)
        #expect(try first.sharedSecret.isEqual(to: second.sharedSecret))
    }

    @Test("SubjectPublicKeyInfo of an encapsulation key", arguments: MLKEM.ParameterSet.allCases)
    func publicKeyInfo(_ set: MLKEM.ParameterSet) throws {
        let keys = try MLKEM.KeyPair.generate(set)
        defer { keys.destroy() }
        let der = keys.encapsulationKeyInfo
        #expect(der.count == 22 + set.encapsulationKeyByteCount)
        // "MIIEsj…" is how an ML-KEM-768 key starts in upstream's documents.
        if set == .mlkem768 { #expect(Data(der).base64EncodedString().hasPrefix("MIIEsjALBglghkgBZQMEBAID")) }
        #expect(try MLKEM.encapsulationKey(set, fromPublicKeyInfo: der) == keys.encapsulationKey)
        var wrongOID = der
        wrongOID[16] ^= 0x01
        #expect(throws: PostQuantumError.malformedPublicKeyInfo) {
            _ = try MLKEM.encapsulationKey(set, fromPublicKeyInfo: wrongOID)
        }
        #expect(throws: PostQuantumError.malformedPublicKeyInfo) {
            _ = try MLKEM.encapsulationKey(set, fromPublicKeyInfo: Array(der.dropLast()))
        }
    }
}

@Suite("ML-DSA (FIPS 204) through the PostQuantum module")
struct MLDSATests {
    @Test("PowerAuth TemporaryKeyTest_JWS_Vectors.json: upstream's ML-DSA-65 JWS signature verifies")
    func powerAuthJWSSignature() throws {
        let cases = try #require(
            try Vectors.object("TemporaryKeyTest_JWS_Vectors.json")["cases"] as? [[String: String]])
        var verified = 0
        for item in cases {
            guard let info = item["publicKeyMlDsa65"], let response = item["responsePayload"] else { continue }
            let publicKey = try MLDSA.publicKey(.mldsa65, fromPublicKeyInfo: try Vectors.base64(info))
            let object = try #require(try JSONSerialization.jsonObject(with: Data(response.utf8)) as? [String: Any])
            let payload = try #require(object["payload"] as? String)
            let signatures = try #require(object["signatures"] as? [[String: String]])
            for entry in signatures where entry["protected"] == "eyJhbGciOiJNTC1EU0EtNjUifQ" {
                let signature = try Vectors.base64URL(try #require(entry["signature"]))
                let input = Array("\(entry["protected"] ?? "").\(payload)".utf8)
                #expect(MLDSA.isValid(signature: signature, of: input, publicKey: publicKey, .mldsa65))
                #expect(!MLDSA.isValid(signature: signature, of: input + [0x2E], publicKey: publicKey, .mldsa65))
                #expect(!MLDSA.isValid(signature: signature, of: input, context: [1], publicKey: publicKey, .mldsa65))
                verified += 1
            }
        }
        print("TemporaryKeyTest_JWS_Vectors.json: \(verified) ML-DSA-65 signature verified")
        #expect(verified == 1)
    }

    @Test("sign and verify, deterministic and hedged, refusals", arguments: MLDSA.ParameterSet.allCases)
    func signVerify(_ set: MLDSA.ParameterSet) throws {
        let keys = try MLDSA.KeyPair.generate(set)
        defer { keys.destroy() }
        let message = Array("PowerAuth V4 temporary key".utf8)
        let context = Array("ctx".utf8)
        let hedged = try keys.sign(message, context: context)
        #expect(hedged.count == set.signatureByteCount)
        #expect(MLDSA.isValid(signature: hedged, of: message, context: context, publicKey: keys.publicKey, set))
        #expect(!MLDSA.isValid(signature: hedged, of: message, publicKey: keys.publicKey, set))
        #expect(try keys.sign(message, context: context) != hedged)
        let one = try keys.sign(message, variant: .deterministic)
        #expect(try keys.sign(message, variant: .deterministic) == one)
        #expect(MLDSA.isValid(signature: one, of: message, publicKey: keys.publicKey, set))
        var flipped = one
        flipped[100] ^= 0x80
        #expect(!MLDSA.isValid(signature: flipped, of: message, publicKey: keys.publicKey, set))
        #expect(!MLDSA.isValid(signature: Array(one.dropLast()), of: message, publicKey: keys.publicKey, set))
        #expect(throws: PostQuantumError.invalidSize(expected: 255, actual: 256)) {
            _ = try keys.sign(message, context: [UInt8](repeating: 0, count: 256))
        }
        // From a seed: the same key pair each time; the SubjectPublicKeyInfo round trip.
        let seed = try SecureBytes.random(count: MLDSA.seedByteCount)
        defer { seed.destroy() }
        let a = try MLDSA.KeyPair(set, seed: seed)
        let b = try MLDSA.KeyPair(set, seed: seed)
        defer {
            a.destroy()
            b.destroy()
        }
        #expect(a.publicKey == b.publicKey)
        #expect(try MLDSA.publicKey(set, fromPublicKeyInfo: a.publicKeyInfo) == a.publicKey)
        if set == .mldsa65 { #expect(Data(a.publicKeyInfo).base64EncodedString().hasPrefix("MIIHsj")) }
        if set == .mldsa87 { #expect(Data(a.publicKeyInfo).base64EncodedString().hasPrefix("MIIKMj")) }
        let short = try secureCopy([1, 2, 3])
        defer { short.destroy() }
        #expect(throws: PostQuantumError.invalidSize(expected: 32, actual: 3)) {
            _ = try MLDSA.KeyPair(set, seed: short)
        }
    }

    @Test("descriptions of key pairs do not show the signing or decapsulation key")
    func redacted() throws {
        let dsa = try MLDSA.KeyPair.generate(.mldsa65)
        defer { dsa.destroy() }
        let kem = try MLKEM.KeyPair.generate(.mlkem768)
        defer { kem.destroy() }
        #expect(String(describing: dsa) == "MLDSA.KeyPair(mldsa65, signing key redacted)")
        #expect(String(reflecting: kem) == "MLKEM.KeyPair(mlkem768, decapsulation key redacted)")
        #expect(Mirror(reflecting: dsa).children.map(\.label) == ["parameterSet"])
        #expect(Mirror(reflecting: kem).children.map(\.label) == ["parameterSet"])
    }
}
