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
                !json[idRange].contains(UInt8(ascii: "\\"))
            else { return nil }
            let valid =
                withUnescapedBase64(of: "tokenSecret", in: json) { text -> Bool in
                    guard text.count == 24, text[23] == UInt8(ascii: "="), text[22] == UInt8(ascii: "=") else {
                        return false
                    }
                    return decodeSecret16(text, into: secret)
                } ?? false
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

    /// Decodes the 22 Base64 characters of a 16-byte secret (then `==`) into `secret`, without a
    /// branch or an index that depends on the characters.
    private static func decodeSecret16(_ text: UnsafeRawBufferPointer, into secret: SecureBytes) -> Bool {
        secret.withUnsafeMutableBytes { target -> Bool in
            var bad: Int32 = 0
            var bits: UInt32 = 0
            var bitCount = 0
            var written = 0
            for offset in 0..<22 {
                let (sextet, invalid) = decodeCharacter(text[offset])
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

    /// The range of a string value `"name": "…"`, or `nil`: it ends at the first quote, so a
    /// value may hold escapes other than `\"` (Base64 never needs that one). Where the value
    /// starts and ends depends only on the JSON's structure.
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
                while end < json.count, json[end] != UInt8(ascii: "\"") { end += 1 }
                guard end < json.count, json[end] == UInt8(ascii: "\"") else { return nil }
                return start..<end
            }
            i += 1
        }
        return nil
    }

    /// The Base64 text of the string member `name`, with the escapes a JSON writer may use for
    /// Base64 characters undone (`\/` as NSJSONSerialization writes `/`; `\u003d`, `\u002b`,
    /// `\u002f` as Gson writes `=` and others, any case), into secure memory, then `body`.
    ///
    /// The unescaping takes no branch and no memory index that depends on the characters: every
    /// input position is read once, every output position is written at each step (a select),
    /// so the positions of escaped characters (which say where a secret's sextet 63 stands)
    /// leave no trace in time or in the addresses touched. Any other escape makes it fail.
    /// - Parameters:
    ///   - name: the member.
    ///   - json: the JSON text.
    ///   - body: reads the unescaped text (wiped afterwards).
    /// - Returns: `body`'s answer, or `nil` when the member is missing or not plain Base64 text.
    package static func withUnescapedBase64<R>(
        of name: String, in json: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> R
    ) -> R? {
        guard let range = stringValue(of: name, in: json), range.count <= 4096 else { return nil }
        guard let buffer = try? SecureBytes(count: max(range.count, 1)) else { return nil }
        defer { buffer.destroy() }
        let (count, bad): (Int, Int32) = buffer.withUnsafeMutableBytes { out in
            unescape(json, range, into: out)
        }
        guard bad == 0 else { return nil }
        return buffer.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
    }

    /// All ones when `x == y` (any values), else 0.
    @inline(__always)
    private static func same(_ x: Int32, _ y: Int32) -> Int32 {
        let d = x ^ y
        return ~((d | (0 &- d)) >> 31)
    }

    /// `a` where `mask` is all ones, `b` where it is 0.
    @inline(__always)
    private static func pick(_ mask: Int32, _ a: Int32, _ b: Int32) -> Int32 { (mask & a) | (~mask & b) }

    /// The branch-free unescaping behind ``withUnescapedBase64(of:in:_:)``: the output's length
    /// and a mask that is non-zero for an escape it does not know.
    private static func unescape(
        _ json: UnsafeRawBufferPointer, _ range: Range<Int>, into out: UnsafeMutableRawBufferPointer
    ) -> (Int, Int32) {
        let n = range.count
        func at(_ i: Int) -> Int32 { i < n ? Int32(json[range.lowerBound + i]) : 0 }
        let equal = ConstantTimeEncoding.equal
        var skip: Int32 = 0
        var written: Int32 = 0
        var bad: Int32 = 0
        for i in 0..<n {
            let c = at(i)
            let backslash = equal(c, 92)
            let slash = backslash & equal(at(i + 1), 47)
            let unicode = backslash & equal(at(i + 1), 117) & equal(at(i + 2), 48) & equal(at(i + 3), 48)
            let high = at(i + 4)
            let low = at(i + 5) | 0x20
            let isEquals = unicode & equal(high, 51) & equal(low, 100)
            let isPlus = unicode & equal(high, 50) & equal(low, 98)
            let isSlash = unicode & equal(high, 50) & equal(low, 102)
            let known = isEquals | isPlus | isSlash
            let active = equal(skip, 0)
            let value = pick(slash | isSlash, 47, pick(isEquals, 61, pick(isPlus, 43, c)))
            bad |= active & backslash & ~(slash | known)
            for j in 0..<n {
                let here = active & same(Int32(j), written)
                out[j] = UInt8(truncatingIfNeeded: pick(here, value, Int32(out[j])))
            }
            written += active & 1
            let next = pick(~equal(skip, 0), skip - 1, 0)
            skip = pick(active & slash, 1, pick(active & known, 5, next))
        }
        return (Int(written), bad)
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
