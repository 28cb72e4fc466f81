// libFuzzer target: the configuration string parser, SDKConfiguration(parsing:).
// Oracle: total (a typed error or a configuration, never a trap), and what it
// accepts is canonical: parsing is a function of the text, so a second parse
// of the same text must agree.
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
    return 0
}
