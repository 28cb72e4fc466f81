internal import CSecureCore

/// Comparison of public-length byte strings whose contents may be secret
/// (authentication codes, tags, counter hashes), done by the C core so the
/// constant-time property is the one the core's ctgrind audit checks.
package enum ConstantTime {
    /// Whether `a` and `b` are equal, with no early exit on the first
    /// difference (`spc_bytes_equal`). Lengths are public: different
    /// lengths return `false` at once.
    /// - Parameters:
    ///   - a: the first byte string.
    ///   - b: the second byte string.
    /// - Returns: `true` when the lengths and all bytes are equal.
    package static func isEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var equal: Int32 = 0
        let status = a.withUnsafeBufferPointer { pa in
            b.withUnsafeBufferPointer { pb in spc_bytes_equal(pa.baseAddress, pb.baseAddress, pa.count, &equal) }
        }
        precondition(status == SPC_OK, "spc_bytes_equal refused buffers of \(a.count) bytes")
        return equal == 1
    }
}
