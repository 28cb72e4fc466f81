import SecureCore

// The four message operations under a given envelope key, with every
// version rule in one place. Nonces and timestamps are parameters here, so
// the tests can replay upstream's vectors; the public types draw them.
extension ECIESConfiguration {
    /// Encrypts a request under `key` (the client side, after the envelope key exists).
    /// - Parameters:
    ///   - plaintext: the request body, `nil` when empty.
    ///   - key: the envelope key.
    ///   - ephemeralPublicKey: the key that entered the KDF, as it will be sent.
    ///   - nonce: 16 bytes for 3.1+, ignored for 3.0.
    ///   - timestamp: milliseconds for 3.2+, ignored before.
    /// - Returns: the request cryptogram, with the fields the version sends.
    /// - Throws: ``ECIESError``.
    package func sealRequest(
        _ plaintext: SecureBytes?, key: SecureBytes, ephemeralPublicKey: [UInt8], nonce: [UInt8]?, timestamp: UInt64?
    ) throws(ECIESError) -> ECIESCryptogram {
        let nonce = version.eciesUsesNonce ? nonce : nil
        let timestamp = version.eciesUsesTimestamp ? timestamp : nil
        if version.eciesUsesNonce, nonce?.count != ECIESPrimitives.nonceByteCount {
            throw .malformedCryptogram(field: "nonce")
        }
        if version.eciesUsesTimestamp, timestamp == nil { throw .malformedCryptogram(field: "timestamp") }
        let sh2 = sharedInfo2(ephemeralPublicKey: ephemeralPublicKey, nonce: nonce, timestamp: timestamp)
        let sealed = try eciesLift(keyField: "envelopeKey") { () throws(SecureCoreError) in
            try ECIESPrimitives.encrypt(plaintext, key: key, nonce: nonce, sharedInfo2: sh2)
        }
        return ECIESCryptogram(
            temporaryKeyId: temporaryKeyId, ephemeralPublicKey: ephemeralPublicKey, encryptedData: sealed.encryptedData,
            mac: sealed.mac, nonce: nonce, timestamp: timestamp)
    }

    /// Checks a request's fields against the version (`EciesRequestResponseValidator`):
    /// the ephemeral key always; the nonce from 3.1, the timestamp from 3.2,
    /// the temporary key from 3.3, each absent before; the sizes.
    /// - Parameter request: the received cryptogram.
    /// - Throws: ``ECIESError/malformedCryptogram(field:)``, ``ECIESError/temporaryKeyMismatch``.
    func validateRequest(_ request: ECIESCryptogram) throws(ECIESError) {
        guard request.ephemeralPublicKey != nil else { throw .malformedCryptogram(field: "ephemeralPublicKey") }
        try validateCommon(request, nonceExpected: version.eciesUsesNonce)
        guard (request.temporaryKeyId != nil) == version.eciesUsesTemporaryKey else {
            throw .malformedCryptogram(field: "temporaryKeyId")
        }
        if request.temporaryKeyId != temporaryKeyId { throw .temporaryKeyMismatch }
    }

    /// Checks a response's fields: no ephemeral key or temporary key; nonce
    /// and timestamp exactly from 3.2.
    /// - Parameter response: the received cryptogram.
    /// - Throws: ``ECIESError/malformedCryptogram(field:)``.
    func validateResponse(_ response: ECIESCryptogram) throws(ECIESError) {
        guard response.ephemeralPublicKey == nil else { throw .malformedCryptogram(field: "ephemeralPublicKey") }
        guard response.temporaryKeyId == nil else { throw .malformedCryptogram(field: "temporaryKeyId") }
        try validateCommon(response, nonceExpected: version.eciesUsesTimestamp)
    }

    private func validateCommon(_ cryptogram: ECIESCryptogram, nonceExpected: Bool) throws(ECIESError) {
        guard (cryptogram.nonce != nil) == nonceExpected else { throw .malformedCryptogram(field: "nonce") }
        if let nonce = cryptogram.nonce, nonce.count != ECIESPrimitives.nonceByteCount {
            throw .malformedCryptogram(field: "nonce")
        }
        guard (cryptogram.timestamp != nil) == version.eciesUsesTimestamp else {
            throw .malformedCryptogram(field: "timestamp")
        }
        guard cryptogram.mac.count == ECIESPrimitives.macByteCount else { throw .malformedCryptogram(field: "mac") }
        guard !cryptogram.encryptedData.isEmpty, cryptogram.encryptedData.count % AES128.blockByteCount == 0 else {
            throw .malformedCryptogram(field: "encryptedData")
        }
    }

    /// Verifies and decrypts a request under `key` (the server side, after
    /// ``validateRequest(_:)`` and the envelope key).
    /// - Parameters:
    ///   - request: the received cryptogram.
    ///   - key: the envelope key.
    /// - Returns: the plaintext, `nil` when empty.
    /// - Throws: ``ECIESError``.
    package func openRequest(_ request: ECIESCryptogram, key: SecureBytes) throws(ECIESError) -> SecureBytes? {
        try validateRequest(request)
        let sh2 = sharedInfo2(
            ephemeralPublicKey: request.ephemeralPublicKey, nonce: request.nonce, timestamp: request.timestamp)
        return try eciesLift(keyField: "envelopeKey") { () throws(SecureCoreError) in
            try ECIESPrimitives.decrypt(
                request.encryptedData, mac: request.mac, key: key, nonce: request.nonce, sharedInfo2: sh2)
        }
    }

    /// The nonce a response's IV comes from: none (3.0), the request's (3.1),
    /// the response's own (3.2+).
    private func responseIVNonce(requestNonce: [UInt8]?, responseNonce: [UInt8]?) -> [UInt8]? {
        switch version {
        case .v3_0: nil
        case .v3_1: requestNonce
        case .v3_2, .v3_3: responseNonce
        }
    }

    /// Encrypts a response under `key` (the server side).
    /// - Parameters:
    ///   - plaintext: the response body, `nil` when empty.
    ///   - key: the request's envelope key.
    ///   - requestNonce: the request's nonce (3.1 reuses it).
    ///   - responseNonce: a fresh 16-byte nonce, different from the request's (3.2+).
    ///   - timestamp: milliseconds (3.2+).
    /// - Returns: the response cryptogram.
    /// - Throws: ``ECIESError``.
    package func sealResponse(
        _ plaintext: SecureBytes?, key: SecureBytes, requestNonce: [UInt8]?, responseNonce: [UInt8]?,
        timestamp: UInt64?
    ) throws(ECIESError) -> ECIESCryptogram {
        let nonce = responseIVNonce(requestNonce: requestNonce, responseNonce: responseNonce)
        let timestamp = version.eciesUsesTimestamp ? timestamp : nil
        if version.eciesUsesNonce, nonce?.count != ECIESPrimitives.nonceByteCount {
            throw .malformedCryptogram(field: "nonce")
        }
        if version.eciesUsesTimestamp {
            guard timestamp != nil else { throw .malformedCryptogram(field: "timestamp") }
            guard nonce != requestNonce else { throw .malformedCryptogram(field: "nonce") }
        }
        let sh2 = sharedInfo2(ephemeralPublicKey: nil, nonce: nonce, timestamp: timestamp)
        let sealed = try eciesLift(keyField: "envelopeKey") { () throws(SecureCoreError) in
            try ECIESPrimitives.encrypt(plaintext, key: key, nonce: nonce, sharedInfo2: sh2)
        }
        return ECIESCryptogram(
            encryptedData: sealed.encryptedData, mac: sealed.mac, nonce: version.eciesUsesTimestamp ? nonce : nil,
            timestamp: timestamp)
    }

    /// Verifies and decrypts a response under `key` (the client side).
    /// - Parameters:
    ///   - response: the received cryptogram.
    ///   - key: the request's envelope key.
    ///   - requestNonce: the request's nonce (3.1 reuses it; 3.2+ refuses a response that repeats it).
    /// - Returns: the plaintext, `nil` when empty.
    /// - Throws: ``ECIESError``.
    package func openResponse(_ response: ECIESCryptogram, key: SecureBytes, requestNonce: [UInt8]?) throws(ECIESError)
        -> SecureBytes?
    {
        try validateResponse(response)
        if version.eciesUsesTimestamp, response.nonce == requestNonce { throw .malformedCryptogram(field: "nonce") }
        let nonce = responseIVNonce(requestNonce: requestNonce, responseNonce: response.nonce)
        let sh2 = sharedInfo2(ephemeralPublicKey: nil, nonce: nonce, timestamp: response.timestamp)
        return try eciesLift(keyField: "envelopeKey") { () throws(SecureCoreError) in
            try ECIESPrimitives.decrypt(
                response.encryptedData, mac: response.mac, key: key, nonce: nonce, sharedInfo2: sh2)
        }
    }
}
