import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore
import Synchronization

// V4 upgrades: from V3.3, and from one V4 suite to a stronger one.
extension ActivationServer {
    // MARK: - Upgrade from V3.3

    /// `upgrade/start`: a V3.3 code over the V4-encrypted body (application scope), then a new
    /// activation secret by the V4 shared-secret exchange, a new P-384 server key and a fresh
    /// `CTR_DATA` (the numeric counter continues from V3.3). The activation keeps answering V3.3
    /// until `upgrade/confirm`; a repeated start (a lost response) replaces the pending V4 state.
    func v4StartUpgrade(_ request: TransportRequest) throws(ActivationServerError) -> TransportResponse {
        // A V4 code: the upgrade of a V4 activation to a stronger suite.
        if let value = request.header(AuthorizationHeader.name), (try? V4AuthorizationHeader.parse(value)) != nil {
            return try v4StartSuiteUpgrade(request)
        }
        let (record, keys, _) = try authenticate(
            request, V4API.upgradeStart.uriIdentifier, allowed: [.possessionKnowledge])
        keys.destroy()
        guard record.v4 == nil || record.v4?.upgradePending == true else { throw .upgradeNotAvailable }
        let opened = try v4Open(request, body: request.body, sharedInfo1: .upgradeStart, activation: nil)
        let body = try Self.decodePlaintext(opened.plaintext, V4UpgradeStartRequest.self)
        opened.plaintext?.destroy()
        var (state, shared) = try Self.v4UpgradedState(body, suite: configuration.algorithm)
        state.upgradePending = true
        let fresh = state
        try store.update(activationId: record.activationId) { (r) throws(ActivationServerError) in
            guard r.state == .active, r.v4 == nil || r.v4?.upgradePending == true else {
                throw .upgradeNotAvailable
            }
            r.v4 = fresh
            if let enable = body.enableBiometry { r.biometryEnabled = enable }
        }
        let response = V4UpgradeStartResponse(
            sharedSecretResponse: shared,
            serverPublicKeys: try Self.v4PublicKeys(fresh), ctrData: fresh.counter.base64)
        return try Self.v4Encrypted(try v4Seal(try Self.encodePlaintext(response), opened))
    }

    /// The new state an `upgrade/start` body asks for, in `suite`: the device's P-384 key (and
    /// ML-DSA key for a hybrid suite) checked, the shared-secret exchange answered, a fresh server
    /// key and counter; confirmed, nothing pending yet.
    static func v4UpgradedState(_ body: V4UpgradeStartRequest, suite: ProtocolAlgorithm)
        throws(ActivationServerError) -> (V4ActivationState, V4SharedSecretResponse)
    {
        guard let device = Base64.decode(body.devicePublicKeys.ecdsa), device.count == 97,
            (try? ECP384KeyPair.validate(publicKey: device)) != nil
        else { throw .malformedRequest(reason: "devicePublicKeys.ecdsa is not a P-384 key") }
        let devicePostQuantum = try v4DevicePostQuantumKey(body.devicePublicKeys, suite: suite)
        let (shared, secret) = try v4Respond(to: body.sharedSecretRequest, suite: suite)
        var state = try V4ActivationState(algorithm: suite)
        state.activationSecret = secret
        state.devicePublicKey = device
        state.devicePostQuantumPublicKey = devicePostQuantum
        state.confirmationPending = false
        return (state, shared)
    }

    /// `upgrade/start` for a V4 activation whose suite is weaker than the one this application
    /// serves: a V4 `possession_knowledge` code of the current state (counted), the request
    /// encrypted in application scope in the new suite, and a new state in that suite kept as
    /// ``ActivationRecord/v4Upgrade`` beside the current one, which keeps working until
    /// `upgrade/confirm` (a V4 possession code of the new state) makes the new one current.
    /// Starting again replaces a pending state the device never confirmed.
    func v4StartSuiteUpgrade(_ request: TransportRequest) throws(ActivationServerError) -> TransportResponse {
        let (record, keys, _) = try v4Authenticate(request, V4API.upgradeStart, allowed: [.possessionKnowledge])
        keys.destroy()
        let suite = configuration.algorithm
        guard let current = record.v4, !current.upgradePending, suite.isStronger(than: current.algorithm) else {
            throw .upgradeNotAvailable
        }
        let opened = try v4Open(request, body: request.body, sharedInfo1: .upgradeStart, activation: nil, signed: true)
        let body = try Self.decodePlaintext(opened.plaintext, V4UpgradeStartRequest.self)
        opened.plaintext?.destroy()
        let (fresh, shared) = try Self.v4UpgradedState(body, suite: suite)
        let previous = current.algorithm
        try store.update(activationId: record.activationId) { (r) throws(ActivationServerError) in
            guard r.state == .active, r.v4?.algorithm == previous else { throw .upgradeNotAvailable }
            r.v4Upgrade = fresh
            // The sealed state changes with it (stores write what changed).
            r.v4?.keyGeneration &+= 1
            // A device that cannot carry its biometry key across turns the factor off now; the
            // upgrade never turns it on (biometry/add does).
            if body.enableBiometry == false { r.biometryEnabled = false }
        }
        let response = V4UpgradeStartResponse(
            sharedSecretResponse: shared, serverPublicKeys: try Self.v4PublicKeys(fresh),
            ctrData: fresh.counter.base64)
        return try Self.v4Encrypted(try v4Seal(try Self.encodePlaintext(response), opened))
    }

    /// `upgrade/confirm` of a suite upgrade: a V4 possession code of the pending state (its own
    /// keys and counter, the look-ahead window), then the pending state becomes the current one,
    /// carrying the factor flags over; a failure is possession-only and so never counted. With no
    /// pending state, a repeated confirmation is checked against the current state (the device
    /// resends one whose answer it lost).
    func v4ConfirmSuiteUpgrade(_ request: TransportRequest, _ record: ActivationRecord, pending: V4ActivationState)
        throws(ActivationServerError) -> TransportResponse
    {
        guard let value = request.header(AuthorizationHeader.name),
            let header = try? V4AuthorizationHeader.parse(value), header.factorSet == .possession,
            header.applicationKey == applicationKey, let secret = pending.activationSecret,
            let uriIdentifier = V4API.upgradeConfirm.uriIdentifier
        else { throw .authenticationFailed }
        let keys = try protocolStep { () throws(ProtocolError) in try V4ActivationKeys(activationSecret: secret) }
        defer { keys.destroy() }
        let appSecret = applicationSecret
        let lookAhead = configuration.lookAhead
        let match = try? protocolStep { () throws(ProtocolError) -> V4AuthenticationCodeMatch? in
            try V4AuthenticationCode.validate(
                header.authenticationCode, factorSet: .possession, format: .online, possession: keys.possession,
                knowledgeCandidates: [], biometryCandidates: [], counter: pending.counter, lookAhead: lookAhead,
                data: try RequestData(
                    method: request.method, uriIdentifier: uriIdentifier, nonce: header.nonce, body: request.body
                ).normalized(applicationSecret: appSecret))
        }
        guard let found = match ?? nil else { throw .authenticationFailed }
        let moved = try protocolStep { () throws(ProtocolError) in try pending.counter.advanced(by: found.steps + 1) }
        try store.update(activationId: record.activationId) { (r) throws(ActivationServerError) in
            guard r.state == .active, let waiting = r.v4Upgrade, waiting.changeMarker == pending.changeMarker else {
                throw .authenticationFailed
            }
            var next = waiting
            next.counter = moved
            next.keyGeneration = (r.v4?.keyGeneration ?? 0) &+ 1
            // The new key tree's knowledge and biometry keys (the device wrapped the new tree's
            // knowledge key under the PIN) replace any rotated ones of the old suite.
            r.v4 = next
            r.v4Upgrade = nil
        }
        return try Self.ok(EmptyMessage?.none)
    }
}
