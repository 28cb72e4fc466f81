// libFuzzer target: the X-PowerAuth-Authorization header parser,
// AuthorizationHeader.parse. Oracle: total, and the value a parsed header
// renders parses back to an equal header.
import PowerAuthProtocol

/// libFuzzer's entry point: runs the header parser on one input.
/// - Parameters:
///   - data: the input bytes.
///   - size: their count.
/// - Returns: 0 (libFuzzer's "keep going").
@_cdecl("LLVMFuzzerTestOneInput")
public func authorizationHeaderFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let text = String(decoding: bytes, as: UTF8.self)
    guard let header = try? AuthorizationHeader.parse(text) else { return 0 }
    guard let again = try? AuthorizationHeader.parse(header.value), again == header else {
        fatalError("a parsed header does not survive rendering and parsing again")
    }
    return 0
}
