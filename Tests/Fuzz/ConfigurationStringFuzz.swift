// libFuzzer target: the MOBILE_SDK_CONFIG parser, SDKConfiguration(parsing:).
// Oracle: total (a typed error or a configuration, never a trap); parsing is a function
// of the text (a second parse agrees); and what it accepts survives the round trip
// (the encoding of a parsed configuration parses to the same configuration).
import PowerAuthProtocol

/// libFuzzer's entry point: runs the configuration string parser on one input.
/// - Parameters:
///   - data: the input bytes (read as UTF-8, invalid sequences repaired).
///   - size: their count.
/// - Returns: 0 (libFuzzer's "keep going").
@_cdecl("LLVMFuzzerTestOneInput")
public func configurationStringFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = data.map { String(decoding: UnsafeBufferPointer(start: $0, count: size), as: UTF8.self) } ?? ""
    let first = try? SDKConfiguration(parsing: text)
    let second = try? SDKConfiguration(parsing: text)
    if first != second { fatalError("the parser is not a function of its input") }
    if let first, (try? SDKConfiguration(parsing: first.encoded)) != first {
        fatalError("an accepted configuration does not survive its own encoding")
    }
    return 0
}
