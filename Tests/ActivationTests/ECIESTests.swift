import Foundation
import PowerAuthProtocol
import SecureCore
import Testing

@Suite("PowerAuth ECIES API")
struct ECIESTests {
    static let applicationKey = "d6J5L+nc0/72WugcmfetYA=="
    static let applicationSecret = "uBKPNFUtJdVzbuGz2dtGwA=="
    static let activationId = "b602bfa6-eeb1-4661-85f1-571ff4b30bc2"
    static let temporaryKeyId = "D3D82A6B-47CF-4225-BBE5-BAD96FB84CA4"

    static func configuration(
        _ version: ProtocolVersion, _ sharedInfo1: ECIES.SharedInfo1, transportKey: SecureBytes? = nil,
        temporaryKeyId: String? = ECIESTests.temporaryKeyId
    ) throws -> ECIESConfiguration {
        let activation = sharedInfo1.scope == .activation
        return try ECIESConfiguration(
            version: version, sharedInfo1: sharedInfo1, applicationKey: applicationKey,
            applicationSecret: applicationSecret, activationId: activation ? activationId : nil,
            transportKey: activation ? (transportKey ?? SecureBytes.random(count: 16)) : nil,
            temporaryKeyId: temporaryKeyId)
    }

    static func secret(_ text: String) throws -> SecureBytes {
        try Array(text.utf8).withUnsafeBytes { try SecureBytes(copying: $0) }
    }

    static func reveal(_ value: SecureBytes?) throws -> String {
        guard let value else { return "" }
        return value.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// A full exchange, client and server, for every version and every SHARED_INFO_1 value.
    @Test(
        "client and server agree for every version and all seven SHARED_INFO_1 values",
        arguments: ProtocolVersion.allCases)
    func roundTrip(version: ProtocolVersion) throws {
        #expect(ECIES.SharedInfo1.allCases.count == 7)
        for sharedInfo1 in ECIES.SharedInfo1.allCases {
            let server = try P256.generateKeyPair()
            let configuration = try Self.configuration(
                version, sharedInfo1, transportKey: try SecureBytes.random(count: 16))
            let encryptor = try ECIESEncryptor(configuration: configuration, serverPublicKey: server.publicKey)
            let (request, clientEnvelope) = try encryptor.encryptRequest(try Self.secret("{\"reason\":\"test\"}"))
            #expect(request.ephemeralPublicKey?.count == 33)
            #expect((request.nonce != nil) == (version != .v3_0))
            #expect((request.timestamp != nil) == (version == .v3_2 || version == .v3_3))
            #expect((request.temporaryKeyId != nil) == (version == .v3_3))
            let decryptor = ECIESDecryptor(configuration: configuration, privateKey: server.privateKey)
            let (plaintext, serverEnvelope) = try decryptor.decryptRequest(request)
            #expect(try Self.reveal(plaintext) == "{\"reason\":\"test\"}")
            #expect(try serverEnvelope.key.isEqual(to: clientEnvelope.key))
            let response = try serverEnvelope.encryptResponse(try Self.secret("{\"ok\":true}"))
            #expect(response.ephemeralPublicKey == nil && response.temporaryKeyId == nil)
            #expect((response.nonce != nil) == (version == .v3_2 || version == .v3_3))
            #expect(response.nonce == nil || response.nonce != request.nonce)
            #expect(try Self.reveal(clientEnvelope.decryptResponse(response)) == "{\"ok\":true}")
            // Each envelope serves one response.
            #expect(clientEnvelope.isUsed && serverEnvelope.isUsed)
            #expect(throws: ECIESError.envelopeUsed) { try clientEnvelope.decryptResponse(response) }
            #expect(throws: ECIESError.envelopeUsed) { try serverEnvelope.encryptResponse(nil) }
        }
    }

    @Test("the empty plaintext round-trips as nil, and a 65-byte ephemeral key is used as sent")
    func emptyAndUncompressed() throws {
        let server = try P256.generateKeyPair()
        let configuration = try Self.configuration(.v3_2, .applicationScopeGeneric)
        let (request, _) = try ECIESEncryptor(configuration: configuration, serverPublicKey: server.publicKey)
            .encryptRequest(nil)
        #expect(request.encryptedData.count == 16)
        let (plaintext, envelope) = try ECIESDecryptor(configuration: configuration, privateKey: server.privateKey)
            .decryptRequest(request)
        #expect(plaintext == nil)
        // Upstream's Java client sends the ephemeral key uncompressed: the same envelope math, other bytes.
        let ephemeral = try P256.generateKeyPair()
        let sharedInfo1 = ECIES.SharedInfo1.applicationScopeGeneric.bytes(for: .v3_2)
        let key = try ECIESPrimitives.serverEnvelope(
            privateKey: server.privateKey, ephemeralPublicKey: ephemeral.publicKey, sharedInfo1: sharedInfo1)
        let sealed = try configuration.sealRequest(
            try Self.secret("x"), key: key, ephemeralPublicKey: ephemeral.publicKey,
            nonce: Array(repeating: 7, count: 16),
            timestamp: 1)
        let opened = try ECIESDecryptor(configuration: configuration, privateKey: server.privateKey).decryptRequest(
            sealed)
        #expect(try Self.reveal(opened.plaintext) == "x")
        #expect(try opened.envelope.key.isEqual(to: key))
        _ = envelope
    }

    @Test("a changed byte anywhere the MAC covers is refused")
    func tampering() throws {
        let server = try P256.generateKeyPair()
        let configuration = try Self.configuration(.v3_3, .activationScopeGeneric)
        let (request, _) = try ECIESEncryptor(configuration: configuration, serverPublicKey: server.publicKey)
            .encryptRequest(try Self.secret("secret payload"))
        let decryptor = ECIESDecryptor(configuration: configuration, privateKey: server.privateKey)
        var changed = [ECIESCryptogram]()
        var data = request
        data.encryptedData[0] ^= 1
        var mac = request
        mac.mac[31] ^= 1
        var nonce = request
        nonce.nonce?[0] ^= 1
        var time = request
        time.timestamp? += 1
        changed += [data, mac, nonce, time]
        for item in changed {
            #expect(throws: ECIESError.authenticationFailed) { try decryptor.decryptRequest(item) }
        }
        // Another SHARED_INFO_1, another activation: another key or another SH2.
        let other = try Self.configuration(.v3_3, .vaultUnlock)
        #expect(throws: ECIESError.authenticationFailed) {
            try ECIESDecryptor(configuration: other, privateKey: server.privateKey).decryptRequest(request)
        }
        var ephemeral = request
        ephemeral.ephemeralPublicKey?[1] ^= 1
        #expect(throws: ECIESError.self) { try decryptor.decryptRequest(ephemeral) }
    }

    @Test("fields are checked against the version before any key work")
    func fieldRules() throws {
        let server = try P256.generateKeyPair()
        for version in ProtocolVersion.allCases {
            let configuration = try Self.configuration(version, .applicationScopeGeneric)
            let (request, envelope) = try ECIESEncryptor(
                configuration: configuration, serverPublicKey: server.publicKey
            )
            .encryptRequest(try Self.secret("a"))
            let decryptor = ECIESDecryptor(configuration: configuration, privateKey: server.privateKey)
            var noKey = request
            noKey.ephemeralPublicKey = nil
            #expect(throws: ECIESError.malformedCryptogram(field: "ephemeralPublicKey")) {
                try decryptor.decryptRequest(noKey)
            }
            var nonce = request
            nonce.nonce = version == .v3_0 ? Array(repeating: 1, count: 16) : nil
            #expect(throws: ECIESError.malformedCryptogram(field: "nonce")) { try decryptor.decryptRequest(nonce) }
            var timestamp = request
            timestamp.timestamp = request.timestamp == nil ? 1 : nil
            #expect(throws: ECIESError.malformedCryptogram(field: "timestamp")) {
                try decryptor.decryptRequest(timestamp)
            }
            var shortMac = request
            shortMac.mac.removeLast()
            #expect(throws: ECIESError.malformedCryptogram(field: "mac")) { try decryptor.decryptRequest(shortMac) }
            var ragged = request
            ragged.encryptedData.removeLast()
            #expect(throws: ECIESError.malformedCryptogram(field: "encryptedData")) {
                try decryptor.decryptRequest(ragged)
            }
            var temporary = request
            temporary.temporaryKeyId = version == .v3_3 ? nil : "K"
            #expect(throws: ECIESError.malformedCryptogram(field: "temporaryKeyId")) {
                try decryptor.decryptRequest(temporary)
            }
            // A response carrying what only requests carry.
            var response = ECIESCryptogram(encryptedData: request.encryptedData, mac: request.mac)
            response.ephemeralPublicKey = request.ephemeralPublicKey
            #expect(throws: ECIESError.malformedCryptogram(field: "ephemeralPublicKey")) {
                try envelope.decryptResponse(response)
            }
            #expect(!envelope.isUsed)
        }
    }

    @Test("3.3: a request for another temporary key is refused")
    func temporaryKey() throws {
        let server = try P256.generateKeyPair()
        let configuration = try Self.configuration(.v3_3, .applicationScopeGeneric)
        let (request, _) = try ECIESEncryptor(configuration: configuration, serverPublicKey: server.publicKey)
            .encryptRequest(try Self.secret("a"))
        #expect(request.temporaryKeyId == Self.temporaryKeyId)
        let other = try Self.configuration(.v3_3, .applicationScopeGeneric, temporaryKeyId: "another")
        #expect(throws: ECIESError.temporaryKeyMismatch) {
            try ECIESDecryptor(configuration: other, privateKey: server.privateKey).decryptRequest(request)
        }
    }

    @Test("3.2+: a response that repeats the request nonce is refused; 3.1 reuses it without sending it")
    func responseNonce() throws {
        let server = try P256.generateKeyPair()
        for version in [ProtocolVersion.v3_1, .v3_2] {
            let configuration = try Self.configuration(version, .createToken)
            let (request, client) = try ECIESEncryptor(configuration: configuration, serverPublicKey: server.publicKey)
                .encryptRequest(try Self.secret("{}"))
            let (_, serverEnvelope) = try ECIESDecryptor(configuration: configuration, privateKey: server.privateKey)
                .decryptRequest(request)
            if version == .v3_1 {
                let response = try serverEnvelope.encryptResponse(try Self.secret("r"))
                #expect(response.nonce == nil && response.timestamp == nil)
                #expect(try Self.reveal(client.decryptResponse(response)) == "r")
            } else {
                #expect(throws: ECIESError.malformedCryptogram(field: "nonce")) {
                    try serverEnvelope.encryptResponse(try Self.secret("r"), nonce: request.nonce, timestamp: 5)
                }
                let replayed = try configuration.sealResponse(
                    try Self.secret("r"), key: client.key, requestNonce: nil, responseNonce: request.nonce, timestamp: 5
                )
                #expect(throws: ECIESError.malformedCryptogram(field: "nonce")) { try client.decryptResponse(replayed) }
            }
        }
    }

    @Test("what each scope and version requires is checked when the configuration is made")
    func configurationRules() throws {
        #expect(throws: ECIESError.missingParameter("transportKey")) {
            try ECIESConfiguration(
                version: .v3_1, sharedInfo1: .upgrade, applicationKey: Self.applicationKey,
                applicationSecret: Self.applicationSecret)
        }
        #expect(throws: ECIESError.missingParameter("activationId")) {
            try ECIESConfiguration(
                version: .v3_2, sharedInfo1: .upgrade, applicationKey: Self.applicationKey,
                applicationSecret: Self.applicationSecret, transportKey: try SecureBytes.random(count: 16))
        }
        #expect(throws: ECIESError.missingParameter("temporaryKeyId")) {
            try ECIESConfiguration(
                version: .v3_3, sharedInfo1: .applicationScopeGeneric, applicationKey: Self.applicationKey,
                applicationSecret: Self.applicationSecret)
        }
        #expect(throws: ECIESError.core(.sizeMismatch(expected: 16, actual: 32))) {
            try ECIESConfiguration(
                version: .v3_0, sharedInfo1: .vaultUnlock, applicationKey: Self.applicationKey,
                applicationSecret: Self.applicationSecret, transportKey: try SecureBytes.random(count: 32))
        }
        #expect(throws: ECIESError.invalidKey(field: "serverPublicKey")) {
            try ECIESEncryptor(
                configuration: try Self.configuration(.v3_0, .activationLayer2),
                serverPublicKey: [4] + Array(repeating: 1, count: 64))
        }
    }

    @Test("SHARED_INFO_1: upstream's seven values and scopes, prefixed with the version from 3.2")
    func sharedInfo1() {
        let scopes = Dictionary(uniqueKeysWithValues: ECIES.SharedInfo1.allCases.map { ($0.rawValue, $0.scope) })
        #expect(
            scopes == [
                "/pa/generic/application": .application, "/pa/generic/activation": .activation,
                "/pa/activation": .application, "/pa/upgrade": .activation, "/pa/vault/unlock": .activation,
                "/pa/token/create": .activation, "/pa/recovery/confirm": .activation,
            ])
        #expect(ECIES.SharedInfo1.upgrade.bytes(for: .v3_1) == Array("/pa/upgrade".utf8))
        #expect(ECIES.SharedInfo1.upgrade.bytes(for: .v3_3) == Array("3.3/pa/upgrade".utf8))
    }

    @Test("descriptions name no secret")
    func descriptions() throws {
        let server = try P256.generateKeyPair()
        let configuration = try Self.configuration(.v3_2, .vaultUnlock)
        let (_, envelope) = try ECIESEncryptor(configuration: configuration, serverPublicKey: server.publicKey)
            .encryptRequest(try Self.secret("PIN-like secret"))
        #expect("\(configuration)" == "ECIESConfiguration(3.2, /pa/vault/unlock, activation scope)")
        #expect("\(envelope)".contains("key redacted"))
        #expect(!"\(envelope)".contains("secret"))
    }
}
