import SecureCore

/// The plaintext of the `token/create` response, `{"tokenId":"…","tokenSecret":"…"}`
/// (powerauth-crypto `docs/MAC-Token-Based-Authentication.md`), written and read in
/// secure memory: the 16-byte token secret is a key and never becomes a Swift
/// `String`. Base64 is encoded and decoded without a branch or an index that depends
/// on the secret.
public enum TokenPayload {
    /// Bytes of a token secret.
    public static let secretByteCount = 16

    /// Writes the JSON object in secure memory.
    /// - Parameters:
    ///   - tokenId: the token identifier (a UUID; public).
    ///   - secret: the 16-byte secret.
    /// - Returns: the UTF-8 JSON in secure memory.
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)``, ``ProtocolError/invalidActivationId``
    ///   for an identifier that is not a UUID-like token, ``ProtocolError/core(_:)``.
    public static func encode(tokenId: String, secret: SecureBytes) throws(ProtocolError) -> SecureBytes {
        try AuthorizationHeader.validateActivationId(tokenId)
        guard secret.count == secretByteCount else {
            throw .invalidLength(field: "tokenSecret", expected: secretByteCount, actual: secret.count)
        }
        return try V4SecretJSON.encode(fields: [("tokenId", tokenId)], secretName: "tokenSecret", secret: secret)
    }

    /// Reads `tokenId` and `tokenSecret` from the decrypted response.
    /// - Parameter plaintext: the UTF-8 JSON in secure memory.
    /// - Returns: the identifier and the 16-byte secret in secure memory.
    /// - Throws: ``ProtocolError/malformedMessage(reason:)``, ``ProtocolError/core(_:)``.
    public static func decode(_ plaintext: SecureBytes) throws(ProtocolError) -> (tokenId: String, secret: SecureBytes)
    {
        let secret = try lift { () throws(SecureCoreError) in try SecureBytes(count: secretByteCount) }
        let tokenId: String? = plaintext.withUnsafeBytes { json in
            guard let idRange = stringValue(of: "tokenId", in: json),
                let secretRange = stringValue(of: "tokenSecret", in: json), secretRange.count == 24,
                json[secretRange.upperBound - 1] == UInt8(ascii: "="),
                json[secretRange.upperBound - 2] == UInt8(ascii: "=")
            else { return nil }
            let valid = secret.withUnsafeMutableBytes { target -> Bool in
                var bad: Int32 = 0
                var bits: UInt32 = 0
                var bitCount = 0
                var written = 0
                for offset in 0..<22 {
                    let (sextet, invalid) = decodeCharacter(json[secretRange.lowerBound + offset])
                    bad |= invalid
                    bits = bits << 6 | UInt32(sextet)
                    bitCount += 6
                    if bitCount >= 8 {
                        bitCount -= 8
                        target[written] = UInt8(truncatingIfNeeded: bits >> UInt32(bitCount))
                        written += 1
                    }
                }
                // The 4 bits left over must be zero (canonical Base64).
                bad |= Int32(bits & 0x0F)
                return bad == 0 && written == secretByteCount
            }
            guard valid else { return nil }
            let id = String(decoding: json[idRange], as: UTF8.self)
            return (try? AuthorizationHeader.validateActivationId(id)) != nil ? id : nil
        }
        guard let tokenId else {
            secret.destroy()
            throw .malformedMessage(reason: "the token/create response is not a token")
        }
        return (tokenId, secret)
    }

    /// `token_digest`: Base64 of `HMAC-SHA256(tokenSecret, TokenHeader.digestedData(…))`.
    /// - Parameters:
    ///   - secret: the token secret.
    ///   - nonce: 16 random bytes.
    ///   - timestamp: the timestamp's digits.
    ///   - version: the protocol version.
    /// - Returns: Base64 of the digest.
    /// - Throws: ``ProtocolError/core(_:)``.
    public static func digest(secret: SecureBytes, nonce: [UInt8], timestamp: String, version: ProtocolVersion)
        throws(ProtocolError) -> String
    {
        let data = TokenHeader.digestedData(nonce: nonce, timestamp: timestamp, version: version)
        return Base64.encode(try lift { () throws(SecureCoreError) in try HMACSHA256.authenticate(data, key: secret) })
    }

    /// The range of a string value `"name": "…"` (a value without escapes), or `nil`.
    /// Where the value starts and ends depends only on the JSON's structure.
    package static func stringValue(of name: String, in json: UnsafeRawBufferPointer) -> Range<Int>? {
        let key = Array("\"\(name)\"".utf8)
        guard json.count > key.count else { return nil }
        var i = 0
        while i + key.count <= json.count {
            if json[i] == key[0], (0..<key.count).allSatisfy({ json[i + $0] == key[$0] }) {
                var j = i + key.count
                while j < json.count, json[j] == 0x20 || json[j] == 0x0A || json[j] == 0x0D || json[j] == 0x09 {
                    j += 1
                }
                guard j < json.count, json[j] == UInt8(ascii: ":") else { return nil }
                j += 1
                while j < json.count, json[j] == 0x20 || json[j] == 0x0A || json[j] == 0x0D || json[j] == 0x09 {
                    j += 1
                }
                guard j < json.count, json[j] == UInt8(ascii: "\"") else { return nil }
                let start = j + 1
                var end = start
                while end < json.count, json[end] != UInt8(ascii: "\""), json[end] != UInt8(ascii: "\\") { end += 1 }
                guard end < json.count, json[end] == UInt8(ascii: "\"") else { return nil }
                return start..<end
            }
            i += 1
        }
        return nil
    }

    /// A Base64 character's sextet and a mask that is non-zero when it is not one,
    /// without branching on the character.
    static func decodeCharacter(_ character: UInt8) -> (UInt8, Int32) {
        let c = Int32(character)
        let upper = ConstantTimeEncoding.lessThan(64, c) & ConstantTimeEncoding.lessThan(c, 91)
        let lower = ConstantTimeEncoding.lessThan(96, c) & ConstantTimeEncoding.lessThan(c, 123)
        let digit = ConstantTimeEncoding.lessThan(47, c) & ConstantTimeEncoding.lessThan(c, 58)
        let plus = ConstantTimeEncoding.equal(c, 43)
        let slash = ConstantTimeEncoding.equal(c, 47)
        let value =
            (upper & (c - 65)) | (lower & (c - 71)) | (digit & (c + 4)) | (plus & 62) | (slash & 63)
        let valid = upper | lower | digit | plus | slash
        return (UInt8(truncatingIfNeeded: value), ~valid & 1)
    }
}
