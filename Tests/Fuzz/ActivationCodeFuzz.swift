// libFuzzer target: the activation code parser, ActivationCode(parsing:), code and QR form.
// Oracle: total (a typed error or a code, never a trap); an accepted code is 23
// characters and its QR text parses back to the same code.
import PowerAuthProtocol

/// libFuzzer's entry point: runs the activation code parser on one input.
/// - Parameters:
///   - data: the input bytes (read as UTF-8, invalid sequences repaired).
///   - size: their count.
/// - Returns: 0 (libFuzzer's "keep going").
@_cdecl("LLVMFuzzerTestOneInput")
public func activationCodeFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = data.map { String(decoding: UnsafeBufferPointer(start: $0, count: size), as: UTF8.self) } ?? ""
    guard let code = try? ActivationCode(parsing: text) else { return 0 }
    if code.code.utf8.count != ActivationCode.textLength { fatalError("an accepted code is not 23 characters") }
    if (try? ActivationCode(parsing: code.qrText)) != code { fatalError("the QR text does not parse back") }
    return 0
}
