import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore
import Testing

@Suite("PowerAuth V4 hybrid vectors (P-384 + ML-KEM-768)")
struct V4HybridVectorTests {
    /// The file's ECDH and ML-KEM steps are still the final protocol's KEMs; its combining step is
    /// the May-2025 `KDF(ECDH_X ‖ ML-KEM secret, "shared-secret/ec-p384-ml-l3")`, not the final
    /// salted KMAC, so only the KEM steps say anything about the final protocol.
    @Test("ECDHE_P384_MLKEM_768: the ECDH and ML-KEM-768 steps (its combining KDF step is the OBSOLETE May-2025 one)")
    func kemStepsOfTheObsoleteHybridDerivation() throws {
        try V4Vectors.run("ECDHE_P384_MLKEM_768_Test_Vectors.json", " (ECDH + ML-KEM-768, obsolete KDF step)") { item in
            let pair = try ECP384KeyPair(privateKey: try V4Vectors.secret(item, "ecClientPrivateKey"))
            let x = try pair.sharedSecret(with: try V4Vectors.bytes(item, "ecServerPublicKey"))
            defer { x.destroy() }
            let der = try V4Vectors.bytes(item, "pqcClientPrivateKey")
            // The pre-standard PKCS#8: `04 40` and the bare 64-byte seed d ‖ z at the end.
            #expect(der.count == 84 && der[18] == 0x04 && der[19] == 0x40)
            let seed = try Array(der[20..<84]).withUnsafeBytes { try SecureBytes(copying: $0) }
            defer { seed.destroy() }
            let kem = try MLKEM.KeyPair(.mlkem768, seed: seed)
            defer { kem.destroy() }
            let ss = try kem.decapsulate(try V4Vectors.bytes(item, "pqcCiphertext"))
            defer { ss.destroy() }
            let joined = try SecureBytes(count: x.count + ss.count)
            defer { joined.destroy() }
            joined.withUnsafeMutableBytes { out in
                x.withUnsafeBytes { out.copyMemory(from: $0) }
                ss.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[x.count...]).copyMemory(from: $0) }
            }
            let legacy = try V4KDF.derive(joined, label: "shared-secret/ec-p384-ml-l3")
            defer { legacy.destroy() }
            #expect(V4Vectors.reveal(legacy) == (try V4Vectors.bytes(item, "sharedSecret")))
        }
    }
}
