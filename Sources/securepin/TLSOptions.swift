import Activation
import Foundation
import HTTPClient

/// `--ca-file`, `--pin-sha256` (repeatable), `--insecure-skip-tls-verify` and
/// `--allow-insecure-http`: how a command that talks to a server checks it. Parsed with the
/// command's other options, checked (pins decoded, the CA file read) before any network or disk
/// effect.
struct TLSOptions {
    var caFile: String?
    var pins: [Data] = []
    var insecure = false
    var allowInsecureHTTP = false

    /// Takes the four options out of `args`.
    static func parse(_ args: inout Arguments) -> TLSOptions {
        var options = TLSOptions()
        options.caFile = args.value("--ca-file")
        let pinTexts = args.values("--pin-sha256")
        options.insecure = args.flag("--insecure-skip-tls-verify")
        options.allowInsecureHTTP = args.flag("--allow-insecure-http")
        if options.insecure && (options.caFile != nil || !pinTexts.isEmpty) {
            args.usageError("--insecure-skip-tls-verify checks nothing: it cannot go with --ca-file or --pin-sha256")
        }
        for text in pinTexts {
            guard let pin = Data(base64Encoded: text), pin.count == 32 else {
                args.fail(
                    "--pin-sha256 must be the Base64 of a 32-byte SHA-256 (of the server key's SubjectPublicKeyInfo), "
                        + "not '\(text)'")
            }
            options.pins.append(pin)
        }
        do throws(HTTPClientError) {
            try HTTPClient.check(options.http)
        } catch {
            args.fail("\(error)")
        }
        return options
    }

    /// The strategy for `HTTPClient`.
    var http: HTTPClient.TLSValidation {
        if insecure { return .noValidation }
        if !pins.isEmpty { return .pinnedPublicKeys(pins, customCA: caFile) }
        if let caFile { return .customCA(file: caFile) }
        return .system
    }

    /// The activation client's settings with this strategy.
    var client: ActivationClientConfiguration {
        var settings = ActivationClientConfiguration()
        switch http {
        case .system: settings.tlsValidation = .system
        case .customCA(let file): settings.tlsValidation = .customCA(file: file)
        case .pinnedPublicKeys(let keys, let file):
            settings.tlsValidation = .pinnedPublicKeys(keys.map { Array($0) }, customCA: file)
        case .noValidation: settings.tlsValidation = .noValidation
        }
        settings.allowInsecureHTTP = allowInsecureHTTP
        return settings
    }

    /// The help lines, shared by every command that takes them.
    static let help = """
          --ca-file PATH   trust the CA certificates in PATH (PEM) instead of the system's
          --pin-sha256 B64 also require this Base64 SHA-256 of the server key's
                           SubjectPublicKeyInfo (repeat for a backup key)
          --insecure-skip-tls-verify  accept any https certificate: development only (warns)
          --allow-insecure-http  allow plain http to a host that is not loopback
        """
}
