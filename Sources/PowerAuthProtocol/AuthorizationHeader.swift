/// The `X-PowerAuth-Authorization` header:
///
/// ```
/// PowerAuth pa_activation_id="...", pa_application_key="...", pa_nonce="...",
///           pa_signature_type="...", pa_signature="...", pa_version="3.1"
/// ```
///
/// Every value is validated when the header is made, whether by
/// ``init(activationId:applicationKey:nonce:factorSet:authenticationCode:version:)``
/// or by ``parse(_:)``, so a value of this type always renders a well-formed header.
public struct AuthorizationHeader: Sendable, Equatable {
    /// The activation identifier (letters, digits and dashes; a UUID in practice).
    public let activationId: String
    /// The application key, canonical Base64 of 16 bytes.
    public let applicationKey: String
    /// The 16-byte request nonce.
    public let nonce: [UInt8]
    /// The factors the code combines.
    public let factorSet: FactorSet
    /// The authentication code, in the format ``version`` prescribes.
    public let authenticationCode: String
    /// The protocol version.
    public let version: ProtocolVersion

    /// Builds a header from its parts, validating each.
    /// - Parameters:
    ///   - activationId: 1 ... 64 letters, digits or dashes.
    ///   - applicationKey: canonical Base64 of 16 bytes.
    ///   - nonce: 16 bytes.
    ///   - factorSet: the factors of the code.
    ///   - authenticationCode: the code; its shape must fit `version` and `factorSet`.
    ///   - version: the protocol version.
    /// - Throws: ``ProtocolError/invalidActivationId``, ``ProtocolError/malformedBase64(field:)``,
    ///   ``ProtocolError/invalidLength(field:expected:actual:)``, ``ProtocolError/malformedAuthenticationCode``.
    public init(
        activationId: String, applicationKey: String, nonce: [UInt8], factorSet: FactorSet,
        authenticationCode: String, version: ProtocolVersion
    ) throws(ProtocolError) {
        try Self.validateActivationId(activationId)
        _ = try Base64.decode(
            applicationKey, field: "pa_application_key", count: ProtocolConstants.applicationKeyByteCount)
        guard nonce.count == ProtocolConstants.nonceByteCount else {
            throw .invalidLength(field: "pa_nonce", expected: ProtocolConstants.nonceByteCount, actual: nonce.count)
        }
        guard version.authenticationCodeFormat.matchesShape(authenticationCode, count: factorSet.factors.count) else {
            throw .malformedAuthenticationCode
        }
        self.activationId = activationId
        self.applicationKey = applicationKey
        self.nonce = nonce
        self.factorSet = factorSet
        self.authenticationCode = authenticationCode
        self.version = version
    }

    /// Checks an activation identifier: 1 ... 64 letters, digits or dashes.
    /// - Parameter activationId: the identifier.
    /// - Throws: ``ProtocolError/invalidActivationId``.
    public static func validateActivationId(_ activationId: String) throws(ProtocolError) {
        let idBytes = activationId.utf8
        let idOK = idBytes.allSatisfy { c in
            (0x30...0x39).contains(c) || (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c) || c == 0x2D
        }
        guard !idBytes.isEmpty, idBytes.count <= ProtocolConstants.maximumActivationIdLength, idOK else {
            throw .invalidActivationId
        }
    }

    /// The header name, `X-PowerAuth-Authorization`.
    public static var name: String { ProtocolConstants.authorizationHeaderName }

    /// The header value.
    public var value: String {
        let fields = [
            ("pa_activation_id", activationId), ("pa_application_key", applicationKey),
            ("pa_nonce", Base64.encode(nonce)), ("pa_signature_type", factorSet.rawValue),
            ("pa_signature", authenticationCode), ("pa_version", version.rawValue),
        ]
        return ProtocolConstants.authorizationScheme + " "
            + fields.map { "\($0.0)=\"\($0.1)\"" }.joined(separator: ", ")
    }

    /// Parses a header value. Total: any input yields a header or a typed error.
    ///
    /// Grammar: optional whitespace, the scheme `PowerAuth` (any case), at
    /// least one whitespace, then `key="value"` parameters, then optional
    /// whitespace. Parameters are separated by a comma with optional whitespace
    /// around it (the iOS SDK's `", "`) or by whitespace alone (the Android SDK's
    /// single space), as upstream's server reads them (powerauth-java-http
    /// `PowerAuthHttpHeader`). Whitespace is space, tab, CR or LF (the
    /// documentation's examples wrap the header). Keys are the six `pa_` names,
    /// each exactly once; values are printable ASCII without quotes, backslashes,
    /// commas or spaces, so no value can span a separator.
    /// - Parameter value: the header value (without the name).
    /// - Returns: the validated header.
    /// - Throws: ``ProtocolError/malformedHeader(reason:)``, ``ProtocolError/missingHeaderField(_:)``,
    ///   ``ProtocolError/duplicateHeaderField(_:)``, ``ProtocolError/unknownHeaderField(_:)``, and
    ///   the value errors of ``init(activationId:applicationKey:nonce:factorSet:authenticationCode:version:)``,
    ///   ``FactorSet/init(parsing:)`` and ``ProtocolVersion/init(parsing:)``.
    public static func parse(_ value: String) throws(ProtocolError) -> AuthorizationHeader {
        var parser = HeaderParser(Array(value.utf8))
        let fields = try parser.parse()
        func field(_ key: String) throws(ProtocolError) -> String {
            guard let found = fields[key] else { throw .missingHeaderField(key) }
            return found
        }
        let nonce = try Base64.decode(try field("pa_nonce"), field: "pa_nonce", count: ProtocolConstants.nonceByteCount)
        return try AuthorizationHeader(
            activationId: try field("pa_activation_id"), applicationKey: try field("pa_application_key"),
            nonce: nonce, factorSet: try FactorSet(parsing: try field("pa_signature_type")),
            authenticationCode: try field("pa_signature"),
            version: try ProtocolVersion(parsing: try field("pa_version")))
    }
}

/// The byte-level scanner behind ``AuthorizationHeader/parse(_:)``. Every
/// read is bounds-checked; no index arithmetic can trap.
struct HeaderParser {
    static let keys: Set<String> = [
        "pa_activation_id", "pa_application_key", "pa_nonce", "pa_signature_type", "pa_signature", "pa_version",
    ]
    private let bytes: [UInt8]
    private let allowed: Set<String>
    private var index = 0

    init(_ bytes: [UInt8], keys: Set<String> = HeaderParser.keys) {
        self.bytes = bytes
        self.allowed = keys
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0D || c == 0x0A }

    private mutating func skipSpace() -> Int {
        let start = index
        while let c = current, Self.isSpace(c) { index += 1 }
        return index - start
    }

    mutating func parse() throws(ProtocolError) -> [String: String] {
        guard bytes.count <= ProtocolConstants.maximumHeaderLength else { throw .malformedHeader(reason: "too long") }
        _ = skipSpace()
        try scheme()
        guard skipSpace() > 0 else { throw .malformedHeader(reason: "no space after the scheme") }
        var fields: [String: String] = [:]
        while true {
            let (key, value) = try parameter()
            guard allowed.contains(key) else { throw .unknownHeaderField(ProtocolError.echo(key)) }
            guard fields[key] == nil else { throw .duplicateHeaderField(key) }
            fields[key] = value
            let spaces = skipSpace()
            guard let c = current else { return fields }
            if c == UInt8(ascii: ",") {
                index += 1
                _ = skipSpace()
            } else if spaces == 0 {
                throw .malformedHeader(reason: "expected a comma or a space at offset \(index)")
            }
        }
    }

    private static let schemeWord = Array(ProtocolConstants.authorizationScheme.lowercased().utf8)

    private mutating func scheme() throws(ProtocolError) {
        let word = Self.schemeWord
        guard bytes.count - index >= word.count,
            zip(bytes[index..<(index + word.count)], word).allSatisfy({ ($0 | 0x20) == $1 })
        else { throw .malformedHeader(reason: "missing the PowerAuth scheme") }
        index += word.count
    }

    private mutating func parameter() throws(ProtocolError) -> (String, String) {
        let keyStart = index
        while let c = current, (0x61...0x7A).contains(c) || (0x41...0x5A).contains(c) || c == UInt8(ascii: "_") {
            index += 1
        }
        guard index > keyStart else { throw .malformedHeader(reason: "expected a parameter name at offset \(index)") }
        let key = String(decoding: bytes[keyStart..<index], as: UTF8.self)
        guard current == UInt8(ascii: "="), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "\"") else {
            throw .malformedHeader(reason: "expected =\" after \(ProtocolError.echo(key))")
        }
        index += 2
        let valueStart = index
        while let c = current, c != UInt8(ascii: "\"") {
            guard c > 0x20, c < 0x7F, c != UInt8(ascii: "\\"), c != UInt8(ascii: ",") else {
                throw .malformedHeader(reason: "invalid character in the value of \(ProtocolError.echo(key))")
            }
            index += 1
        }
        guard current == UInt8(ascii: "\"") else { throw .malformedHeader(reason: "unterminated value") }
        let value = String(decoding: bytes[valueStart..<index], as: UTF8.self)
        index += 1
        return (key, value)
    }
}
