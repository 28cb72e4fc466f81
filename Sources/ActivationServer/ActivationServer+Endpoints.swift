import Foundation
import PowerAuthProtocol
import SecureCore

extension ActivationServer {
    /// Handles one API request (`docs/activation-api.md`). Never throws: every
    /// failure becomes the error answer upstream gives for it.
    /// - Parameter request: the request.
    /// - Returns: the response.
    public func handle(_ request: TransportRequest) async -> TransportResponse {
        respond(to: request)
    }

    /// The synchronous form of ``handle(_:)``, for front ends that answer on
    /// their own threads (an HTTP server's connection threads): it may block
    /// on the store (for example SQLite's busy timeout) and never suspends.
    /// - Parameter request: the request.
    /// - Returns: the response.
    public func respond(to request: TransportRequest) -> TransportResponse {
        // One request scope: the request's short-lived secrets (shared secret, factor keys,
        // opened record) skip the per-use no-access toggling until the answer is ready.
        SecureMemory.withRequestScope { respondInScope(to: request) }
    }

    private func respondInScope(to request: TransportRequest) -> TransportResponse {
        if Self.v4Paths.contains(request.path) { return respondV4(to: request) }
        let isValidate = request.path == ActivationAPI.validateSignature.path
        let methods: Set<String> = isValidate ? ["GET", "POST", "PUT", "DELETE"] : [ActivationAPI.method]
        let known = Self.paths.contains(request.path)
        guard known else { return Self.error(404, ActivationAPI.ErrorCode.request, "unknown endpoint") }
        guard methods.contains(request.method) else {
            return Self.error(405, ActivationAPI.ErrorCode.request, "method not allowed")
        }
        do throws(ActivationServerError) {
            switch request.path {
            case TemporaryKeyAPI.createKey.path:
                return try Self.ok(try createTemporaryKey(try Self.decode(request, JWTMessage.self)))
            case ActivationAPI.createActivation.path:
                return try createActivation(request)
            case ActivationAPI.activationStatus.path:
                return try Self.ok(try status(try Self.decode(request, ActivationStatusRequest.self)))
            case ActivationAPI.removeActivation.path:
                // restful-integration validateRequestSignature's default: two factors.
                let (record, keys, _) = try authenticate(
                    request, ActivationAPI.removeActivation.uriIdentifier,
                    allowed: [.possessionKnowledge, .possessionBiometry, .possessionKnowledgeBiometry])
                keys.destroy()
                try removeActivation(record.activationId)
                return try Self.ok(ActivationRemoveResponse(activationId: record.activationId))
            case ActivationAPI.validateSignature.path:
                let (_, keys, _) = try authenticate(
                    request, ActivationAPI.validateSignature.uriIdentifier, allowed: nil)
                keys.destroy()
                if let response = Self.emptyOK { return response }
                return try Self.ok(EmptyMessage?.none)
            case ActivationAPI.createToken.path:
                return try createToken(request)
            case ActivationAPI.removeToken.path:
                return try removeToken(request)
            case ActivationAPI.unlockVault.path:
                return try unlockVault(request)
            case ActivationAPI.startUpgrade.path:
                return try startUpgrade(request)
            case ActivationAPI.commitUpgrade.path:
                let (_, keys, _) = try authenticate(
                    request, ActivationAPI.commitUpgrade.uriIdentifier, allowed: [.possession])
                keys.destroy()
                throw .upgradeNotAvailable
            case ActivationAPI.userInfo.path:
                return try userInfo(request)
            case ActivationAPI.activationDetail.path:
                return try activationDetailEndpoint(request)
            default:
                let now = nowMilliseconds
                return try Self.ok(ServerStatusResponse(serverTime: now, application: configuration.serverApplication))
            }
        } catch {
            return Self.response(for: error, path: request.path)
        }
    }

    /// Every path this API answers.
    static let paths: Set<String> = [
        TemporaryKeyAPI.createKey.path, ActivationAPI.createActivation.path, ActivationAPI.activationStatus.path,
        ActivationAPI.removeActivation.path, ActivationAPI.validateSignature.path, ActivationAPI.createToken.path,
        ActivationAPI.removeToken.path, ActivationAPI.unlockVault.path, ActivationAPI.startUpgrade.path,
        ActivationAPI.commitUpgrade.path, ActivationAPI.userInfo.path, ActivationAPI.activationDetail.path,
        ActivationAPI.serverStatus.path,
    ]

    // MARK: - activation/create

    func createActivation(_ request: TransportRequest) throws(ActivationServerError) -> TransportResponse {
        let context = try encryptionHeader(request, scope: .application)
        let layer1 = try openRequest(
            request.body, sharedInfo1: ActivationAPI.createActivation.sharedInfo1, context: context, keys: nil)
        defer { layer1.plaintext?.destroy() }
        let outer = try Self.decodePlaintext(layer1.plaintext, ActivationLayer1Request.self)
        guard outer.type == ActivationAPI.activationTypeCode, let code = outer.identityAttributes["code"] else {
            throw .invalidActivationCode
        }
        let innerBody = try protocolStep { () throws(ProtocolError) in try WireCoding.encode(outer.activationData) }
        let layer2 = try openRequest(
            innerBody, sharedInfo1: ActivationAPI.createActivationLayer2, context: context, keys: nil)
        defer { layer2.plaintext?.destroy() }
        let inner = try Self.decodePlaintext(layer2.plaintext, ActivationLayer2Request.self)
        guard let device = Base64.decode(inner.devicePublicKey), (try? P256.validate(publicKey: device)) != nil
        else { throw .malformedRequest(reason: "devicePublicKey is not a P-256 key") }
        let name = inner.activationName ?? ""
        guard name.utf8.count <= 255 else { throw .malformedRequest(reason: "activationName is too long") }
        guard let activationId = try store.activationId(forCode: code) else { throw .invalidActivationCode }
        let autoCommit = configuration.autoCommit
        let record = try store.update(activationId: activationId) { (r) throws(ActivationServerError) in
            // Only once: a used code cannot re-key an activation; a V4 one is not activated by V3.3.
            guard r.state == .created, r.v4 == nil else { throw .invalidActivationCode }
            r.devicePublicKey = device
            r.name = name
            r.state = autoCommit ? .active : .pendingCommit
            return r
        }
        let innerResponse = ActivationLayer2Response(
            activationId: record.activationId, serverPublicKey: Base64.encode(record.serverPublicKey),
            ctrData: record.counter.base64)
        let sealedInner = try seal(try Self.encodePlaintext(innerResponse), envelope: layer2.envelope)
        let outerResponse = ActivationLayer1Response(activationData: sealedInner)
        return try Self.encrypted(try seal(try Self.encodePlaintext(outerResponse), envelope: layer1.envelope))
    }

    // MARK: - activation/status

    func status(_ request: ActivationStatusRequest) throws(ActivationServerError) -> ActivationStatusResponse {
        guard let text = request.challenge, let challenge = Base64.decode(text),
            challenge.count == ProtocolConstants.challengeByteCount
        else { throw .malformedRequest(reason: "challenge must be 16 bytes") }
        let now = clock.now()
        let found: ActivationRecord?
        do throws(ActivationServerError) {
            found = try store.update(activationId: request.activationId) { r in
                r.expireBlock(now: now)
                return r
            }
        } catch {
            guard error == .activationNotFound else { throw error }
            found = nil
        }
        // As powerauth-server: an unknown activation (REMOVED for the client) or one without a
        // device key (CREATED) gets 32 random bytes, which no transport key opens.
        guard let record = found, let device = record.devicePublicKey, record.v4?.upgradePending ?? true else {
            let random = try protocolStep { () throws(ProtocolError) in
                try lift { () throws(SecureCoreError) in try SecureRandom.bytes(count: 48) }
            }
            return ActivationStatusResponse(
                activationId: request.activationId, encryptedStatusBlob: Base64.encode(Array(random[0..<32])),
                nonce: Base64.encode(Array(random[32..<48])), customObject: nil)
        }
        let keys = try factorKeys(record, devicePublicKey: device)
        defer { keys.destroy() }
        let lookAhead = configuration.lookAhead
        let offersUpgrade = configuration.algorithm.isV4
        return try protocolStep { () throws(ProtocolError) in
            // An EC_P384 application offers its V3.3 activations the upgrade to V4.
            let blob = try ActivationStatusBlob(
                state: record.state, upgradeVersion: offersUpgrade ? 4 : 3,
                counterByte: UInt8(truncatingIfNeeded: record.counterIndex),
                failedAttempts: UInt8(clamping: record.failedAttempts),
                maxFailedAttempts: UInt8(clamping: record.maxFailedAttempts), counterLookAhead: UInt8(lookAhead),
                counterDataHash: try crypto.counterHash(record.counter, transportKey: keys.transport))
            let nonce = try lift { () throws(SecureCoreError) in
                try SecureRandom.bytes(count: ProtocolConstants.challengeByteCount)
            }
            let encrypted = try crypto.encryptStatusBlob(
                blob, transportKey: keys.transport, challenge: challenge, nonce: nonce)
            return ActivationStatusResponse(
                activationId: record.activationId, encryptedStatusBlob: Base64.encode(encrypted),
                nonce: Base64.encode(nonce), customObject: statusCustomObject(for: record))
        }
    }

    // MARK: - Tokens

    func createToken(_ request: TransportRequest) throws(ActivationServerError) -> TransportResponse {
        let (header, record, keys) = try signedActivation(request)
        defer { keys.destroy() }
        let context = EncryptionHeader(
            version: header.version, applicationKey: header.applicationKey, activationId: header.activationId)
        let opened = try openRequest(
            request.body, sharedInfo1: ActivationAPI.createToken.sharedInfo1, context: context, keys: keys)
        opened.plaintext?.destroy()
        try verifySigned(
            request, header: header, record: record, keys: keys, uriIdentifier: ActivationAPI.createToken.uriIdentifier,
            allowed: nil)
        let tokenId = UUID().uuidString.lowercased()
        try store.insertToken(
            TokenRecord(
                tokenId: tokenId, activationId: record.activationId, factorSet: header.factorSet,
                createdAt: clock.now()))
        let plaintext = try protocolStep { () throws(ProtocolError) in
            let secret = try crypto.tokenSecret(transportKey: keys.transport, tokenId: tokenId)
            defer { secret.destroy() }
            return try TokenPayload.encode(tokenId: tokenId, secret: secret)
        }
        defer { plaintext.destroy() }
        return try Self.encrypted(try seal(plaintext, envelope: opened.envelope))
    }

    func removeToken(_ request: TransportRequest) throws(ActivationServerError) -> TransportResponse {
        let (record, keys, _) = try authenticate(request, ActivationAPI.removeToken.uriIdentifier, allowed: nil)
        keys.destroy()
        let body = try Self.decode(request, TokenRemoveRequest.self)
        _ = try store.removeToken(tokenId: body.tokenId, activationId: record.activationId)
        return try Self.ok(TokenRemoveResponse(tokenId: body.tokenId))
    }

    /// Verifies `X-PowerAuth-Token`: the token, its activation, its factors and its
    /// digest. The time window and the nonce are checked by ``acceptTokenNonce(_:)``,
    /// after the request's cryptogram opened, so a request refused for its cryptogram
    /// does not burn the token's nonce.
    /// - Returns: the header, the activation, its keys (the caller destroys them) and the factors
    ///   the token was created with.
    func verifyToken(_ request: TransportRequest, allowed: Set<FactorSet>) throws(ActivationServerError) -> (
        TokenHeader, ActivationRecord, FactorKeys, FactorSet
    ) {
        guard let value = request.header(TokenHeader.name), let header = try? TokenHeader.parse(value),
            header.timestampMilliseconds != nil, let token = try store.token(tokenId: header.tokenId),
            allowed.contains(token.factorSet)
        else { throw .tokenInvalid }
        guard let record = try store.fetch(activationId: token.activationId), record.state == .active,
            let device = record.devicePublicKey
        else { throw .tokenInvalid }
        let keys = try factorKeys(record, devicePublicKey: device)
        let matches = try? protocolStep { () throws(ProtocolError) -> Bool in
            let secret = try crypto.tokenSecret(transportKey: keys.transport, tokenId: token.tokenId)
            defer { secret.destroy() }
            let expected = try TokenPayload.digest(
                secret: secret, nonce: header.nonce, timestamp: header.timestamp, version: header.version)
            return constantTimeEqual(Array(expected.utf8), Array(header.tokenDigest.utf8))
        }
        guard matches == true else {
            keys.destroy()
            throw .tokenInvalid
        }
        return (header, record, keys, token.factorSet)
    }

    /// A verified token's timestamp within the window and its nonce used once.
    func acceptTokenNonce(_ header: TokenHeader) throws(ActivationServerError) {
        do throws(ActivationServerError) {
            try replayCache.accept(
                ephemeralPublicKey: Array(header.tokenId.utf8), nonce: header.nonce,
                timestamp: header.timestampMilliseconds ?? 0, now: nowMilliseconds)
        } catch {
            // The store being down is not the client's fault: 503, not 401.
            if case .unavailable = error { throw error }
            if case .storage = error { throw error }
            throw .tokenInvalid
        }
    }

    func activationDetailEndpoint(_ request: TransportRequest) throws(ActivationServerError) -> TransportResponse {
        let (token, record, keys, _) = try verifyToken(request, allowed: [.possessionBiometry, .possessionKnowledge])
        defer { keys.destroy() }
        let context: EncryptionHeader
        if request.header(EncryptionHeader.name) != nil {
            context = try encryptionHeader(request, scope: .activation)
            guard context.activationId == record.activationId else { throw .encryptionFailed }
        } else {
            context = EncryptionHeader(
                version: token.version, applicationKey: applicationKey, activationId: record.activationId)
        }
        let opened = try openRequest(
            request.body, sharedInfo1: ActivationAPI.activationDetail.sharedInfo1, context: context, keys: keys)
        opened.plaintext?.destroy()
        try acceptTokenNonce(token)
        let detail = ActivationDetailResponse(activationId: record.activationId, activationName: record.name)
        let plaintext = try Self.encodePlaintext(ResponseEnvelope(responseObject: detail))
        return try Self.encrypted(try seal(plaintext, envelope: opened.envelope))
    }

    // MARK: - Vault, upgrade, user info

    func unlockVault(_ request: TransportRequest) throws(ActivationServerError) -> TransportResponse {
        // As powerauth-server's VaultUnlockServiceBehavior: another factor set is refused before
        // the activation is looked up or anything verified (400 ERR_SECURE_VAULT), uncounted.
        // Upstream admits possession_biometry only with `secureVault.enableBiometricAuthentication`;
        // this server always does (its biometry factor is added through the vault).
        if let header = authorizationHeader(request),
            ![FactorSet.possessionKnowledge, .possessionBiometry].contains(header.factorSet)
        {
            throw .malformedRequest(reason: "\(header.factorSet.rawValue) does not unlock the vault")
        }
        let (header, record, keys) = try signedActivation(request)
        defer { keys.destroy() }
        let context = EncryptionHeader(
            version: header.version, applicationKey: header.applicationKey, activationId: header.activationId)
        let opened = try openRequest(
            request.body, sharedInfo1: ActivationAPI.unlockVault.sharedInfo1, context: context, keys: keys)
        let body = try Self.decodePlaintext(opened.plaintext, VaultUnlockRequest.self)
        opened.plaintext?.destroy()
        guard ActivationAPI.vaultUnlockReasons.contains(body.reason) else {
            throw .malformedRequest(reason: "unsupported vault unlock reason")
        }
        try verifySigned(
            request, header: header, record: record, keys: keys, uriIdentifier: ActivationAPI.unlockVault.uriIdentifier,
            allowed: [.possessionKnowledge, .possessionBiometry])
        if body.reason == ActivationAPI.addBiometryReason {
            try store.update(activationId: record.activationId) { $0.biometryEnabled = true }
        }
        let encrypted = try protocolStep { () throws(ProtocolError) in
            try crypto.encryptVaultKey(keys.vault, transportKey: keys.transport)
        }
        let response = VaultUnlockResponse(encryptedVaultEncryptionKey: Base64.encode(encrypted))
        return try Self.encrypted(try seal(try Self.encodePlaintext(response), envelope: opened.envelope))
    }

    func startUpgrade(_ request: TransportRequest) throws(ActivationServerError) -> TransportResponse {
        let context = try encryptionHeader(request, scope: .activation)
        let (record, keys) = try activeActivation(context.activationId ?? "", failure: .encryptionFailed)
        defer { keys.destroy() }
        _ = record
        let opened = try openRequest(
            request.body, sharedInfo1: ActivationAPI.startUpgrade.sharedInfo1, context: context, keys: keys)
        opened.plaintext?.destroy()
        // Upstream upgrades protocol 2 activations to 3; every activation here is already 3.
        throw .upgradeNotAvailable
    }

    func userInfo(_ request: TransportRequest) throws(ActivationServerError) -> TransportResponse {
        let context = try encryptionHeader(request, scope: .activation)
        let (record, keys) = try activeActivation(context.activationId ?? "", failure: .encryptionFailed)
        defer { keys.destroy() }
        let opened = try openRequest(
            request.body, sharedInfo1: ActivationAPI.userInfo.sharedInfo1, context: context, keys: keys)
        opened.plaintext?.destroy()
        let claims = UserInfoResponse(
            sub: record.userId, jti: UUID().uuidString.lowercased(), iat: nowMilliseconds / 1000)
        return try Self.encrypted(try seal(try Self.encodePlaintext(claims), envelope: opened.envelope))
    }

    // MARK: - Authentication

    func authenticate(_ request: TransportRequest, _ uriIdentifier: String?, allowed: Set<FactorSet>?)
        throws(ActivationServerError) -> (ActivationRecord, FactorKeys, FactorSet)
    {
        guard let uriIdentifier else { throw .authenticationFailed }
        return try verify(
            header: authorizationHeader(request), method: request.method, uriIdentifier: uriIdentifier,
            body: request.body, allowed: allowed)
    }

    /// The request's `X-PowerAuth-Authorization` header parsed, or `nil` (missing or malformed):
    /// parsed once per request (the transport may have done it: `TransportRequest.parsedAuthorization`).
    func authorizationHeader(_ request: TransportRequest) -> AuthorizationHeader? {
        if let parsed = request.parsedAuthorization { return parsed }
        guard let value = request.header(AuthorizationHeader.name) else { return nil }
        return try? AuthorizationHeader.parse(value)
    }

    /// The first half of a signed and encrypted request: the header parsed and the
    /// activation loaded, nothing counted yet (the request is decrypted before its
    /// code is verified, so a replayed or malformed cryptogram is refused uncounted).
    func signedActivation(_ request: TransportRequest) throws(ActivationServerError) -> (
        AuthorizationHeader, ActivationRecord, FactorKeys
    ) {
        guard let header = authorizationHeader(request), header.applicationKey == applicationKey else {
            throw .authenticationFailed
        }
        let (record, keys) = try activeActivation(header.activationId, failure: .authenticationFailed)
        return (header, record, keys)
    }

    /// The second half: verify the code and count the attempt.
    func verifySigned(
        _ request: TransportRequest, header: AuthorizationHeader, record: ActivationRecord, keys: FactorKeys,
        uriIdentifier: String?, allowed: Set<FactorSet>?
    ) throws(ActivationServerError) {
        guard let uriIdentifier, header.factorSet.factors.first == .possession else { throw .authenticationFailed }
        if let allowed, !allowed.contains(header.factorSet) { throw .authenticationFailed }
        let data = try? RequestData(
            method: request.method, uriIdentifier: uriIdentifier, nonce: header.nonce, body: request.body
        ).normalized(applicationSecret: applicationSecret)
        try countAttempt(
            header.authenticationCode, record: record, keys: keys, factorSet: header.factorSet, data: data,
            format: header.version.authenticationCodeFormat)
    }

    /// An active activation and its keys, or `failure`.
    func activeActivation(_ activationId: String, failure: ActivationServerError) throws(ActivationServerError)
        -> (ActivationRecord, FactorKeys)
    {
        let now = clock.now()
        var record: ActivationRecord
        do throws(ActivationServerError) {
            // A plain read: only a temporary block whose time is up needs the write transaction
            // that ends it (the counted attempt re-reads the record in its own transaction).
            guard let fetched = try store.fetch(activationId: activationId) else { throw .activationNotFound }
            record = fetched
            var expired = fetched
            expired.expireBlock(now: now)
            if expired.state != fetched.state {
                record = try store.update(activationId: activationId) { r in
                    r.expireBlock(now: now)
                    return r
                }
            }
        } catch {
            throw error == .activationNotFound ? failure : error
        }
        guard record.state == .active, let device = record.devicePublicKey else { throw failure }
        // An activation upgraded to V4 (upgrade/confirm done) speaks V4 only.
        if let state = record.v4, !state.upgradePending { throw failure }
        return (record, try factorKeys(record, devicePublicKey: device))
    }

    /// Verifies a header and records the attempt. A header that does not
    /// parse, names another application, an unknown or inactive activation
    /// or a disallowed factor set is refused without counting; a code that
    /// does not verify counts as a failure unless it claims possession alone
    /// (the V3 rule).
    func verify(
        headerValue: String, method: String, uriIdentifier: String, body: [UInt8], allowed: Set<FactorSet>?
    ) throws(ActivationServerError) -> (ActivationRecord, FactorKeys, FactorSet) {
        try verify(
            header: try? AuthorizationHeader.parse(headerValue), method: method, uriIdentifier: uriIdentifier,
            body: body, allowed: allowed)
    }

    /// ``verify(headerValue:method:uriIdentifier:body:allowed:)`` with the header parsed (`nil`:
    /// missing or malformed).
    func verify(
        header: AuthorizationHeader?, method: String, uriIdentifier: String, body: [UInt8], allowed: Set<FactorSet>?
    ) throws(ActivationServerError) -> (ActivationRecord, FactorKeys, FactorSet) {
        guard let header, header.applicationKey == applicationKey else { throw .authenticationFailed }
        // Upstream admits only sets that start with possession (its signature-type lists are
        // subsets of P, PK, PB, PKB); knowledge or biometry alone is refused, uncounted.
        guard header.factorSet.factors.first == .possession else { throw .authenticationFailed }
        if let allowed, !allowed.contains(header.factorSet) { throw .authenticationFailed }
        let data = try? RequestData(method: method, uriIdentifier: uriIdentifier, nonce: header.nonce, body: body)
            .normalized(applicationSecret: applicationSecret)
        let (record, keys) = try verifyCode(
            header.authenticationCode, activationId: header.activationId, factorSet: header.factorSet, data: data,
            format: header.version.authenticationCodeFormat)
        return (record, keys, header.factorSet)
    }

    /// The common part: refuses an unknown or inactive activation without
    /// counting, verifies with the look-ahead, records the attempt atomically.
    /// `data` is `nil` when the request could not be normalised (a failed code).
    func verifyCode(
        _ code: String, activationId: String, factorSet: FactorSet, data: [UInt8]?, format: AuthenticationCodeFormat
    ) throws(ActivationServerError) -> (ActivationRecord, FactorKeys) {
        if let verified = try verifyFromSnapshot(
            code, activationId: activationId, factorSet: factorSet, data: data, format: format)
        {
            return verified
        }
        let (record, keys) = try activeActivation(activationId, failure: .authenticationFailed)
        try countAttempt(code, record: record, keys: keys, factorSet: factorSet, data: data, format: format)
        return (record, keys)
    }

    /// The short path of a signed request, without reading the activation: the code is checked
    /// against the snapshot this server's last conditional write left (``FactorKeyCache``), and
    /// its outcome — accepted or not, as ``countAttempt(_:record:keys:factorSet:data:format:)``
    /// rules it — is written by ``ServerActivationStore/recordAttemptIfUnchanged(activationId:outcome:now:failureBlockDuration:observed:)``,
    /// on condition that the stored row is still exactly the snapshot. So the answer and the count
    /// are the ones a fresh read at the moment of the write would give. A row that changed
    /// (another request, instance or back office; a block, a removal) writes nothing and returns
    /// `nil`, and the caller takes the path that reads the row. A code that verifies and one that
    /// does not take the same steps, so an activation the snapshot no longer describes (blocked,
    /// removed) answers a right code exactly as a wrong one.
    /// - Returns: the record (as before the attempt; its private key opened from the store on
    ///   demand) and keys the caller destroys, or `nil`.
    func verifyFromSnapshot(
        _ code: String, activationId: String, factorSet: FactorSet, data: [UInt8]?, format: AuthenticationCodeFormat
    ) throws(ActivationServerError) -> (ActivationRecord, FactorKeys)? {
        guard store.writesConditionally,
            let (snapshot, keys) = factorKeyCache.snapshot(activationId, now: clock.now())
        else { return nil }
        // A code that does not verify is written (conditionally) too, as the path that reads the
        // row counts it: were it sent to that path instead, a blocked or removed activation would
        // refuse a wrong code after a read but try to write a right one first — a difference in
        // work that tells the right code apart without counting it.
        let outcome = self.outcome(
            of: code, record: snapshot, keys: keys, factorSet: factorSet, data: data, format: format)
        let now = clock.now()
        let result: AttemptResult?
        do throws(ActivationServerError) {
            result = try store.recordAttemptIfUnchanged(
                activationId: activationId, outcome: outcome, now: now,
                failureBlockDuration: configuration.failureBlockDuration, observed: snapshot)
        } catch {
            keys.destroy()
            throw error
        }
        guard let result else {
            // The row changed since the snapshot: nothing was written; read it afresh.
            factorKeyCache.forgetSnapshot(activationId)
            keys.destroy()
            return nil
        }
        // Written: the attempt counted once, whatever it concluded (a code that did not verify,
        // or a replay: refused as the path that reads the row refuses it).
        remember(result, of: outcome, on: snapshot, at: now)
        guard result.accepted else {
            keys.destroy()
            throw .authenticationFailed
        }
        return (snapshot.replacingPrivateKey(storedPrivateKey(activationId)), keys)
    }

    /// A holder that opens the activation's private key from the store when first asked.
    func storedPrivateKey(_ activationId: String) -> ServerPrivateKey {
        ServerPrivateKey { [store] () throws(ActivationServerError) -> SecureBytes in
            guard let record = try store.fetch(activationId: activationId) else { throw .activationNotFound }
            return try record.serverPrivateKey.key()
        }
    }

    /// Verifies a code with the look-ahead and records the attempt; destroys `keys`
    /// when it throws.
    func countAttempt(
        _ code: String, record: ActivationRecord, keys: FactorKeys, factorSet: FactorSet, data: [UInt8]?,
        format: AuthenticationCodeFormat
    ) throws(ActivationServerError) {
        let outcome = self.outcome(
            of: code, record: record, keys: keys, factorSet: factorSet, data: data, format: format)
        let result: AttemptResult
        do throws(ActivationServerError) {
            result = try recordCounted(outcome, record: record)
        } catch {
            keys.destroy()
            throw error
        }
        guard result.accepted else {
            keys.destroy()
            throw .authenticationFailed
        }
    }

    /// What a code concludes against `record`'s counter, with the look-ahead: accepted at the
    /// index it matched, or a failure (uncounted when it claims possession alone, the V3 rule).
    /// `data` is `nil` when the request could not be normalised (a failed code).
    func outcome(
        of code: String, record: ActivationRecord, keys: FactorKeys, factorSet: FactorSet, data: [UInt8]?,
        format: AuthenticationCodeFormat
    ) -> AttemptOutcome {
        let failed = factorSet == .possession ? AttemptOutcome.rejectedUncounted : .rejected
        guard let data else { return failed }
        let lookAhead = configuration.lookAhead
        let match = try? protocolStep { () throws(ProtocolError) in
            try crypto.verifyAuthenticationCode(
                code, data: data, factors: factorSet, keys: keys.signingKeys, counter: record.counter,
                format: format, lookAhead: lookAhead)
        }
        guard let match else { return failed }
        return .accepted(
            codeIndex: record.counterIndex + UInt64(match.distance), nextCounter: match.nextCounter,
            resetsFailures: factorSet != .possession)
    }

    /// After a conditional write on `record`: an accepted code leaves the row the write stored as
    /// the activation's snapshot; anything else forgets it.
    func remember(_ result: AttemptResult, of outcome: AttemptOutcome, on record: ActivationRecord, at now: Date) {
        guard result.accepted else {
            factorKeyCache.forgetSnapshot(record.activationId)
            return
        }
        var after = record
        _ = after.apply(outcome, now: now, failureBlockDuration: configuration.failureBlockDuration)
        factorKeyCache.keep(snapshot: after)
    }

    /// Records a counted attempt on the record the verification used: conditionally when the
    /// store can (and then, for an accepted code, keeps the result as the activation's snapshot
    /// for ``verifyFromSnapshot(_:activationId:factorSet:data:format:)``), else — or when the row
    /// changed meanwhile — by the locked read-apply-write.
    func recordCounted(_ outcome: AttemptOutcome, record: ActivationRecord) throws(ActivationServerError)
        -> AttemptResult
    {
        let now = clock.now()
        let block = configuration.failureBlockDuration
        if let result = try store.recordAttemptIfUnchanged(
            activationId: record.activationId, outcome: outcome, now: now, failureBlockDuration: block,
            observed: record)
        {
            remember(result, of: outcome, on: record, at: now)
            return result
        }
        factorKeyCache.forgetSnapshot(record.activationId)
        return try store.recordAttempt(
            activationId: record.activationId, outcome: outcome, now: now, failureBlockDuration: block)
    }

    /// The activation's factor keys, from the cache (lent) or derived (and a copy cached); the
    /// caller destroys what it gets (which does nothing to lent keys). A cache that cannot allocate is passed by, never fatal.
    func factorKeys(_ record: ActivationRecord, devicePublicKey: [UInt8]) throws(ActivationServerError) -> FactorKeys {
        let now = clock.now()
        if let cached = factorKeyCache.get(record, devicePublicKey: devicePublicKey, now: now) {
            return cached
        }
        let privateKey = try record.serverPrivateKey.key()
        let keys = try protocolStep { () throws(ProtocolError) in
            let master = try crypto.masterSecret(privateKey: privateKey, peerPublicKey: devicePublicKey)
            defer { master.destroy() }
            return try crypto.factorKeys(masterSecret: master)
        }
        try? factorKeyCache.put(keys, record: record, devicePublicKey: devicePublicKey, now: now)
        return keys
    }

    // MARK: - Wire helpers

    static func decode<T: Codable & Sendable>(_ request: TransportRequest, _ type: T.Type) throws(ActivationServerError)
        -> T
    {
        do throws(ProtocolError) {
            guard let object = try WireCoding.decode(RequestEnvelope<T>.self, request.body).requestObject as T? else {
                throw .malformedMessage(reason: "no requestObject")
            }
            return object
        } catch {
            throw .malformedRequest(reason: "the body is not a \(T.self) request")
        }
    }

    /// `{"status":"OK"}`, encoded once: the answer to every accepted `signature/validate`.
    static let emptyOK: TransportResponse? = try? ok(EmptyMessage?.none)

    static func ok<T: Codable & Sendable>(_ object: T?) throws(ActivationServerError) -> TransportResponse {
        let body = try protocolStep { () throws(ProtocolError) in
            try WireCoding.encode(ResponseEnvelope(responseObject: object))
        }
        return TransportResponse(statusCode: 200, body: body)
    }

    static func encrypted(_ body: EncryptedResponseBody) throws(ActivationServerError) -> TransportResponse {
        TransportResponse(
            statusCode: 200, body: try protocolStep { () throws(ProtocolError) in try WireCoding.encode(body) })
    }

    /// A PowerAuth error body, `{"status":"ERROR","responseObject":{"code":…,"message":…}}`.
    /// - Parameters:
    ///   - statusCode: the HTTP status.
    ///   - code: the error code, for example `ERR_AUTHENTICATION`.
    ///   - message: a message without any secret.
    /// - Returns: the response.
    public static func error(_ statusCode: Int, _ code: String, _ message: String) -> TransportResponse {
        let body =
            (try? WireCoding.encode(
                ResponseEnvelope(status: "ERROR", responseObject: ErrorResponse(code: code, message: message)))) ?? []
        return TransportResponse(statusCode: statusCode, body: body)
    }

    /// The error response the API gives for `error` on an endpoint whose path is not
    /// known (the table in `docs/activation-api.md`).
    /// - Parameter error: the error.
    /// - Returns: the response.
    public static func response(for error: ActivationServerError) -> TransportResponse {
        response(for: error, path: "")
    }

    /// The error response upstream gives for `error` on the endpoint at `path`.
    /// - Parameters:
    ///   - error: the error.
    ///   - path: the endpoint's path.
    /// - Returns: the response.
    public static func response(for error: ActivationServerError, path: String) -> TransportResponse {
        typealias Code = ActivationAPI.ErrorCode
        typealias Message = ActivationAPI.ErrorMessage
        switch (error, path) {
        case (.unavailable, _):
            return Self.error(503, Code.generic, "service unavailable")
        case (.authenticationFailed, _):
            return Self.error(401, Code.authentication, Message.signatureInvalid)
        case (.tokenInvalid, _):
            return Self.error(401, Code.authentication, Message.tokenInvalid)
        case (.encryptionFailed, ActivationAPI.createToken.path), (.requestExpired, ActivationAPI.createToken.path),
            (.replayedRequest, ActivationAPI.createToken.path):
            return Self.error(401, Code.authentication, Message.tokenError)
        case (_, ActivationAPI.unlockVault.path) where error != .upgradeNotAvailable,
            (_, V4API.vaultUnlock.path) where error != .upgradeNotAvailable:
            if case .storage = error { return Self.error(500, Code.generic, "internal error") }
            return Self.error(400, Code.secureVault, Message.secureVaultInvalid)
        case (.encryptionFailed, _), (.requestExpired, _), (.replayedRequest, _):
            return Self.error(400, Code.encryption, Message.encryptionFailed)
        case (.upgradeNotAvailable, _):
            return Self.error(400, Code.upgrade, Message.upgradeFailed)
        case (.activationNotFound, _), (.invalidState, _), (.invalidActivationCode, _):
            return Self.error(400, Code.activation, Message.activationInvalid)
        case (.malformedRequest(let reason), _):
            return Self.error(400, Code.request, reason)
        case (.temporaryKeyFailure, _):
            return Self.error(400, TemporaryKeyAPI.errorCode, TemporaryKeyAPI.errorMessage)
        case (.duplicate, _), (.storage, _), (.invalidConfiguration, _), (.protocolFailure, _):
            return Self.error(500, Code.generic, "internal error")
        }
    }
}
