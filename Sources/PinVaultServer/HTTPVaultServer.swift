import Foundation
import HTTPClient
import PinVault
import PowerAuthProtocol
import SecureCore
import Synchronization
import VaultOPRFProtocol

/// The server of a server-bound vault (`PinVault.VaultBinding.server(_:)`), reached over HTTP:
/// every request is encrypted with ECIES (PowerAuth 3.3, application scope) to a temporary key from
/// `POST /pa/v3/keystore/create`, whose signed answer must verify under the master server public
/// key of the configuration string, and so is every answer (`VaultOPRFProtocol.VaultOPRFAPI`). The
/// key is kept until shortly before it expires; one the server no longer holds (a restart) is
/// fetched again and the request sent once more, which is safe: the server counted nothing.
///
/// ```swift
/// let options = PinVault.Options(serverConnector: HTTPVaultServer.connector())
/// ```
///
/// The calls are synchronous, as the vault's are: each runs its exchange on the calling thread
/// (`HTTPClient.HTTPClient.sendWaiting(method:path:body:headers:)`, libcurl), needing no task of
/// the cooperative pool, so a vault opened from async code (`PinVault.PinVault.unlock(pin:_:)`,
/// which runs off the executor) or from a test cannot starve the pool. TLS is checked as the
/// connector's `tlsValidation` says; plain `http` goes to loopback only unless allowed.
public final class HTTPVaultServer: VaultOPRFServer, Sendable {
    /// Where the server is.
    public let address: VaultServerAddress
    /// The base URL.
    public let baseURL: URL
    /// How long one request may take.
    public let timeout: TimeInterval
    let configuration: SDKConfiguration
    let client: HTTPClient
    /// The temporary key in use (public: identifier, public key, expiry).
    let temporaryKey = Mutex<ApplicationTemporaryKey?>(nil)
    /// A key expiring sooner than this is not used (the request may take `timeout`).
    static let expiryMargin: TimeInterval = 30

    /// The base URL, for messages.
    public var location: String { address.url }

    /// A client for `address`.
    /// - Parameters:
    ///   - address: the URL and configuration string the vault records.
    ///   - timeout: seconds per request (default 10).
    ///   - tlsValidation: how the server's certificate is checked (default the system store).
    ///   - allowInsecureHTTP: allow plain http to a host that is not loopback (default false).
    /// - Throws: `PinVault.VaultServerError.refused(reason:)` for a URL that is not http(s), plain
    ///   http to a non-loopback host, a TLS setting that cannot be used (a CA file without a
    ///   certificate, a pin of the wrong length) or a configuration string that does not parse.
    public init(
        address: VaultServerAddress, timeout: TimeInterval = 10, tlsValidation: HTTPClient.TLSValidation = .system,
        allowInsecureHTTP: Bool = false
    ) throws(VaultServerError) {
        guard let url = URL(string: address.url), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", url.host != nil
        else { throw .refused(reason: "the server URL must be http:// or https:// with a host") }
        let sdk: SDKConfiguration
        do throws(ProtocolError) {
            sdk = try SDKConfiguration(parsing: address.configuration)
        } catch {
            throw .refused(reason: "the configuration string does not parse: \(error)")
        }
        guard (try? P256.validate(publicKey: sdk.masterServerPublicKey)) != nil else {
            throw .refused(reason: "the configuration's master server key is not usable")
        }
        configuration = sdk
        self.address = address
        self.baseURL = url
        self.timeout = timeout
        do throws(HTTPClientError) {
            client = try HTTPClient(
                configuration: HTTPClient.Configuration(
                    baseURL: url, timeout: .milliseconds(Int64((max(timeout, 0.001) * 1000).rounded(.up))),
                    tlsValidation: tlsValidation, allowInsecureHTTP: allowInsecureHTTP))
        } catch {
            throw .refused(reason: "\(error)")
        }
    }

    /// A connector for `PinVault.PinVault.Options.serverConnector`: an address the file records
    /// that does not make a client gives a server whose every call fails with that reason.
    /// - Parameters:
    ///   - timeout: seconds per request.
    ///   - tlsValidation: how the server's certificate is checked.
    ///   - allowInsecureHTTP: allow plain http to a host that is not loopback.
    /// - Returns: the connector.
    public static func connector(
        timeout: TimeInterval = 10, tlsValidation: HTTPClient.TLSValidation = .system, allowInsecureHTTP: Bool = false
    ) -> @Sendable (VaultServerAddress) -> any VaultOPRFServer {
        { address in
            do throws(VaultServerError) {
                return try HTTPVaultServer(
                    address: address, timeout: timeout, tlsValidation: tlsValidation,
                    allowInsecureHTTP: allowInsecureHTTP)
            } catch {
                return UnusableServer(location: address.url, error: error)
            }
        }
    }

    // MARK: - VaultOPRFServer

    /// Creates a vault record and evaluates its first blinded element.
    public func register(blinded: [UInt8]) throws(VaultServerError) -> (
        vaultId: [UInt8], evaluation: VaultServerEvaluation
    ) {
        let answer = try call(.register, vaultId: Self.noVault) { $0.copyBytes(from: blinded) }
        let idEnd = VaultOPRFAPI.vaultIdByteCount
        let evaluation = try Self.evaluation(answer[idEnd...])
        return (Array(answer[..<idEnd]), evaluation)
    }

    /// Stores the verifier.
    public func enroll(vaultId: [UInt8], verifier: SecureBytes) throws(VaultServerError) {
        guard verifier.count == VaultOPRFAPI.proofByteCount else { throw .refused(reason: "verifier size") }
        let answer = try call(.enroll, vaultId: vaultId) { out in
            verifier.withUnsafeBytes { out.copyMemory(from: $0) }
        }
        _ = try Self.counters(answer[...])
    }

    /// Counts one attempt, then evaluates.
    public func evaluate(vaultId: [UInt8], blinded: [UInt8]) throws(VaultServerError) -> VaultServerEvaluation {
        try Self.evaluation(try call(.evaluate, vaultId: vaultId) { $0.copyBytes(from: blinded) }[...])
    }

    /// Proves the unlock.
    public func confirm(vaultId: [UInt8], verifier: SecureBytes, challenge: [UInt8]) throws(VaultServerError)
        -> VaultServerCounters
    {
        let proof: [UInt8]
        do throws(SecureCoreError) {
            proof = try VaultOPRFAPI.proof(verifier: verifier, vaultId: vaultId, challenge: challenge)
        } catch {
            throw .refused(reason: "computing the proof failed: \(error)")
        }
        return try Self.counters(try call(.confirm, vaultId: vaultId) { $0.copyBytes(from: proof) }[...])
    }

    /// The counter.
    public func status(vaultId: [UInt8]) throws(VaultServerError) -> VaultServerCounters {
        try Self.counters(try call(.status, vaultId: vaultId) { _ in }[...])
    }

    /// Proves the evaluation with `challenge` opened the vault and deletes the record.
    public func remove(vaultId: [UInt8], verifier: SecureBytes, challenge: [UInt8]) throws(VaultServerError) {
        let proof: [UInt8]
        do throws(SecureCoreError) {
            proof = try VaultOPRFAPI.removalProof(verifier: verifier, vaultId: vaultId, challenge: challenge)
        } catch {
            throw .refused(reason: "computing the proof failed: \(error)")
        }
        _ = try Self.counters(try call(.remove, vaultId: vaultId) { $0.copyBytes(from: proof) }[...])
    }

    // MARK: - Exchange

    static let noVault = [UInt8](repeating: 0, count: VaultOPRFAPI.vaultIdByteCount)

    /// Encrypts the request, posts it, decrypts the answer (public bytes: identifiers, elements, counters).
    /// A request refused for its temporary key is sent once more under a new one.
    func call(
        _ operation: VaultOPRFAPI.Operation, vaultId: [UInt8], fill: (UnsafeMutableRawBufferPointer) -> Void
    ) throws(VaultServerError) -> [UInt8] {
        guard vaultId.count == VaultOPRFAPI.vaultIdByteCount else { throw .refused(reason: "vault identifier size") }
        let plaintext = try Self.core { () throws(SecureCoreError) in
            try VaultOPRFAPI.request(operation, vaultId: vaultId, fill: fill)
        }
        defer { plaintext.destroy() }
        var retried = false
        while true {
            let key = try currentTemporaryKey()
            let sealed: (cryptogram: ECIESCryptogram, envelope: ECIESEnvelope)
            do throws(ECIESError) {
                sealed = try ECIESEncryptor(
                    configuration: try VaultOPRFAPI.eciesConfiguration(
                        configuration, temporaryKeyId: key.temporaryKeyId),
                    serverPublicKey: key.publicKey
                ).encryptRequest(plaintext)
            } catch {
                throw .refused(reason: "encrypting the request failed: \(error)")
            }
            guard let body = try? JSONEncoder().encode(VaultOPRFAPI.Cryptogram(sealed.cryptogram)) else {
                throw .refused(reason: "encoding the request failed")
            }
            let (status, data) = try post(operation.path, body)
            if status == 200 { return try Self.open(data, sealed.envelope) }
            let failure = try? JSONDecoder().decode(VaultOPRFAPI.Failure.self, from: data)
            if status == 400, failure?.error == VaultOPRFAPI.temporaryKeyRefused, !retried {
                retried = true
                temporaryKey.withLock { if $0 == key { $0 = nil } }
                continue
            }
            let counters = failure?.counters.map(Self.counters(_:))
            switch (status, failure?.error) {
            case (403, "blocked"):
                throw .blocked(counters ?? VaultServerCounters(failures: 0, maxFailures: 0, blocked: true))
            case (404, "unknown-vault"): throw .unknownVault
            default: throw .refused(reason: "HTTP \(status) \(failure?.error ?? "")")
            }
        }
    }

    /// The temporary key: the one in use while it is valid for more than ``expiryMargin``, else a new one.
    func currentTemporaryKey() throws(VaultServerError) -> ApplicationTemporaryKey {
        let now = Date()
        if let key = temporaryKey.withLock({ $0 }), key.expiresAt.timeIntervalSince(now) > Self.expiryMargin {
            return key
        }
        let request: ApplicationTemporaryKey.Request
        do throws(JWTError) {
            request = try ApplicationTemporaryKey.Request(configuration: configuration)
        } catch {
            throw .refused(reason: "signing the temporary key request failed: \(error)")
        }
        guard let body = try? JSONEncoder().encode(RequestEnvelope(requestObject: request.message)) else {
            throw .refused(reason: "encoding the temporary key request failed")
        }
        let (status, data) = try post(TemporaryKeyAPI.createKey.path, body)
        guard status == 200, let answer = try? JSONDecoder().decode(ResponseEnvelope<JWTMessage>.self, from: data),
            answer.status == "OK", let message = answer.responseObject
        else { throw .refused(reason: "keystore/create: HTTP \(status)") }
        let key: ApplicationTemporaryKey
        do throws(JWTError) {
            key = try ApplicationTemporaryKey(
                verifying: message, request: request, configuration: configuration, now: Date())
        } catch {
            throw .refused(reason: "keystore/create: \(error)")
        }
        temporaryKey.withLock { $0 = key }
        return key
    }

    /// Decrypts a 200 answer.
    static func open(_ data: Data, _ envelope: ECIESEnvelope) throws(VaultServerError) -> [UInt8] {
        guard let wire = try? JSONDecoder().decode(VaultOPRFAPI.Cryptogram.self, from: data),
            let cryptogram = wire.cryptogram
        else { throw .refused(reason: "the answer is not an ECIES cryptogram") }
        let opened: SecureBytes?
        do throws(ECIESError) {
            opened = try envelope.decryptResponse(cryptogram)
        } catch {
            throw .refused(reason: "the answer does not decrypt: \(error)")
        }
        guard let opened else { throw .refused(reason: "empty answer") }
        defer { opened.destroy() }
        return opened.withUnsafeBytes { Array($0) }
    }

    /// One POST on the calling thread.
    func post(_ path: String, _ body: Data) throws(VaultServerError) -> (Int, Data) {
        do throws(HTTPClientError) {
            return try client.sendWaiting(method: "POST", path: path, body: body)
        } catch {
            switch error {
            case .tls(let failure): throw .tls(reason: "\(failure)")
            default: throw .network(reason: "\(address.url): \(error)")
            }
        }
    }

    static func counters(_ bytes: ArraySlice<UInt8>) throws(VaultServerError) -> VaultServerCounters {
        guard let parsed = VaultOPRFAPI.Counters(bytes) else { throw .refused(reason: "malformed counters") }
        return counters(parsed)
    }

    static func counters(_ c: VaultOPRFAPI.Counters) -> VaultServerCounters {
        VaultServerCounters(
            failures: c.failures, maxFailures: c.maxFailures,
            blocked: c.state == .blocked)
    }

    static func evaluation(_ bytes: ArraySlice<UInt8>) throws(VaultServerError) -> VaultServerEvaluation {
        let element = OPRF.elementByteCount
        let challenge = VaultOPRFAPI.challengeByteCount
        guard bytes.count == element + challenge + VaultOPRFAPI.countersByteCount else {
            throw .refused(reason: "malformed evaluation")
        }
        let start = bytes.startIndex
        return VaultServerEvaluation(
            evaluated: Array(bytes[start..<start + element]),
            challenge: Array(bytes[(start + element)..<(start + element + challenge)]),
            counters: try counters(bytes[(start + element + challenge)...]))
    }

    static func core<R>(_ body: () throws(SecureCoreError) -> R) throws(VaultServerError) -> R {
        do throws(SecureCoreError) {
            return try body()
        } catch {
            throw .refused(reason: "secure memory: \(error)")
        }
    }
}

/// The server of an address that does not make a client: every call fails with the same reason.
struct UnusableServer: VaultOPRFServer {
    let location: String
    let error: VaultServerError

    func register(blinded: [UInt8]) throws(VaultServerError) -> (vaultId: [UInt8], evaluation: VaultServerEvaluation) {
        throw error
    }
    func enroll(vaultId: [UInt8], verifier: SecureBytes) throws(VaultServerError) { throw error }
    func evaluate(vaultId: [UInt8], blinded: [UInt8]) throws(VaultServerError) -> VaultServerEvaluation { throw error }
    func confirm(vaultId: [UInt8], verifier: SecureBytes, challenge: [UInt8]) throws(VaultServerError)
        -> VaultServerCounters
    { throw error }
    func status(vaultId: [UInt8]) throws(VaultServerError) -> VaultServerCounters { throw error }
    func remove(vaultId: [UInt8], verifier: SecureBytes, challenge: [UInt8]) throws(VaultServerError) { throw error }
}
