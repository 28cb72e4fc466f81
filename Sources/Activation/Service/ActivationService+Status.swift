import Foundation
import PowerAuthProtocol
import SecureCore

extension ActivationService {
    /// Fetches and decrypts the activation status. While the activation is
    /// active it also checks the counters: a server ahead of the device is
    /// caught up with, a gap the look-ahead window cannot bridge is reported
    /// as ``ClientActivationState/deadlock``. Never removes anything.
    /// - Returns: the status.
    /// - Throws: ``ActivationError/missingActivation``, the network and server
    ///   errors, ``ActivationError/protocolError(_:)`` with
    ///   `PowerAuthProtocol.ProtocolError.unknownActivationState(_:)` for a state
    ///   this library does not know, ``ActivationError/invalidResponse(reason:)``.
    public func fetchActivationStatus() async throws(ActivationError) -> ActivationStatus {
        if isV4 { return try await v4FetchStatus() }
        guard let before = record, let keys else { throw .missingActivation }
        let challenge = try coreStep { () throws(SecureCoreError) in
            try SecureRandom.bytes(count: ProtocolConstants.challengeByteCount)
        }
        let response = try await send(
            ActivationAPI.activationStatus,
            ActivationStatusRequest(activationId: before.activationId, challenge: Base64.encode(challenge)),
            authentication: nil)
        guard response.activationId == before.activationId,
            let encrypted = Base64.decode(response.encryptedStatusBlob),
            let nonce = response.nonce.flatMap(Base64.decode)
        else { throw .invalidResponse(reason: "activation/status: malformed field") }
        let blob: ActivationStatusBlob
        do throws(ProtocolError) {
            blob = try crypto.decryptStatusBlob(
                encrypted, transportKey: keys.transport, challenge: challenge, nonce: nonce)
        } catch {
            if case .unknownActivationState = error { throw .protocolError(error) }
            throw .invalidResponse(reason: "activation/status: the status blob does not open")
        }
        var state = ClientActivationState(blob.state)
        if blob.state == .active, let current = record, current.activationId == before.activationId {
            state = try synchroniseCounter(current, blob: blob, transportKey: keys.transport) ? .active : .deadlock
        }
        let expiry = try ActivationStatus.readCustomObject(
            response.customObject, path: ActivationAPI.activationStatus.path)
        return ActivationStatus(
            state: state, failCount: Int(blob.failedAttempts), maxFailCount: Int(blob.maxFailedAttempts),
            blockExpirationTime: expiry, counterLookAhead: Int(blob.counterLookAhead),
            customObject: response.customObject)
    }

    /// Compares the local counter with the server's hash. Returns `false`
    /// for a deadlock.
    private func synchroniseCounter(
        _ current: LocalActivationRecord, blob: ActivationStatusBlob, transportKey: SecureBytes
    )
        throws(ActivationError) -> Bool
    {
        let lookAhead = max(1, Int(blob.counterLookAhead))
        // The server ahead of (or level with) the device: move forward to it.
        let counter = try current.currentCounter
        let distance = try protocolStep { () throws(ProtocolError) in
            try crypto.counterDistance(
                from: counter, toServerHash: blob.counterDataHash, transportKey: transportKey, lookAhead: lookAhead)
        }
        if let distance {
            if distance > 0 {
                // Never backwards: another process may have moved on meanwhile.
                let target = current.counterIndex + UInt64(distance)
                try mutateRecord { (r) throws(ActivationError) in
                    while r.counterIndex < target { try r.advanceCounter() }
                }
            }
            return true
        }
        // The server behind the device (codes computed but never received):
        // fine while the next code still falls inside the server's window.
        for (index, text) in current.counterHistory.enumerated() {
            let behind = index + 1
            guard behind < lookAhead else { break }
            let hash = try protocolStep { () throws(ProtocolError) in
                try crypto.counterHash(try HashCounter(base64: text), transportKey: transportKey)
            }
            if constantTimeEqual(hash, blob.counterDataHash) { return true }
        }
        return false
    }
}
