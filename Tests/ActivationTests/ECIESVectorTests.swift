import Foundation
import PowerAuthProtocol
import SecureCore
import Testing

/// The ECIES vector files of `Tests/Vectors/powerauth/v3-ecies/`, read as free-form JSON.
enum ECIESVectors {
    struct Missing: Error { let key: String }

    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Vectors/powerauth")

    static func load(_ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: directory.appendingPathComponent(name))
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw Missing(key: name)
        }
        return object
    }

    static func string(_ dict: [String: Any], _ key: String) throws -> String {
        guard let value = dict[key] as? String else { throw Missing(key: key) }
        return value
    }

    static func optionalString(_ dict: [String: Any], _ key: String) -> String? { dict[key] as? String }

    static func bytes(_ dict: [String: Any], _ key: String) throws -> [UInt8] {
        guard let data = Data(base64Encoded: try string(dict, key)) else { throw Missing(key: key) }
        return [UInt8](data)
    }

    static func optionalBytes(_ dict: [String: Any], _ key: String) throws -> [UInt8]? {
        dict[key] is String ? try bytes(dict, key) : nil
    }

    static func utf8(_ dict: [String: Any], _ key: String) throws -> [UInt8] { Array(try string(dict, key).utf8) }

    /// A number given as a JSON number or as decimal text.
    static func timestamp(_ dict: [String: Any], _ key: String) throws -> UInt64? {
        if let number = dict[key] as? NSNumber { return number.uint64Value }
        if let text = dict[key] as? String { return UInt64(text) }
        return nil
    }

    static func secret(_ raw: [UInt8]) throws -> SecureBytes {
        try raw.withUnsafeBytes { try SecureBytes(copying: $0) }
    }

    /// Plaintext test data into secure memory (`nil` when empty, as the API gives it).
    static func plaintext(_ raw: [UInt8]) throws -> SecureBytes? { raw.isEmpty ? nil : try secret(raw) }

    static func reveal(_ value: SecureBytes?) throws -> [UInt8] {
        guard let value else { return [] }
        return value.withUnsafeBytes { Array($0) }
    }

    /// Upstream's `EncryptorId` names.
    static func sharedInfo1(_ encryptorId: String) throws -> ECIES.SharedInfo1 {
        switch encryptorId {
        case "APPLICATION_SCOPE_GENERIC": .applicationScopeGeneric
        case "ACTIVATION_SCOPE_GENERIC": .activationScopeGeneric
        case "ACTIVATION_LAYER_2": .activationLayer2
        case "UPGRADE": .upgrade
        case "VAULT_UNLOCK": .vaultUnlock
        case "CREATE_TOKEN": .createToken
        case "CONFIRM_RECOVERY_CODE": .confirmRecoveryCode
        default: throw Missing(key: encryptorId)
        }
    }

    /// Prints and checks the count of one file.
    static func report(_ file: String, ran: Int, of total: Int) {
        print("\(file): \(ran) cases")
        #expect(ran == total, "\(file): \(ran) of \(total) cases ran")
        #expect(ran > 0)
    }
}

@Suite("PowerAuth ECIES vectors")
struct ECIESVectorTests {
    static let e2eeFiles = ["Application", "Activation"].flatMap { scope in
        ["30", "31", "32", "33"].map { "v3-ecies/E2ee_\(scope)_Scope_Test_Vectors_\($0).json" }
    }

    @Test("every file of v3-ecies is read by one of these tests")
    func everyFileCovered() throws {
        let names = try FileManager.default.contentsOfDirectory(
            atPath: ECIESVectors.directory.appendingPathComponent("v3-ecies").path
        ).filter { $0.hasSuffix(".json") }.map { "v3-ecies/" + $0 }
        let covered = Set(Self.e2eeFiles + ["v3-ecies/ecies-java-v30-v31.json", "v3-ecies/ecies-java-v32-v33.json"])
        #expect(Set(names) == covered)
        #expect(names.count == 10)
    }

    @Test("E2ee_*_Scope_Test_Vectors_3x.json: SH2 base, request and response both ways under the given envelope key")
    func e2ee() throws {
        var all = 0
        for file in Self.e2eeFiles {
            let root = try ECIESVectors.load(file)
            guard let cases = root.values.first as? [[String: Any]] else { throw ECIESVectors.Missing(key: file) }
            var ran = 0
            for item in cases {
                try e2eeCase(item)
                ran += 1
            }
            ECIESVectors.report(file, ran: ran, of: cases.count)
            all += ran
        }
        #expect(all == 200)
    }

    private func e2eeCase(_ item: [String: Any]) throws {
        let version = try ProtocolVersion(parsing: try ECIESVectors.string(item, "protocolVersion"))
        let transport = try ECIESVectors.optionalBytes(item, "transportKey").map(ECIESVectors.secret)
        let configuration = try ECIESConfiguration(
            version: version, sharedInfo1: try ECIESVectors.sharedInfo1(try ECIESVectors.string(item, "encryptorId")),
            applicationKey: try ECIESVectors.string(item, "applicationKey"),
            applicationSecret: try ECIESVectors.string(item, "applicationSecret"),
            activationId: ECIESVectors.optionalString(item, "activationId"), transportKey: transport,
            temporaryKeyId: ECIESVectors.optionalString(item, "temporaryKeyId"))
        #expect(configuration.sharedInfo2BaseForTesting == (try ECIESVectors.bytes(item, "sharedInfo2Base")))
        #expect(
            configuration.scope
                == (try ECIESVectors.string(item, "encryptorScope") == "ACTIVATION_SCOPE" ? .activation : .application))
        let envelopeKey = try ECIESVectors.bytes(item, "envelopeKey")
        let ephemeral = try ECIESVectors.bytes(item, "requestEphemeralPublicKey")
        let requestNonce = try ECIESVectors.optionalBytes(item, "requestNonce")
        let requestPlain = try ECIESVectors.utf8(item, "requestData")
        let responsePlain = try ECIESVectors.utf8(item, "responseData")

        // The client's request: reproduced byte for byte.
        let key = try ECIESVectors.secret(envelopeKey)
        let request = try configuration.sealRequest(
            try ECIESVectors.plaintext(requestPlain), key: key, ephemeralPublicKey: ephemeral, nonce: requestNonce,
            timestamp: try ECIESVectors.timestamp(item, "timestampRequest"))
        #expect(request.encryptedData == (try ECIESVectors.bytes(item, "encryptedDataRequest")))
        #expect(request.mac == (try ECIESVectors.bytes(item, "requestMac")))
        #expect(request.temporaryKeyId == ECIESVectors.optionalString(item, "temporaryKeyId"))
        // The server opens it.
        #expect(try ECIESVectors.reveal(configuration.openRequest(request, key: key)) == requestPlain)

        // The server's response, reproduced; the client opens it through an envelope.
        let responseNonce = try ECIESVectors.optionalBytes(item, "responseNonce")
        let responseTime = try ECIESVectors.timestamp(item, "timestampResponse")
        let serverEnvelope = ECIESEnvelope(
            key: try ECIESVectors.secret(envelopeKey), configuration: configuration, ephemeralPublicKey: ephemeral,
            requestNonce: requestNonce)
        let response = try serverEnvelope.encryptResponse(
            try ECIESVectors.plaintext(responsePlain), nonce: responseNonce, timestamp: responseTime ?? 0)
        #expect(response.encryptedData == (try ECIESVectors.bytes(item, "encryptedDataResponse")))
        #expect(response.mac == (try ECIESVectors.bytes(item, "responseMac")))
        #expect(response.nonce == responseNonce)
        #expect(response.timestamp == responseTime)
        let clientEnvelope = ECIESEnvelope(
            key: try ECIESVectors.secret(envelopeKey), configuration: configuration, ephemeralPublicKey: ephemeral,
            requestNonce: requestNonce)
        #expect(try ECIESVectors.reveal(clientEnvelope.decryptResponse(response)) == responsePlain)
    }

    @Test("ecies-java-v32-v33.json: the full path with private keys (server decrypts, both sides answer)")
    func fullPath() throws {
        let file = "v3-ecies/ecies-java-v32-v33.json"
        let root = try ECIESVectors.load(file)
        guard let sets = root["sets"] as? [[String: Any]] else { throw ECIESVectors.Missing(key: "sets") }
        var ran = 0, total = 0
        for set in sets {
            guard let cases = set["cases"] as? [[String: Any]] else { throw ECIESVectors.Missing(key: "cases") }
            total += cases.count
            for item in cases {
                try fullPathCase(set, item)
                ran += 1
            }
        }
        ECIESVectors.report(file, ran: ran, of: total)
        #expect(ran == 32)
    }

    private func fullPathCase(_ set: [String: Any], _ item: [String: Any]) throws {
        let version = try ProtocolVersion(parsing: try ECIESVectors.string(set, "protocolVersion"))
        let sharedInfo1 = try ECIESVectors.sharedInfo1(try ECIESVectors.string(item, "encryptorId"))
        #expect(sharedInfo1.rawValue == (try ECIESVectors.string(item, "sharedInfo1")))
        let activation = sharedInfo1.scope == .activation
        #expect(try ECIESVectors.string(item, "scope") == (activation ? "activation" : "application"))
        guard let requestJSON = item["request"] as? [String: Any], let responseJSON = item["response"] as? [String: Any]
        else { throw ECIESVectors.Missing(key: "request") }
        let configuration = try ECIESConfiguration(
            version: version, sharedInfo1: sharedInfo1, applicationKey: try ECIESVectors.string(set, "applicationKey"),
            applicationSecret: try ECIESVectors.string(set, "applicationSecret"),
            activationId: activation ? try ECIESVectors.string(set, "activationId") : nil,
            transportKey: activation ? try ECIESVectors.secret(try ECIESVectors.bytes(set, "transportKey")) : nil,
            temporaryKeyId: ECIESVectors.optionalString(requestJSON, "temporaryKeyId"))
        #expect(configuration.associatedDataForTesting == (try ECIESVectors.bytes(item, "associatedData")))
        let request = ECIESCryptogram(
            temporaryKeyId: ECIESVectors.optionalString(requestJSON, "temporaryKeyId"),
            ephemeralPublicKey: try ECIESVectors.bytes(requestJSON, "ephemeralPublicKey"),
            encryptedData: try ECIESVectors.bytes(requestJSON, "encryptedData"),
            mac: try ECIESVectors.bytes(requestJSON, "mac"),
            nonce: try ECIESVectors.optionalBytes(requestJSON, "nonce"),
            timestamp: try ECIESVectors.timestamp(requestJSON, "timestamp"))
        // The application scope is encrypted to the master key, the activation scope to the server key
        // (3.3: the vectors' temporary keys are these same pairs).
        let privateKey = try ECIESVectors.secret(
            try ECIESVectors.bytes(set, activation ? "serverPrivateKey" : "masterServerPrivateKey"))
        let (plaintext, envelope) = try ECIESDecryptor(configuration: configuration, privateKey: privateKey)
            .decryptRequest(request)
        #expect(try ECIESVectors.reveal(plaintext) == ECIESVectors.bytes(item, "plainRequest"))
        #expect(try ECIESVectors.reveal(envelope.key) == ECIESVectors.bytes(item, "envelopeKey"))

        // The server's response, reproduced with the vector's nonce and timestamp.
        let responsePlain = try ECIESVectors.bytes(item, "plainResponse")
        let expected = ECIESCryptogram(
            encryptedData: try ECIESVectors.bytes(responseJSON, "encryptedData"),
            mac: try ECIESVectors.bytes(responseJSON, "mac"), nonce: try ECIESVectors.bytes(responseJSON, "nonce"),
            timestamp: try ECIESVectors.timestamp(responseJSON, "timestamp"))
        let response = try envelope.encryptResponse(
            try ECIESVectors.plaintext(responsePlain), nonce: expected.nonce, timestamp: expected.timestamp ?? 0)
        #expect(response == expected)
        // The client, holding the same envelope key, opens it.
        let client = ECIESEnvelope(
            key: try ECIESVectors.secret(try ECIESVectors.bytes(item, "envelopeKey")), configuration: configuration,
            ephemeralPublicKey: request.ephemeralPublicKey ?? [], requestNonce: request.nonce)
        #expect(try ECIESVectors.reveal(client.decryptResponse(expected)) == responsePlain)
    }

    @Test("ecies-java-v30-v31.json: raw SH1/SH2 through the core (server key, request, response with the same nonce)")
    func raw() throws {
        let file = "v3-ecies/ecies-java-v30-v31.json"
        let root = try ECIESVectors.load(file)
        guard let cases = root["cases"] as? [[String: Any]] else { throw ECIESVectors.Missing(key: "cases") }
        var ran = 0
        for item in cases {
            let nonce = try ECIESVectors.optionalBytes(item, "nonce")
            #expect((nonce != nil) == (try ECIESVectors.string(item, "version") == "3.1"))
            let sh2 = try ECIESVectors.bytes(item, "sharedInfo2")
            let key = try ECIESPrimitives.serverEnvelope(
                privateKey: try ECIESVectors.secret(try ECIESVectors.bytes(item, "serverPrivateKey")),
                ephemeralPublicKey: try ECIESVectors.bytes(item, "ephemeralPublicKey"),
                sharedInfo1: try ECIESVectors.bytes(item, "sharedInfo1"))
            for direction in ["request", "response"] {
                let plain = try ECIESVectors.bytes(item, "\(direction)Plaintext")
                let ciphertext = try ECIESVectors.bytes(item, "\(direction)Ciphertext")
                let mac = try ECIESVectors.bytes(item, "\(direction)Mac")
                let opened = try ECIESPrimitives.decrypt(
                    ciphertext, mac: mac, key: key, nonce: nonce, sharedInfo2: sh2)
                #expect(try ECIESVectors.reveal(opened) == plain)
                let sealed = try ECIESPrimitives.encrypt(
                    try ECIESVectors.plaintext(plain), key: key, nonce: nonce, sharedInfo2: sh2)
                #expect(sealed.encryptedData == ciphertext)
                #expect(sealed.mac == mac)
            }
            ran += 1
        }
        ECIESVectors.report(file, ran: ran, of: cases.count)
        #expect(ran == 12)
    }

    @Test("verify-activation-data-signature-v3.json: ECDSA over the activation code with the master key")
    func activationDataSignature() throws {
        let file = "verify-activation-data-signature-v3.json"
        let root = try ECIESVectors.load(file)
        guard let cases = root["data"] as? [[String: Any]] else { throw ECIESVectors.Missing(key: "data") }
        var ran = 0
        for item in cases {
            guard let input = item["input"] as? [String: Any], let output = item["output"] as? [String: Any] else {
                throw ECIESVectors.Missing(key: "input")
            }
            let code = try ECIESVectors.utf8(input, "activationCode")
            let publicKey = try ECIESVectors.bytes(input, "masterPublicKey")
            let signature = try ECIESVectors.bytes(output, "activationSignature")
            #expect(try P256.verify(signature: signature, message: code, publicKey: publicKey))
            // Another code, or one changed bit of the signature, does not verify.
            #expect(try !P256.verify(signature: signature, message: code + [0x41], publicKey: publicKey))
            var flipped = signature
            flipped[flipped.count - 1] ^= 1
            #expect(try !P256.verify(signature: flipped, message: code, publicKey: publicKey))
            // The private key given signs codes that the public key verifies.
            let privateKey = try ECIESVectors.secret(try ECIESVectors.bytes(input, "masterPrivateKey"))
            let own = try P256.sign(code, privateKey: privateKey)
            #expect(try P256.verify(signature: own, message: code, publicKey: publicKey))
            ran += 1
        }
        ECIESVectors.report(file, ran: ran, of: cases.count)
        #expect(ran == 20)
    }
}
