import PowerAuthProtocol
import SecureCore
import Testing

@Suite("PowerAuth vectors")
struct VectorTests {
    let crypto: ActivationCrypto

    init() throws { crypto = try ActivationCrypto(algorithm: .legacyP256) }

    @Test("compute-master-secret-key.json: both directions agree with the vector")
    func masterSecret() throws {
        try runVectors("compute-master-secret-key.json") { item in
            let expected = try Vec.bytes(item.output, "masterSecretKey")
            let device = try crypto.masterSecret(
                privateKey: try Vec.secret(item.input, "devicePrivateKey"),
                peerPublicKey: try Vec.bytes(item.input, "serverPublicKey"))
            let server = try crypto.masterSecret(
                privateKey: try Vec.secret(item.input, "serverPrivateKey"),
                peerPublicKey: try Vec.bytes(item.input, "devicePublicKey"))
            #expect(try Vec.reveal(device) == expected)
            #expect(try Vec.reveal(server) == expected)
        }
    }

    @Test("compute-derived-keys.json: the five factor keys")
    func derivedKeys() throws {
        try runVectors("compute-derived-keys.json") { item in
            let keys = try crypto.factorKeys(masterSecret: try Vec.secret(item.input, "masterSecretKey"))
            #expect(try Vec.reveal(keys.possession) == Vec.bytes(item.output, "signaturePossessionKey"))
            #expect(try Vec.reveal(keys.knowledge) == Vec.bytes(item.output, "signatureKnowledgeKey"))
            #expect(try Vec.reveal(keys.biometry) == Vec.bytes(item.output, "signatureBiometryKey"))
            #expect(try Vec.reveal(keys.transport) == Vec.bytes(item.output, "transportKey"))
            #expect(try Vec.reveal(keys.vault) == Vec.bytes(item.output, "vaultEncryptionKey"))
        }
    }

    private func code(_ item: VectorFile.Case, format: AuthenticationCodeFormat) throws -> String {
        let keys = SigningKeys(
            possession: try Vec.secret(item.input, "signaturePossessionKey"),
            knowledge: try Vec.secret(item.input, "signatureKnowledgeKey"),
            biometry: try Vec.secret(item.input, "signatureBiometryKey"))
        return try crypto.authenticationCode(
            data: try Vec.bytes(item.input, "data"),
            factors: try FactorSet(parsing: try Vec.string(item.input, "signatureType")),
            keys: keys, counter: try HashCounter(bytes: try Vec.bytes(item.input, "counterData")), format: format)
    }

    @Test("signatures-v3.json: V3 decimal codes")
    func signaturesV3() throws {
        try runVectors("signatures-v3.json") { item in
            let computed = try code(item, format: ProtocolVersion.v3_0.authenticationCodeFormat)
            #expect(try computed == Vec.string(item.output, "signature"))
        }
    }

    @Test("signatures-v31.json: V3.1 Base64 codes")
    func signaturesV31() throws {
        try runVectors("signatures-v31.json") { item in
            let computed = try code(item, format: ProtocolVersion.v3_1.authenticationCodeFormat)
            #expect(try computed == Vec.string(item.output, "signature"))
        }
    }

    @Test("signatures-offline.json: offline codes with 4 to 8 digits")
    func signaturesOffline() throws {
        try runVectors("signatures-offline.json") { item in
            let length = try Vec.int(item.input, "signatureComponentLength")
            let computed = try code(item, format: .decimal(componentLength: length))
            #expect(try computed == Vec.string(item.output, "signature"))
        }
    }

    @Test("activation-status-blob-iv.json: IV from challenge and nonce")
    func statusIV() throws {
        try runVectors("activation-status-blob-iv.json") { item in
            let iv = try crypto.statusBlobIV(
                transportKey: try Vec.secret(item.input, "transportKey"),
                challenge: try Vec.bytes(item.input, "challenge"), nonce: try Vec.bytes(item.input, "nonce"))
            #expect(try iv == Vec.bytes(item.output, "iv"))
        }
    }

    @Test("activation-status-blob-data.json: decryption, fields, counter hash and distance")
    func statusBlob() throws {
        try runVectors("activation-status-blob-data.json") { item in
            let transport = try Vec.secret(item.input, "transportKey")
            let blob = try crypto.decryptStatusBlob(
                try Vec.bytes(item.input, "encryptedStatusBlob"), transportKey: transport,
                challenge: try Vec.bytes(item.input, "challenge"), nonce: try Vec.bytes(item.input, "nonce"))
            let out = item.output
            #expect(try Int(blob.state.rawValue) == Vec.int(out, "activationStatus"))
            #expect(try Int(blob.currentVersion) == Vec.int(out, "currentVersion"))
            #expect(try Int(blob.upgradeVersion) == Vec.int(out, "upgradeVersion"))
            #expect(try Int(blob.failedAttempts) == Vec.int(out, "failedAttempts"))
            #expect(try Int(blob.maxFailedAttempts) == Vec.int(out, "maxFailedAttempts"))
            #expect(try Int(blob.counterLookAhead) == Vec.int(out, "ctrLookAhead"))
            #expect(try Int(blob.counterByte) == Vec.int(out, "ctrByte"))
            #expect(try blob.counterDataHash == Vec.bytes(out, "ctrDataHash"))
            let local = try HashCounter(bytes: try Vec.bytes(item.input, "ctrData"))
            let distance = try crypto.counterDistance(
                from: local, toServerHash: blob.counterDataHash, transportKey: transport,
                lookAhead: Int(blob.counterLookAhead))
            #expect(try distance == Vec.int(out, "counterDistance"))
            let advanced = try local.advanced(by: try Vec.int(out, "counterDistance"))
            #expect(try crypto.counterHash(advanced, transportKey: transport) == blob.counterDataHash)
        }
    }

    @Test("public-key-fingerprint-v3.json: fingerprints and x-coordinates")
    func fingerprint() throws {
        try runVectors("public-key-fingerprint-v3.json") { item in
            let device = try Vec.bytes(item.input, "devicePublicKey")
            let server = try Vec.bytes(item.input, "serverPublicKey")
            let value = try crypto.fingerprint(
                devicePublicKey: device, serverPublicKey: server,
                activationId: try Vec.string(item.output, "activationId"))
            #expect(try value == Vec.string(item.output, "fingerprint"))
            // The vectors state the x-coordinates too: they are the minimal forms.
            let deviceX = try Vec.bytes(item.output, "devicePublicKeyCoordX")
            let serverX = try Vec.bytes(item.output, "serverPublicKeyCoordX")
            #expect(Array(device[1..<33].drop { $0 == 0 }) == Array(deviceX.drop { $0 == 0 }))
            #expect(Array(server[1..<33].drop { $0 == 0 }) == Array(serverX.drop { $0 == 0 }))
        }
    }
}
