import SecureCore

/// Where a presented authentication code matched in the look-ahead window.
public struct CounterMatch: Sendable, Equatable {
    /// Steps from the expected counter to the matching one (0 = in step).
    public let distance: Int
    /// The counter value the code was made with.
    public let matchedCounter: HashCounter
    /// The counter to store for the next verification (one past the match).
    public let nextCounter: HashCounter
}

extension ActivationCrypto {
    /// Computes a PowerAuth authentication code.
    ///
    /// The caller must move its counter on (``HashCounter/next()``) after
    /// every code, whether the server accepts it or not.
    /// - Parameters:
    ///   - data: the normalised data (``RequestData/normalized(applicationSecret:)``).
    ///   - factors: the factor set.
    ///   - keys: the keys at hand; those of `factors` must be present.
    ///   - counter: the current `CTR_DATA`.
    ///   - format: ``AuthenticationCodeFormat/base64`` for 3.1+, `.decimal` for 3.0 and offline codes.
    /// - Returns: the code text.
    /// - Throws: ``ProtocolError/missingFactorKey(_:)``, ``ProtocolError/invalidComponentLength(_:)``,
    ///   ``ProtocolError/invalidLength(field:expected:actual:)``, ``ProtocolError/core(_:)``.
    public func authenticationCode(
        data: [UInt8], factors: FactorSet, keys: SigningKeys, counter: HashCounter, format: AuthenticationCodeFormat
    ) throws(ProtocolError) -> String {
        try format.validate()
        let factorKeys = try keys.keys(for: factors)
        let components = try lift { () throws(SecureCoreError) in
            try AuthenticationCodeChain.components(keys: factorKeys, counter: counter.bytes, data: data)
        }
        return format.render(components, count: factorKeys.count)
    }

    /// Verifies a presented code the way a PowerAuth server does: at the
    /// expected counter and up to `lookAhead - 1` steps beyond it (the
    /// half-open window `[CTR, CTR + lookAhead)`), comparing in constant time.
    /// - Parameters:
    ///   - code: the presented code.
    ///   - data: the normalised data.
    ///   - factors: the factor set the client declared.
    ///   - keys: the server's keys for the activation.
    ///   - counter: the server's expected `CTR_DATA`.
    ///   - format: the format of `code`.
    ///   - lookAhead: window size, 1 ... 255.
    /// - Returns: the match, or `nil` when no counter in the window gives `code`.
    /// - Throws: ``ProtocolError/invalidLookAhead(_:)`` and the errors of
    ///   ``authenticationCode(data:factors:keys:counter:format:)``; never for a wrong code.
    public func verifyAuthenticationCode(
        _ code: String, data: [UInt8], factors: FactorSet, keys: SigningKeys, counter: HashCounter,
        format: AuthenticationCodeFormat, lookAhead: Int = ProtocolConstants.defaultLookAhead
    ) throws(ProtocolError) -> CounterMatch? {
        guard (1...ProtocolConstants.maximumLookAhead).contains(lookAhead) else { throw .invalidLookAhead(lookAhead) }
        let presented = Array(code.utf8)
        var candidate = counter
        for distance in 0..<lookAhead {
            let expected = try authenticationCode(
                data: data, factors: factors, keys: keys, counter: candidate, format: format)
            let next = try candidate.next()
            if constantTimeEqual(Array(expected.utf8), presented) {
                return CounterMatch(distance: distance, matchedCounter: candidate, nextCounter: next)
            }
            candidate = next
        }
        return nil
    }
}

/// Equal lengths and equal bytes, with no early exit on the first difference.
/// The comparison runs in the C core (`spc_bytes_equal`), whose constant-time
/// behaviour the ctgrind audit checks; a Swift loop carries no such guarantee
/// (the optimiser may vectorise it or add an early exit).
package func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    ConstantTime.isEqual(a, b)
}
