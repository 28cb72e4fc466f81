internal import CHTTPShim
import Foundation
import SecureCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The Swift handler, kept alive for as long as the C daemons may call it.
final class HandlerBox: Sendable {
    let handler: @Sendable (HTTPRequest) -> HTTPResponse
    /// ``HTTPServer/Configuration/secretHeaders``, lower-cased.
    let secretHeaders: Set<String>
    /// ``HTTPServer/Configuration/trustedProxies``.
    let trustedProxies: [IPNetwork]
    /// Most requests in flight per forwarded client (0: no limit).
    let perClientLimit: Int
    /// Requests in flight per forwarded client (entries at 0 are removed).
    private let forwardedInFlight = Mutex([String: Int]())

    init(
        _ handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse, secretHeaders: Set<String> = [],
        trustedProxies: [IPNetwork] = [], perClientLimit: Int = 0
    ) {
        self.handler = handler
        self.secretHeaders = Set(secretHeaders.map { $0.lowercased() })
        self.trustedProxies = trustedProxies
        self.perClientLimit = perClientLimit
    }

    func isTrusted(_ address: String) -> Bool { trustedProxies.contains { $0.contains(address) } }

    /// The client a request is from: the peer itself, unless the peer is a trusted proxy; then
    /// the right-most `X-Forwarded-For` entry that is not a trusted proxy. Each proxy appends the
    /// address it saw, so entries left of the first untrusted one (walking from the right) are
    /// whatever the client chose to send and are never used. A malformed entry ends the walk at
    /// the last trusted address seen (the proxy that forwarded it is the client we can vouch
    /// for); every entry trusted gives the left-most.
    /// - Parameters:
    ///   - peer: the connection's address, nil when unknown.
    ///   - forwardedFor: the `X-Forwarded-For` values in the order received.
    func clientAddress(peer: String?, forwardedFor: [String]) -> String? {
        guard let peer, !trustedProxies.isEmpty, isTrusted(peer) else { return peer }
        let entries = forwardedFor.flatMap { $0.split(separator: ",") }.map {
            Self.unbracketed($0.trimmingCharacters(in: .whitespaces))
        }
        var client = peer
        for entry in entries.reversed() {
            guard IPNetwork.isAddress(entry) else { return client }
            client = entry
            if !isTrusted(entry) { return entry }
        }
        return client
    }

    /// `[2001:db8::1]` (as some proxies write IPv6) without its brackets.
    private static func unbracketed(_ text: String) -> String {
        text.hasPrefix("[") && text.hasSuffix("]") && text.count > 2 ? String(text.dropFirst().dropLast()) : text
    }

    /// Counts a proxied request in flight for `client`; false (nothing counted) when the client
    /// already has ``perClientLimit`` of them.
    func enterForwarded(_ client: String) -> Bool {
        guard perClientLimit > 0 else { return true }
        return forwardedInFlight.withLock { counts in
            let now = counts[client, default: 0]
            guard now < perClientLimit else { return false }
            counts[client] = now + 1
            return true
        }
    }

    /// Ends a request ``enterForwarded(_:)`` counted.
    func leaveForwarded(_ client: String) {
        guard perClientLimit > 0 else { return }
        forwardedInFlight.withLock { counts in
            let now = counts[client, default: 1] - 1
            counts[client] = now > 0 ? now : nil
        }
    }
}

/// A running daemon. `server` is only touched by `HTTPServer` under its lock, and the
/// C side is thread-safe for the calls made on it (port read, stop once).
struct RunningDaemon: @unchecked Sendable {
    let server: OpaquePointer
    let box: Unmanaged<HandlerBox>
    let port: Int
}

/// Everything between the C shim and Swift: configuration conversion and the callback.
enum ShimBridge {
    /// Checks every listener's address and every limit, before any daemon starts.
    static func validate(_ configuration: HTTPServer.Configuration) throws(HTTPServerError) {
        for listener in configuration.listeners where IPNetwork.parseAddress(listener.host) == nil {
            throw .invalidAddress(listener.host)
        }
        guard configuration.trustedProxies.count <= 256 else {
            throw .invalidConfiguration("at most 256 trusted proxy networks")
        }
        guard configuration.maximumBodyBytes > 0 else {
            throw .invalidConfiguration("maximumBodyBytes must be positive")
        }
        guard (1...86_400).contains(configuration.connectionTimeoutSeconds) else {
            throw .invalidConfiguration("connectionTimeoutSeconds must be 1...86400")
        }
        guard (1...65_536).contains(configuration.maximumConnections) else {
            throw .invalidConfiguration("maximumConnections must be 1...65536")
        }
        guard (4096...(16 << 20)).contains(configuration.maximumHeaderBytes) else {
            throw .invalidConfiguration("maximumHeaderBytes must be 4 KiB...16 MiB")
        }
        guard (0...65_536).contains(configuration.maximumConnectionsPerAddress) else {
            throw .invalidConfiguration("maximumConnectionsPerAddress must be 0...65536")
        }
        guard (0...86_400).contains(configuration.headerDeadlineSeconds) else {
            throw .invalidConfiguration("headerDeadlineSeconds must be 0...86400")
        }
    }

    /// Starts the daemon for one listener of this (validated) configuration.
    static func start(_ configuration: HTTPServer.Configuration, listener: HTTPServer.Listener, box: HandlerBox)
        throws(HTTPServerError) -> RunningDaemon
    {
        guard let (ipv6, bytes) = IPNetwork.parseAddress(listener.host) else { throw .invalidAddress(listener.host) }
        var config = spc_http_config()
        config.ipv6 = ipv6 ? 1 : 0
        if ipv6 {
            withUnsafeMutableBytes(of: &config.ipv6_address) { $0.copyBytes(from: bytes) }
        } else {
            config.ipv4_address = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
        }
        config.port = listener.port
        config.max_body_bytes = configuration.maximumBodyBytes
        config.connection_timeout_seconds = UInt32(configuration.connectionTimeoutSeconds)
        config.connection_limit = UInt32(configuration.maximumConnections)
        config.connection_memory_limit = configuration.maximumHeaderBytes
        config.header_deadline_seconds = UInt32(configuration.headerDeadlineSeconds)
        config.per_address_connection_limit = UInt32(configuration.maximumConnectionsPerAddress)
        var exempt = configuration.trustedProxies.map { network in
            var entry = spc_http_network()
            entry.ipv6 = network.isIPv6 ? 1 : 0
            entry.prefix_length = UInt8(network.prefixLength)
            withUnsafeMutableBytes(of: &entry.address) { $0.copyBytes(from: network.address) }
            return entry
        }
        config.exempt_count = exempt.count
        let context = Unmanaged.passRetained(box)
        var server: OpaquePointer?
        var startErrno: Int32 = 0
        let status = exempt.withUnsafeMutableBufferPointer { networks in
            config.exempt_networks = networks.isEmpty ? nil : UnsafePointer(networks.baseAddress)
            return spc_http_server_start(&config, shimHandler, context.toOpaque(), &server, &startErrno)
        }
        guard status == SPC_HTTP_OK, let server else {
            context.release()
            switch status {
            case SPC_HTTP_E_MEMORY: throw .outOfMemory
            case SPC_HTTP_E_INVALID: throw .invalidConfiguration("rejected by the shim")
            default: throw .startFailed(errno: startErrno)
            }
        }
        return RunningDaemon(server: server, box: context, port: Int(spc_http_server_port(server)))
    }

    /// Stops one daemon accepting connections (its drain comes with ``stop(_:drainTimeout:)``).
    static func quiesce(_ daemon: RunningDaemon) { spc_http_server_quiesce(daemon.server) }

    /// Stops gracefully and releases the handler; returns the requests cut short.
    static func stop(_ daemon: RunningDaemon, drainTimeout: Duration) -> Int {
        let (seconds, attoseconds) = drainTimeout.components
        let milliseconds = max(0, min(Int64(UInt32.max), seconds * 1000 + attoseconds / 1_000_000_000_000_000))
        let cut = spc_http_server_stop(daemon.server, UInt32(milliseconds))
        daemon.box.release()
        return Int(cut)
    }

    /// Requests currently in flight.
    static func inFlight(_ daemon: RunningDaemon) -> Int { Int(spc_http_server_in_flight(daemon.server)) }

    static func openConnections(_ daemon: RunningDaemon) -> Int {
        Int(spc_http_server_open_connections(daemon.server))
    }
}

/// The one C callback: builds an ``HTTPRequest``, calls the handler, fills the C response.
private func shimHandler(
    context: UnsafeMutableRawPointer?, request: UnsafePointer<spc_http_request>?, response: OpaquePointer?
) {
    guard let context, let request, let response else { return }
    let box = Unmanaged<HandlerBox>.fromOpaque(context).takeUnretainedValue()
    let c = request.pointee
    var headers: [HTTPHeader] = []
    var secrets: [String: SecureBytes] = [:]
    headers.reserveCapacity(c.header_count)
    for index in 0..<c.header_count {
        guard let name = c.header_names[index], let value = c.header_values[index] else { continue }
        let headerName = String(cString: name)
        let key = headerName.lowercased()
        if box.secretHeaders.contains(key) {
            // Straight from the C string into secure memory: no Swift String holds the value.
            let length = strlen(value)
            if secrets[key] == nil, length > 0,
                let copy = try? SecureBytes(copying: UnsafeRawBufferPointer(start: value, count: length))
            {
                secrets[key] = copy
            }
            continue
        }
        headers.append(HTTPHeader(name: headerName, value: String(cString: value)))
    }
    let body = c.body_length > 0 && c.body != nil ? Data(bytes: c.body, count: c.body_length) : Data()
    var built = HTTPRequest(
        method: String(cString: c.method), path: String(cString: c.path), headers: headers, body: body)
    built.secretHeaders = secrets
    if let address = c.client_address, address.pointee != 0 { built.peerAddress = String(cString: address) }
    built.clientAddress = box.clientAddress(
        peer: built.peerAddress, forwardedFor: built.headers(HTTPHeader.forwardedFor))
    let answer: HTTPResponse
    if let client = built.clientAddress, client != built.peerAddress {
        // A client behind a trusted proxy: its requests in flight stand in for its connections.
        if box.enterForwarded(client) {
            answer = box.handler(built)
            box.leaveForwarded(client)
        } else {
            answer = .text(status: 429, "too many requests in flight from this client\n")
        }
    } else {
        answer = box.handler(built)
    }
    if !fill(response, with: answer) {
        let fallback = Array("invalid response\n".utf8)
        _ = spc_http_response_set(response, 500, "text/plain; charset=utf-8", fallback, fallback.count)
    }
}

/// Copies a Swift response into the C response; false when the shim refused part of it.
private func fill(_ response: OpaquePointer, with answer: HTTPResponse) -> Bool {
    guard (100...599).contains(answer.status), answer.headers.count <= 16,
        !answer.contentType.utf8.contains(where: isHeaderBreaking),
        answer.headers.allSatisfy({ header in
            !header.name.isEmpty && !header.name.utf8.contains(UInt8(ascii: ":"))
                && !header.name.utf8.contains(where: isHeaderBreaking)
                && !header.value.utf8.contains(where: isHeaderBreaking)
        })
    else { return false }
    let set = answer.body.withUnsafeBytes { bytes in
        spc_http_response_set(
            response, UInt32(answer.status), answer.contentType,
            bytes.bindMemory(to: UInt8.self).baseAddress, bytes.count)
    }
    guard set == SPC_HTTP_OK else { return false }
    for header in answer.headers where spc_http_response_add_header(response, header.name, header.value) != SPC_HTTP_OK
    {
        return false
    }
    return true
}

/// CR, LF and NUL would split or truncate a header line (checked as bytes: a CR LF pair is one
/// `Character`, and walking `Character`s costs more than the rest of the response).
private func isHeaderBreaking(_ byte: UInt8) -> Bool { byte == 0x0D || byte == 0x0A || byte == 0 }
