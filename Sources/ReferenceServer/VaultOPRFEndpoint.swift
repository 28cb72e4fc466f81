import ActivationServer
import Foundation
import HTTPServer
import PowerAuthProtocol
import SecureCore
import VaultOPRFProtocol

/// The server binding of PIN vaults: the endpoints under `/securepin/v1/vault/`
/// (`VaultOPRFProtocol.VaultOPRFAPI`). Each request is one ECIES 3.3 cryptogram in the
/// application scope under a temporary key the client fetched from `POST /pa/v3/keystore/create`;
/// the answer is encrypted under the same envelope. The cryptogram is opened by the PowerAuth
/// server's own code (`ActivationServer.ActivationServer.openApplicationRequest(_:sharedInfo1:)`):
/// its temporary keys, its ±60 s window, its replay cache. Per vault the OPRF key is
/// `DeriveKeyPair(master, "SecurePIN vault v1" ‖ vaultId)`, the master secret sealed at rest by
/// ``OPRFVaultStore``; it exists in memory only while one request is evaluated.
///
/// An evaluation is counted (``OPRFVaultStore`` commits the count and its audit row) before the
/// key is derived, and only after the request decrypted: a request under an unknown or expired
/// temporary key counts nothing. Only a proof under the verifier enrolled at registration returns
/// the counter to zero, and at the policy's maximum the vault is blocked.
public final class VaultOPRFEndpoint: Sendable {
    /// The store.
    public let store: OPRFVaultStore
    let master: SecureBytes
    let server: ActivationServer
    let maxFailures: Int

    /// Prepares the endpoints.
    /// - Parameters:
    ///   - store: the vault tables.
    ///   - server: the PowerAuth server whose temporary keys and replay cache open the requests;
    ///     its configuration gives the failure limit.
    /// - Throws: ``ReferenceServerError``.
    public init(store: OPRFVaultStore, server: ActivationServer) throws(ReferenceServerError) {
        self.store = store
        self.server = server
        master = try store.masterSecret()
        maxFailures = server.configuration.maxFailedAttempts
    }

    /// Answers one request under `/securepin/v1/vault/`.
    /// - Parameters:
    ///   - request: the HTTP request.
    ///   - now: the server's time for the audit rows (the ECIES window uses the PowerAuth server's clock).
    /// - Returns: the answer.
    public func respond(to request: HTTPRequest, now: Date = Date()) -> HTTPResponse {
        guard let operation = VaultOPRFAPI.Operation(path: request.path) else {
            return Self.failure(404, "unknown-endpoint")
        }
        guard request.method == "POST" else { return Self.failure(405, "method-not-allowed") }
        guard let wire = try? JSONDecoder().decode(VaultOPRFAPI.Cryptogram.self, from: request.body),
            let cryptogram = wire.cryptogram, cryptogram.temporaryKeyId != nil, cryptogram.ephemeralPublicKey != nil,
            cryptogram.nonce != nil, cryptogram.timestamp != nil
        else { return Self.failure(400, "malformed") }
        let opened: (plaintext: SecureBytes?, envelope: ECIESEnvelope)
        do throws(ActivationServerError) {
            opened = try server.openApplicationRequest(cryptogram, sharedInfo1: VaultOPRFAPI.sharedInfo1)
        } catch {
            switch error {
            case .temporaryKeyFailure: return Self.failure(400, VaultOPRFAPI.temporaryKeyRefused)
            case .requestExpired, .replayedRequest: return Self.failure(400, "expired")
            default: return Self.failure(400, "malformed")
            }
        }
        guard let plaintext = opened.plaintext else { return Self.failure(400, "malformed") }
        defer { plaintext.destroy() }
        let header = 1 + VaultOPRFAPI.vaultIdByteCount
        guard plaintext.count == header + operation.requestBodyByteCount else { return Self.failure(400, "malformed") }
        // The operation byte and the vault identifier are public; the body may hold the verifier.
        let (op, vaultId) = plaintext.withUnsafeBytes { raw in (raw[0], Array(raw[1..<header])) }
        guard op == operation.rawValue else { return Self.failure(400, "malformed") }
        do throws(Failure) {
            let answer = try handle(operation, vaultId: vaultId, plaintext: plaintext, bodyAt: header, now: now)
            defer { answer.destroy() }
            let sealed = try Failure.lift { () throws(ECIESError) in try opened.envelope.encryptResponse(answer) }
            guard let body = try? JSONEncoder().encode(VaultOPRFAPI.Cryptogram(sealed)) else {
                return Self.failure(500, "internal")
            }
            return HTTPResponse(status: 200, contentType: "application/json", body: body)
        } catch {
            return error.response
        }
    }

    /// The plaintext of the answer, in secure memory.
    func handle(
        _ operation: VaultOPRFAPI.Operation, vaultId: [UInt8], plaintext: SecureBytes, bodyAt: Int, now: Date
    ) throws(Failure) -> SecureBytes {
        switch operation {
        case .register:
            let id = try Failure.core { () throws(SecureCoreError) in
                try SecureRandom.bytes(count: VaultOPRFAPI.vaultIdByteCount)
            }
            let challenge = try newChallenge()
            let blinded = plaintext.withUnsafeBytes { Array($0[bodyAt...]) }
            let evaluated = try evaluate(blinded, vaultId: id)
            let counters = try Failure.store { () throws(OPRFVaultStore.Refusal) in
                try store.register(vaultId: id, challenge: challenge, maxFailures: maxFailures, now: now)
            }
            return try Failure.publicAnswer(id + evaluated + challenge + counters.bytes)
        case .enroll:
            let verifier = try Failure.core { () throws(SecureCoreError) in
                try plaintext.withUnsafeBytes { (raw) throws(SecureCoreError) in
                    try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: raw[bodyAt...]))
                }
            }
            defer { verifier.destroy() }
            let counters = try Failure.store { () throws(OPRFVaultStore.Refusal) in
                try store.enroll(vaultId: vaultId, verifier: verifier, now: now)
            }
            return try Failure.publicAnswer(counters.bytes)
        case .evaluate:
            let blinded = plaintext.withUnsafeBytes { Array($0[bodyAt...]) }
            // Checked before counting: a malformed element is refused and counts nothing.
            guard blinded.count == OPRF.elementByteCount, blinded.contains(where: { $0 != 0 }) else {
                throw .answer(400, "malformed", nil)
            }
            let challenge = try newChallenge()
            // Counted and committed first: a server killed after this line has counted the attempt.
            let counters = try Failure.store { () throws(OPRFVaultStore.Refusal) in
                try store.beginAttempt(vaultId: vaultId, challenge: challenge, now: now)
            }
            let evaluated = try evaluate(blinded, vaultId: vaultId)
            return try Failure.publicAnswer(evaluated + challenge + counters.bytes)
        case .confirm:
            let proof = plaintext.withUnsafeBytes { Array($0[bodyAt...]) }
            let counters = try Failure.store { () throws(OPRFVaultStore.Refusal) in
                try store.confirm(vaultId: vaultId, proof: proof, now: now)
            }
            return try Failure.publicAnswer(counters.bytes)
        case .remove:
            let proof = plaintext.withUnsafeBytes { Array($0[bodyAt...]) }
            let counters = try Failure.store { () throws(OPRFVaultStore.Refusal) in
                try store.remove(vaultId: vaultId, proof: proof, now: now)
            }
            return try Failure.publicAnswer(counters.bytes)
        case .status:
            let counters = try Failure.store { () throws(OPRFVaultStore.Refusal) in
                try store.counters(vaultId: vaultId)
            }
            return try Failure.publicAnswer(counters.bytes)
        }
    }

    /// `BlindEvaluate` under the vault's key, which is derived here and destroyed on return.
    func evaluate(_ blinded: [UInt8], vaultId: [UInt8]) throws(Failure) -> [UInt8] {
        let key = try Failure.core { () throws(SecureCoreError) in
            try OPRF.deriveKey(seed: master, info: Array("SecurePIN vault v1".utf8) + vaultId)
        }
        defer { key.destroy() }
        do throws(SecureCoreError) {
            return try OPRF.blindEvaluate(blinded, key: key)
        } catch {
            throw .answer(400, "malformed", nil)
        }
    }

    func newChallenge() throws(Failure) -> [UInt8] {
        try Failure.core { () throws(SecureCoreError) in
            try SecureRandom.bytes(count: VaultOPRFAPI.challengeByteCount)
        }
    }

    static func failure(_ status: Int, _ code: String, _ counters: VaultOPRFAPI.Counters? = nil) -> HTTPResponse {
        let body = (try? JSONEncoder().encode(VaultOPRFAPI.Failure(error: code, counters: counters))) ?? Data()
        return HTTPResponse(status: status, contentType: "application/json", body: body)
    }

    /// An answer other than 200.
    enum Failure: Error {
        case answer(Int, String, VaultOPRFAPI.Counters?)

        var response: HTTPResponse {
            switch self {
            case .answer(let status, let code, let counters): VaultOPRFEndpoint.failure(status, code, counters)
            }
        }

        static func store<R>(_ body: () throws(OPRFVaultStore.Refusal) -> R) throws(Failure) -> R {
            do throws(OPRFVaultStore.Refusal) {
                return try body()
            } catch {
                switch error {
                case .unknownVault: throw .answer(404, "unknown-vault", nil)
                case .blocked(let c): throw .answer(403, "blocked", c)
                case .wrongState(let c): throw .answer(409, "wrong-state", c)
                case .proofRefused(let c): throw .answer(401, "proof-refused", c)
                case .storage: throw .answer(500, "storage", nil)
                }
            }
        }

        static func core<R>(_ body: () throws(SecureCoreError) -> R) throws(Failure) -> R {
            do throws(SecureCoreError) {
                return try body()
            } catch {
                throw .answer(500, "internal", nil)
            }
        }

        static func lift<R>(_ body: () throws(ECIESError) -> R) throws(Failure) -> R {
            do throws(ECIESError) {
                return try body()
            } catch {
                throw .answer(500, "internal", nil)
            }
        }

        /// Public answer bytes (identifiers, elements, counters) as the plaintext to encrypt.
        static func publicAnswer(_ bytes: [UInt8]) throws(Failure) -> SecureBytes {
            try core { () throws(SecureCoreError) in try OPRFVaultStore.secureCopy(bytes) }
        }
    }
}
