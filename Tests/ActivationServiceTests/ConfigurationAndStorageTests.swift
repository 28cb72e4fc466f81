import Activation
import ActivationServer
import ActivationTestSupport
import Foundation
import PinVault
import PowerAuthProtocol
import SecureCore
import Testing

@Suite("Configuration and local data")
struct ConfigurationAndStorageTests {
    static let validConfiguration: String = {
        // A fixed, valid MOBILE_SDK_CONFIG: version 1, Data(key 0x01 × 16), Data(secret 0x02 × 16),
        // one key: id 0x01, Data(the P-256 generator, uncompressed).
        let generator: [UInt8] =
            [0x04] + hex("6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296")
            + hex("4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5")
        return Data(
            [1, 16] + [UInt8](repeating: 1, count: 16) + [16] + [UInt8](repeating: 2, count: 16) + [1, 1, 65]
                + generator
        ).base64EncodedString()
    }()

    static func hex(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            out.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    static func configuration(_ text: String) throws(ActivationError) -> ActivationConfiguration {
        try ActivationConfiguration(
            instanceId: "app", baseEndpointURL: "https://e.example/s", configuration: text, algorithm: "LEGACY_P256")
    }

    @Test("a valid configuration parses with the seed's defaults")
    func defaults() throws {
        // The seed's default algorithm is EC_P384_ML_L3, which needs keys 0x02 and 0x03: this
        // V3.3-only string refuses it by default, and LEGACY_P256 must be asked for.
        #expect(ActivationConfiguration.defaultAlgorithm == .ecP384MLL3)
        #expect(
            throws: ActivationError.wrongParameter(
                reason: "EC_P384_ML_L3 needs the P-384 master key (key 0x02) in the configuration string")
        ) {
            try ActivationConfiguration(
                instanceId: "app", baseEndpointURL: "https://e.example/s", configuration: Self.validConfiguration)
        }
        let c = try Self.configuration(Self.validConfiguration)
        #expect(c.algorithm == .legacyP256)
        #expect(c.offlineAuthenticationCodeComponentLength == 8)
        #expect(c.biometryKeyAccount == "app")
        #expect(c.biometricConfiguration == BiometricConfiguration())
        #expect(c.biometricConfiguration.invalidateLocalAuthenticationContextAfterUse)
        #expect(c.clientConfiguration.requestTimeout == .seconds(20))
        #expect(c.clientConfiguration.userAgent == ActivationClientConfiguration.defaultUserAgent)
        #expect(c.clientConfiguration.tlsValidation == .system)
        #expect(c.sdkConfiguration.applicationKey == Data(repeating: 1, count: 16).base64EncodedString())
        #expect(c.sdkConfiguration.encoded == Self.validConfiguration)
        #expect(c.storageNames == StorageNames(instanceId: "app"))
        #expect(StorageNames(instanceId: "a").state != StorageNames(instanceId: "b").state)
    }

    @Test(
        "malformed configuration strings are the protocol's invalidConfiguration",
        arguments: [
            "", "not base64!", "AQ==", "AgAAAA==", "AQ8=",
            Data([1, 16] + [UInt8](repeating: 1, count: 16)).base64EncodedString(),
            Data([1, 15] + [UInt8](repeating: 1, count: 15) + [16] + [UInt8](repeating: 2, count: 16) + [0])
                .base64EncodedString(),
            Data(
                [1, 16] + [UInt8](repeating: 1, count: 16) + [16] + [UInt8](repeating: 2, count: 16) + [1, 1, 4, 0, 0]
            )
            .base64EncodedString(),
            Data([1, 16] + [UInt8](repeating: 1, count: 16) + [16] + [UInt8](repeating: 2, count: 16) + [0])
                .base64EncodedString(),
            String(repeating: "A", count: 9000),
        ])
    func malformedConfiguration(_ text: String) {
        #expect {
            _ = try Self.configuration(text)
        } throws: { error in
            guard case ActivationError.protocolError(.invalidConfiguration) = error else { return false }
            return true
        }
    }

    @Test("trailing bytes and a corrupted master key are refused")
    func trailingAndCorrupted() throws {
        var bytes = [UInt8](Data(base64Encoded: Self.validConfiguration)!)
        #expect(
            throws: ActivationError.protocolError(
                .invalidConfiguration(.trailingBytes))
        ) {
            try Self.configuration(Data(bytes + [0]).base64EncodedString())
        }
        bytes[bytes.count - 1] ^= 1
        #expect(
            throws: ActivationError.protocolError(
                .invalidConfiguration(.invalidMasterKey))
        ) { try Self.configuration(Data(bytes).base64EncodedString()) }
    }

    @Test("algorithms, component lengths, instance ids and URLs are validated")
    func parameters() throws {
        let text = Self.validConfiguration
        // The V4 suites need the P-384 master key (key 0x02), which this V3.3 configuration
        // string lacks.
        for name in ["EC_P384", "EC_P384_ML_L3", "EC_P384_ML_L5"] {
            #expect(
                throws: ActivationError.wrongParameter(
                    reason: "\(name) needs the P-384 master key (key 0x02) in the configuration string")
            ) {
                _ = try ActivationConfiguration(
                    instanceId: "a", baseEndpointURL: "https://x.example", configuration: text, algorithm: name)
            }
        }
        #expect(throws: ActivationError.protocolError(.unknownAlgorithm("P256"))) {
            try ActivationConfiguration(
                instanceId: "a", baseEndpointURL: "https://x.example", configuration: text, algorithm: "P256")
        }
        for length in [3, 9, 0, -1] {
            #expect(throws: ActivationError.wrongParameter(reason: "offline component length must be 4 ... 8")) {
                try ActivationConfiguration(
                    instanceId: "a", baseEndpointURL: "https://x.example", configuration: text,
                    algorithm: "LEGACY_P256",
                    offlineAuthenticationCodeComponentLength: length)
            }
        }
        for length in 4...8 {
            let c = try ActivationConfiguration(
                instanceId: "a", baseEndpointURL: "https://x.example", configuration: text, algorithm: "LEGACY_P256",
                offlineAuthenticationCodeComponentLength: length)
            #expect(c.offlineAuthenticationCodeComponentLength == length)
        }
        for id in ["", "a/b", "..", "a b", String(repeating: "x", count: 129), "é"] {
            #expect(throws: ActivationError.self) {
                try ActivationConfiguration(
                    instanceId: id, baseEndpointURL: "https://x.example", configuration: text, algorithm: "LEGACY_P256")
            }
        }
        for url in ["ftp://x", "https://", "https://x.example/?q=1", "x.example", "https://x.example/a b"] {
            #expect(throws: ActivationError.self) {
                try ActivationConfiguration(
                    instanceId: "a", baseEndpointURL: url, configuration: text, algorithm: "LEGACY_P256")
            }
        }
    }

    @Test(
        "a corrupt state file is invalidActivationData; cleanupInstanceData recovers",
        arguments: ProtocolAlgorithm.allCases)
    func corruptStateFile(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        try await h.activate(try h.makeService())
        let names = h.configuration.storageNames
        var bytes = try #require(try h.storage.read(names.state))
        bytes.removeLast(bytes.count / 2)
        try h.storage.write(names.state, bytes)
        #expect {
            _ = try h.makeService()
        } throws: { error in
            guard case ActivationError.invalidActivationData = error else { return false }
            return true
        }
        try ActivationService.cleanupInstanceData(configuration: h.configuration, storage: h.storage)
        let fresh = try h.makeService()
        #expect(await fresh.hasValidActivation() == false)
        try await h.activate(fresh)
        try await fresh.validatePassword(try pin("1234"))
    }

    @Test(
        "removeActivationLocal and cleanupInstanceData delete the activation's tokens, not another instance's",
        arguments: ProtocolAlgorithm.allCases)
    func forgettingRemovesTokens(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let service = try h.makeService()
        try await h.activate(service)
        for _ in 0..<2 { try await service.storeToken(try await service.createToken(authentication: .possession())) }
        let instance = h.configuration.instanceId
        #expect(try h.storage.tokenNames(instanceId: instance).count == 2)
        // Another instance's token in the same directory stays.
        try h.storage.write("other-instance.token-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", [1, 2, 3])
        try await service.removeActivationLocal()
        #expect(try h.storage.tokenNames(instanceId: instance).isEmpty)
        #expect(try h.storage.tokenNames(instanceId: "other-instance").count == 1)

        let again = try h.makeService()
        try await h.activate(again)
        try await again.storeToken(try await again.createToken(authentication: .possession()))
        #expect(try h.storage.tokenNames(instanceId: instance).count == 1)
        try ActivationService.cleanupInstanceData(configuration: h.configuration, storage: h.storage)
        #expect(try h.storage.tokenNames(instanceId: instance).isEmpty)
        #expect(try h.storage.tokenNames(instanceId: "other-instance").count == 1)
    }

    @Test(
        "a key file that does not match, is truncated or missing is invalidActivationData",
        arguments: ProtocolAlgorithm.allCases)
    func corruptKeyFile(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        try await h.activate(try h.makeService())
        let names = h.configuration.storageNames
        let original = try #require(try h.storage.readSecret(names.keys))
        let damaged: [[UInt8]] = [
            Array("SPCK".utf8) + [1] + [UInt8](repeating: 7, count: 32),  // other keys
            Array("SPCK".utf8) + [1, 0, 0],  // truncated
            Array("XXXX".utf8) + [1] + [UInt8](repeating: 7, count: 32),  // bad magic
        ]
        for bytes in damaged {
            let blob = try bytes.withUnsafeBytes { try SecureBytes(copying: $0) }
            try h.storage.writeSecret(names.keys, blob)
            #expect {
                _ = try h.makeService()
            } throws: { error in
                guard case ActivationError.invalidActivationData = error else { return false }
                return true
            }
        }
        try h.storage.remove(names.keys)
        #expect(throws: ActivationError.invalidActivationData(reason: "the key file is missing")) {
            _ = try h.makeService()
        }
        try h.storage.writeSecret(names.keys, original)
        try await h.makeService().validatePassword(try pin("1234"))
    }

    @Test("state written by a newer format is upgradeSDK and is left alone")
    func newerFormat() async throws {
        let h = try Harness()
        try await h.activate(try h.makeService())
        let names = h.configuration.storageNames
        let bytes = try #require(try h.storage.read(names.state))
        var object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        object["formatVersion"] = 2
        let newer = [UInt8](try JSONSerialization.data(withJSONObject: object))
        try h.storage.write(names.state, newer)
        #expect(throws: ActivationError.upgradeSDK(foundVersion: 2)) { _ = try h.makeService() }
        #expect(try h.storage.read(names.state) == newer)
    }

    @Test("two instance ids keep separate activations in one directory", arguments: ProtocolAlgorithm.allCases)
    func instancesAreSeparate(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let first = try h.makeService()
        try await h.activate(first)
        let other = try ActivationConfiguration(
            instanceId: "com.example.other", baseEndpointURL: "https://bank.example/s",
            configuration: try h.serverConfiguration.configurationString(), algorithm: algorithm.rawValue,
            knowledgeKeyParameters: .testing)
        let second = try ActivationService(
            configuration: other, storage: h.storage, transport: h.transport, clock: h.clock)
        #expect(await second.hasValidActivation() == false)
        try await h.activate(second, pin: "9876")
        try await first.validatePassword(try pin("1234"))
        try await second.validatePassword(try pin("9876"))
    }

    @Test("the state file holds no secret key material", arguments: ProtocolAlgorithm.allCases)
    func stateFileIsPublic(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        try await h.activate(try h.makeService(), pin: "13579")
        let text = String(decoding: try #require(try h.storage.read(h.configuration.storageNames.state)), as: UTF8.self)
        #expect(!text.contains("13579"))
        // No key field of either generation's key tree; `keyCheck` and `vaultCheck` are public
        // check values (a hash of the key, not the key).
        for field in ["possession", "transport", "vault", "statusMAC", "counterDataMAC", "sharedInfo2"] {
            #expect(!text.contains("\"\(field)\""))
        }
        for field in ["keyCheck", "vaultCheck"] where text.contains("\"\(field)\"") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            let check = try #require(object[field] as? String)
            #expect((Data(base64Encoded: check)?.count ?? 0) <= 32)
        }
    }

    @Test("a request interceptor sees every request")
    func interceptor() async throws {
        struct Tagger: ActivationRequestInterceptor {
            func process(_ request: inout TransportRequest) { request.headers["X-Trace"] = "t-1" }
        }
        let base = try Harness()
        let configuration = try ActivationConfiguration(
            instanceId: "tagged", baseEndpointURL: "https://bank.example/s",
            configuration: try base.serverConfiguration.configurationString(), algorithm: "LEGACY_P256",
            clientConfiguration: ActivationClientConfiguration(requestInterceptors: [Tagger()], userAgent: nil),
            knowledgeKeyParameters: .testing)
        let service = try ActivationService(
            configuration: configuration, storage: base.storage, transport: base.transport, clock: base.clock)
        try await base.activate(service)
        #expect(!base.transport.sent.isEmpty, "the activation sent requests")
        #expect(base.transport.sent.allSatisfy { $0.header("x-trace") == "t-1" && $0.header("User-Agent") == nil })
    }
}

@Suite("File storage")
struct FileStorageTests {
    @Test("the directory is made private and files are written 0600")
    func permissions() throws {
        let path = temporaryDirectory()
        #expect(mkdir(path, 0o755) == 0)
        let storage = try FileActivationStorage(directory: path)
        var st = stat()
        #expect(stat(path, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o700)
        try storage.write("a", [1, 2, 3])
        #expect(stat(path + "/a", &st) == 0)
        #expect(st.st_mode & 0o777 == 0o600)
        #expect(try storage.read("a") == [1, 2, 3])
        let names = try FileManager.default.contentsOfDirectory(atPath: path)
        #expect(names == ["a"])
        try storage.remove("a")
        try storage.remove("a")
        #expect(try storage.read("a") == nil)
    }

    @Test("a directory the group or others can write is refused and left as it is")
    func writableDirectoryIsRefused() throws {
        let path = temporaryDirectory()
        #expect(mkdir(path, 0o700) == 0 && chmod(path, 0o775) == 0)
        let error = #expect(throws: ActivationError.self) { try FileActivationStorage(directory: path) }
        guard case .wrongParameter(let reason) = error else {
            Issue.record("refused for another reason: \(String(describing: error))")
            return
        }
        #expect(reason.contains("writable by the group or others"))
        var st = stat()
        #expect(stat(path, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o775)
        #expect(try FileManager.default.contentsOfDirectory(atPath: path).isEmpty)
    }

    @Test(
        "a key file left without a state file (an interrupted create) is removed on open",
        arguments: ProtocolAlgorithm.allCases)
    func strayKeyFile(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        try await h.activate(try h.makeService())
        try h.storage.remove(h.configuration.storageNames.state)
        #expect(try h.storage.readSecret(h.configuration.storageNames.keys) != nil)
        let service = try h.makeService()
        #expect(await service.hasValidActivation() == false)
        #expect(try h.storage.readSecret(h.configuration.storageNames.keys) == nil)
    }
}

@Suite("Shared storage")
struct SharedStorageTests {
    @Test(
        "two services over one storage (an app and its extension) never reuse a counter",
        arguments: ProtocolAlgorithm.allCases)
    func twoServicesShareTheCounter(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm)
        let app = try h.makeService()
        let id = try await h.activate(app)
        // V4's activation/confirm took one counter already; V3.3 starts at 0.
        let start = try JSONDecoder().decode(
            CounterView.self, from: Data(try #require(try h.storage.read(h.configuration.storageNames.state)))
        )
        .counterIndex
        let extensionService = try h.makeService()
        var headers: [String] = []
        for round in 0..<6 {
            let signer = round % 2 == 0 ? app : extensionService
            headers.append(
                try await signer.signRequest(
                    method: "POST", uriIdentifier: "/r", body: [], authentication: .possession()
                )
                .value)
        }
        for header in headers {
            _ = try h.server.verifyAuthorization(header: header, method: "POST", uriIdentifier: "/r", body: [])
        }
        // Concurrently, too: the two codes take the next two counters (one each).
        async let a = app.signRequest(method: "POST", uriIdentifier: "/r", body: [], authentication: .possession())
        async let b = extensionService.signRequest(
            method: "POST", uriIdentifier: "/r", body: [], authentication: .possession())
        _ = try await (a, b)
        let stored = try JSONDecoder().decode(
            CounterView.self, from: Data(try #require(try h.storage.read(h.configuration.storageNames.state))))
        #expect(stored.counterIndex == start + 8)
        let next = try await app.signRequest(
            method: "POST", uriIdentifier: "/r", body: [], authentication: .possession())
        _ = try h.server.verifyAuthorization(header: next.value, method: "POST", uriIdentifier: "/r", body: [])
        #expect(try h.server.activationDetail(id).failedAttempts == 0)
        #expect(try h.server.activationDetail(id).counterIndex == start + 9)
    }

    struct CounterView: Decodable { let counterIndex: UInt64 }
}
