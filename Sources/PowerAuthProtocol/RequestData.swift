/// The parts of an HTTP request an authentication code covers, and their
/// normalised form:
/// `METHOD&B64(uriIdentifier)&B64(nonce)&B64(body)&applicationSecret`.
///
/// For a request without a body, pass the query normalisation PowerAuth
/// prescribes (sorted `key=value` pairs joined with `&`) as `body`.
public struct RequestData: Sendable, Equatable {
    /// The upper-case HTTP method.
    public let method: String
    /// The resource identifier (for example `/pa/signature/validate`).
    public let uriIdentifier: String
    /// The 16-byte request nonce (`pa_nonce`).
    public let nonce: [UInt8]
    /// The request body bytes.
    public let body: [UInt8]

    /// Validates and stores the request parts.
    /// - Parameters:
    ///   - method: an HTTP method of ASCII letters; it is upper-cased.
    ///   - uriIdentifier: the resource identifier, any text.
    ///   - nonce: 16 bytes.
    ///   - body: the body bytes (may be empty).
    /// - Throws: ``ProtocolError/invalidHTTPMethod(_:)``, ``ProtocolError/invalidLength(field:expected:actual:)``.
    public init(method: String, uriIdentifier: String, nonce: [UInt8], body: [UInt8]) throws(ProtocolError) {
        let letters = method.utf8.allSatisfy { (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
        guard !method.isEmpty, method.utf8.count <= 16, letters else {
            throw .invalidHTTPMethod(ProtocolError.echo(method))
        }
        guard nonce.count == ProtocolConstants.nonceByteCount else {
            throw .invalidLength(field: "nonce", expected: ProtocolConstants.nonceByteCount, actual: nonce.count)
        }
        self.method = method.uppercased()
        self.uriIdentifier = uriIdentifier
        self.nonce = nonce
        self.body = body
    }

    /// The data of an offline code: method `POST`, same fields otherwise.
    /// - Parameters:
    ///   - uriIdentifier: the resource identifier of the offline operation.
    ///   - nonce: 16 bytes.
    ///   - body: the operation data.
    /// - Returns: the request data.
    /// - Throws: ``ProtocolError/invalidLength(field:expected:actual:)``.
    public static func offline(uriIdentifier: String, nonce: [UInt8], body: [UInt8]) throws(ProtocolError)
        -> RequestData
    {
        try RequestData(method: ProtocolConstants.offlineMethod, uriIdentifier: uriIdentifier, nonce: nonce, body: body)
    }

    /// `METHOD&B64(uriIdentifier)&B64(nonce)&B64(body)`: what an intermediate
    /// server forwards (it does not know the application secret).
    public var requestData: String {
        [method, Base64.encode(Array(uriIdentifier.utf8)), Base64.encode(nonce), Base64.encode(body)]
            .joined(separator: "&")
    }

    /// The bytes an online code signs: ``requestData`` `&` the application secret.
    /// - Parameter applicationSecret: the application secret as issued (Base64 of 16 bytes).
    /// - Returns: the UTF-8 bytes of the normalised data.
    /// - Throws: ``ProtocolError/malformedBase64(field:)``, ``ProtocolError/invalidLength(field:expected:actual:)``.
    public func normalized(applicationSecret: String) throws(ProtocolError) -> [UInt8] {
        _ = try Base64.decode(
            applicationSecret, field: "applicationSecret", count: ProtocolConstants.applicationKeyByteCount)
        return Array((requestData + "&" + applicationSecret).utf8)
    }

    /// The bytes an offline code signs: ``requestData`` `&offline`.
    public var normalizedOffline: [UInt8] {
        Array((requestData + "&" + ProtocolConstants.offlineApplicationSecret).utf8)
    }
}
