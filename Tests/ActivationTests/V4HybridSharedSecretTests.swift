import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore
import Testing

@Suite("V4 shared secret, hybrid suites (P-384 DHKEM + ML-KEM) — spec only: no upstream vector of the final combiner")
struct V4HybridSharedSecretTests {
    static func reveal(_ s: SecureBytes) -> [UInt8] { s.withUnsafeBytes { Array($0) } }

    static func secure(_ bytes: [UInt8]) throws -> SecureBytes {
        try bytes.withUnsafeBytes { try SecureBytes(copying: $0) }
    }

    @Test(
        "client and server agree; the request carries the SPKI, the response the raw ciphertext",
        arguments: [(ProtocolAlgorithm.ecP384MLL3, MLKEM.ParameterSet.mlkem768), (.ecP384MLL5, .mlkem1024)])
    func exchange(_ algorithm: ProtocolAlgorithm, _ set: MLKEM.ParameterSet) throws {
        let (context, request) = try V4SharedSecret.makeRequest(algorithm: algorithm)
        defer { context.destroy() }
        #expect(request.algorithm == algorithm.rawValue)
        #expect(request.encapsulationKeys.count == 2)
        let info = try #require(Data(base64Encoded: request.encapsulationKeys[1]))
        #expect(info.count == 22 + set.encapsulationKeyByteCount)
        if set == .mlkem768 { #expect(request.encapsulationKeys[1].hasPrefix("MIIEsj")) }
        let (response, serverSecret) = try V4SharedSecret.respond(to: request, algorithm: algorithm)
        defer { serverSecret.destroy() }
        #expect(response.encapsulatedKeys.count == 2)
        #expect(Data(base64Encoded: response.encapsulatedKeys[0])?.count == 97)
        #expect(Data(base64Encoded: response.encapsulatedKeys[1])?.count == set.ciphertextByteCount)
        let clientSecret = try V4SharedSecret.finish(context, response: response)
        defer { clientSecret.destroy() }
        #expect(Self.reveal(clientSecret) == Self.reveal(serverSecret))
        // A flipped bit in the ML-KEM ciphertext: implicit rejection, so the secrets differ.
        var ciphertext = [UInt8](try #require(Data(base64Encoded: response.encapsulatedKeys[1])))
        ciphertext[5] ^= 0x01
        let tampered = V4SharedSecretResponse(
            salt: response.salt,
            encapsulatedKeys: [response.encapsulatedKeys[0], Data(ciphertext).base64EncodedString()])
        let other = try V4SharedSecret.finish(context, response: tampered)
        defer { other.destroy() }
        #expect(Self.reveal(other) != Self.reveal(serverSecret))
    }

    @Test("the combiner input has both secrets, each with its length, and the suite's name")
    func combinerLayout() throws {
        let dh = [UInt8](repeating: 0xA1, count: 48)
        let pq = [UInt8](repeating: 0xB2, count: 32)
        let x = Self.reveal(
            try V4SharedSecret.combinerInput(
                kemSecrets: [try Self.secure(dh), try Self.secure(pq)], algorithm: .ecP384MLL3))
        let label = Array("shared-secret/EC_P384_ML_L3".utf8)
        let expected: [UInt8] =
            [0, 0, 0, 1] + [0, 0, 0, 48] + dh + [0, 0, 0, 32] + pq + [0, 0, 0, UInt8(label.count)] + label
            + [0, 0, 0, 3] + Array("4.0".utf8)
        #expect(x == expected)
    }

    @Test("refusals: a missing or malformed ML-KEM key, a suite mismatch, a short ciphertext")
    func refusals() throws {
        let (context, request) = try V4SharedSecret.makeRequest(algorithm: .ecP384MLL3)
        defer { context.destroy() }
        let dhOnly = V4SharedSecretRequest(
            algorithm: "EC_P384_ML_L3", encapsulationKeys: [request.encapsulationKeys[0]])
        #expect(throws: ProtocolError.self) { _ = try V4SharedSecret.respond(to: dhOnly, algorithm: .ecP384MLL3) }
        // An ML-KEM-768 key offered for the ML-KEM-1024 suite: its SPKI does not match.
        let wrongSet = V4SharedSecretRequest(algorithm: "EC_P384_ML_L5", encapsulationKeys: request.encapsulationKeys)
        #expect(throws: ProtocolError.invalidKey(field: "encapsulationKeys")) {
            _ = try V4SharedSecret.respond(to: wrongSet, algorithm: .ecP384MLL5)
        }
        // FIPS 203's modulus check on the key inside the SPKI.
        var der = [UInt8](try #require(Data(base64Encoded: request.encapsulationKeys[1])))
        der[22] = 0xFF
        der[23] |= 0x0F
        let outOfRange = V4SharedSecretRequest(
            algorithm: "EC_P384_ML_L3",
            encapsulationKeys: [request.encapsulationKeys[0], Data(der).base64EncodedString()])
        #expect(throws: ProtocolError.invalidKey(field: "encapsulationKeys")) {
            _ = try V4SharedSecret.respond(to: outOfRange, algorithm: .ecP384MLL3)
        }
        #expect(throws: ProtocolError.self) { _ = try V4SharedSecret.respond(to: request, algorithm: .ecP384) }
        let (response, secret) = try V4SharedSecret.respond(to: request, algorithm: .ecP384MLL3)
        secret.destroy()
        let short = V4SharedSecretResponse(
            salt: response.salt,
            encapsulatedKeys: [response.encapsulatedKeys[0], Data([1, 2, 3]).base64EncodedString()])
        #expect(throws: ProtocolError.self) { _ = try V4SharedSecret.finish(context, response: short) }
    }
}
