// libFuzzer target: every PowerAuth header parser, V3 and V4 — X-PowerAuth-Authorization
// (AuthorizationHeader, V4AuthorizationHeader), X-PowerAuth-Encryption (EncryptionHeader,
// V4EncryptionHeader) and X-PowerAuth-Token (TokenHeader, V4TokenHeader) — in every separator
// form the SDKs write (", " from iOS and the SDK core, a single space from Android's
// EciesMetadata). The first input byte picks the parser. Oracles: total; a parsed header
// renders to a value that parses back to an equal header; and a parsed header's text with its
// separators rewritten (comma-space ⇄ space) parses to the same header, so the lenient grammar
// is never ambiguous.
import PowerAuthProtocol

/// The six parsers, each as "parse, then render" (`nil` when the input is refused).
private let parsers: [(String) -> String?] = [
    { (try? AuthorizationHeader.parse($0))?.value },
    { (try? V4AuthorizationHeader.parse($0))?.value },
    { (try? EncryptionHeader.parse($0))?.value },
    { (try? V4EncryptionHeader.parse($0))?.value },
    { (try? TokenHeader.parse($0))?.value },
    { (try? V4TokenHeader.parse($0))?.value },
]

/// libFuzzer's entry point: runs one header parser on one input.
/// - Parameters:
///   - data: the input bytes.
///   - size: their count.
/// - Returns: 0 (libFuzzer's "keep going").
@_cdecl("LLVMFuzzerTestOneInput")
public func authorizationHeaderFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    guard let selector = bytes.first else { return 0 }
    let text = String(decoding: bytes.dropFirst(), as: UTF8.self)
    let index = Int(selector) % parsers.count
    let parse = parsers[index]
    guard let rendered = parse(text) else { return 0 }
    if index == 0, let header = try? AuthorizationHeader.parse(text) {
        guard let again = try? AuthorizationHeader.parse(header.value), again == header else {
            fatalError("a parsed authorization header does not survive rendering and parsing again")
        }
    }
    guard parse(rendered) == rendered else { fatalError("a rendered header does not parse to itself") }
    // The other separator form of the same parameters parses to the same header.
    let spaced = text.replacingOccurrences(of: "\", ", with: "\" ")
    let commaed = text.replacingOccurrences(of: "\" ", with: "\", ")
    for variant in [spaced, commaed] where variant != text {
        if let other = parse(variant), other != rendered {
            fatalError("two separator forms of one header parse to different headers")
        }
    }
    return 0
}
