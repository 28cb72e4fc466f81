import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore
import Testing

@Suite("V4 temporary-key responses signed for the hybrid suites (ES384 + ML-DSA)")
struct V4HybridJWSTests {
    @Test("upstream's hybrid keystore response: both signatures verify, neither alone is accepted")
    func upstreamHybridResponse() throws {
        var checked = 0
        try V4Vectors.run("TemporaryKeyTest_JWS_Vectors.json", " (cases; the hybrid response below)") { item in
            guard let response = item["responsePayload"] else { return }
            let es384 = try V4Vectors.bytes(item, "publicKeyEs384")
            guard item["publicKeyMlDsa65"] != nil else {
                // The ES384-only response is no hybrid response.
                #expect(throws: JWTError.self) {
                    _ = try V4TemporaryKeyJWT.verifyResponseSignature(
                        response, publicKey: es384,
                        postQuantum: (MLDSA.KeyPair.generate(.mldsa65).publicKey, .mldsa65))
                }
                return
            }
            let mldsa = try MLDSA.publicKey(.mldsa65, fromPublicKeyInfo: try V4Vectors.bytes(item, "publicKeyMlDsa65"))
            let payload = try V4TemporaryKeyJWT.verifyResponseSignature(
                response, publicKey: es384, postQuantum: (mldsa, .mldsa65))
            let object = try #require(try JSONSerialization.jsonObject(with: Data(response.utf8)) as? [String: Any])
            let encoded = try #require(object["payload"] as? String)
            #expect(Base64URLProbe.encode(payload) == encoded)
            // As an EC_P384 response (one signature expected) it is refused, and with another ML-DSA key too.
            #expect(throws: JWTError.self) {
                _ = try V4TemporaryKeyJWT.verifyResponseSignature(response, publicKey: es384)
            }
            let stranger = try MLDSA.KeyPair.generate(.mldsa65)
            #expect(throws: JWTError.signatureInvalid) {
                _ = try V4TemporaryKeyJWT.verifyResponseSignature(
                    response, publicKey: es384, postQuantum: (stranger.publicKey, .mldsa65))
            }
            checked += 1
        }
        print("TemporaryKeyTest_JWS_Vectors.json: \(checked) hybrid response (ES384 + ML-DSA-65) verified")
        #expect(checked == 1)
    }

    @Test(
        "sign and verify, both parameter sets; a missing, duplicated or foreign signature is refused",
        arguments: [MLDSA.ParameterSet.mldsa65, .mldsa87])
    func roundTrip(_ set: MLDSA.ParameterSet) throws {
        let p384 = try ECP384KeyPair.generate()
        let mldsa = try MLDSA.KeyPair.generate(set)
        defer { mldsa.destroy() }
        let request = V4TemporaryKeyRequestClaims(
            applicationKey: "app", activationId: nil, challenge: "c",
            sharedSecretRequest: V4SharedSecretRequest(algorithm: "EC_P384_ML_L3", encapsulationKeys: []), iat: 1,
            exp: 2)
        let claims = V4TemporaryKeyResponseClaims(
            temporaryKeyId: "k1", request: request,
            sharedSecretResponse: V4SharedSecretResponse(salt: "s", encapsulatedKeys: []),
            issuedAtMilliseconds: 1000, expiresAtMilliseconds: 2000)
        let json = try V4TemporaryKeyJWT.signResponse(claims, keyPair: p384, postQuantum: mldsa)
        let payload = try V4TemporaryKeyJWT.verifyResponseSignature(
            json, publicKey: p384.publicKey, postQuantum: (mldsa.publicKey, set))
        #expect(try JSONDecoder().decode(V4TemporaryKeyResponseClaims.self, from: Data(payload)) == claims)
        var object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let signatures = try #require(object["signatures"] as? [[String: String]])
        #expect(signatures.count == 2)
        func variant(_ entries: [[String: String]]) throws -> String {
            object["signatures"] = entries
            return String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        }
        for broken in [[signatures[0]], [signatures[0], signatures[0]], [signatures[1], signatures[1]]] {
            #expect(throws: JWTError.self) {
                _ = try V4TemporaryKeyJWT.verifyResponseSignature(
                    try variant(broken), publicKey: p384.publicKey, postQuantum: (mldsa.publicKey, set))
            }
        }
        // Order does not matter; both still have to verify.
        _ = try V4TemporaryKeyJWT.verifyResponseSignature(
            try variant([signatures[1], signatures[0]]), publicKey: p384.publicKey, postQuantum: (mldsa.publicKey, set))
    }
}

/// Base64URL without padding (the JWS payload encoding), for comparing with upstream's text.
enum Base64URLProbe {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
