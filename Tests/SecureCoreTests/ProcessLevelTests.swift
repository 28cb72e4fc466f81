import Foundation
import Spawn
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Locates the helper executable built beside this test bundle.
func helperPath(_ name: String = "spc-test-helper") throws -> String { try BuiltExecutable.path(name) }

enum HelperError: Error { case notFound(String), protocolError(String) }

/// A running helper process driven line by line.
final class Helper {
    let process: ChildProcess
    private let input: PipeWriter
    private let output: PipeReader
    private var buffered: [UInt8] = []

    init(_ arguments: [String], executable: String? = nil, wrapper: [String] = []) throws {
        let path = try executable ?? helperPath()
        if wrapper.isEmpty {
            process = try ChildProcess(
                executable: path, arguments: arguments, standardInput: .pipe, standardOutput: .pipe)
        } else {
            process = try ChildProcess(
                executable: wrapper[0], arguments: Array(wrapper.dropFirst()) + [path] + arguments,
                standardInput: .pipe, standardOutput: .pipe)
        }
        input = process.standardInput!
        output = process.standardOutput!
    }

    func readLine() throws -> String {
        while true {
            if let newline = buffered.firstIndex(of: 0x0A) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                return line
            }
            let chunk = try output.read()
            if chunk.isEmpty { throw HelperError.protocolError("helper closed its output") }
            buffered += chunk
        }
    }

    func next() throws { try input.write("next\n") }

    func finish() throws -> ChildProcess.Termination {
        input.close()
        return try process.wait()
    }
}

/// The marker in UTF-8, UTF-16LE and UTF-32LE.
func markerEncodings(seed: UInt64) -> [[UInt8]] {
    let scalars = (0..<16).map { markerScalar(seed: seed, index: $0) }
    let utf8 = scalars.map { UInt8($0) }
    let utf16 = scalars.flatMap { s -> [UInt8] in [UInt8(s), 0] }
    let utf32 = scalars.flatMap { s -> [UInt8] in [UInt8(s), 0, 0, 0] }
    return [utf8, utf16, utf32]
}

/// Reads every mapped region of `pid` through /proc/PID/mem (no-access
/// regions included: the kernel's forced read path) and counts the hits of
/// each pattern. Regions the kernel refuses (secret memory, vvar) are
/// counted as unreadable.
func scanMemory(pid: Int32, patterns: [[UInt8]]) throws -> (hits: [Int], unreadableRegions: Int, bytesRead: Int) {
    let maps = try String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)
    let fd = open("/proc/\(pid)/mem", O_RDONLY)
    guard fd >= 0 else { throw HelperError.protocolError("cannot open /proc/\(pid)/mem: errno \(errno)") }
    defer { close(fd) }
    var hits = [Int](repeating: 0, count: patterns.count)
    var unreadable = 0
    var total = 0
    let chunkSize = 1 << 20
    let overlap = patterns.map(\.count).max()! - 1
    var chunk = [UInt8](repeating: 0, count: chunkSize + overlap)
    for line in maps.split(separator: "\n") {
        let range = line.split(separator: " ")[0].split(separator: "-")
        guard range.count == 2, let lo = UInt64(range[0], radix: 16), let hi = UInt64(range[1], radix: 16) else {
            continue
        }
        if line.hasSuffix("[vsyscall]") { continue }
        var offset = lo
        var carried = 0
        var regionFailed = false
        while offset < hi {
            let want = Int(min(UInt64(chunkSize), hi - offset))
            let got = chunk.withUnsafeMutableBytes {
                pread(fd, $0.baseAddress! + carried, want, off_t(Int64(bitPattern: offset)))
            }
            if got <= 0 {
                regionFailed = true
                break
            }
            total += got
            let valid = carried + got
            for (i, pattern) in patterns.enumerated() {
                hits[i] += count(pattern, in: chunk, limit: valid, from: max(0, carried - pattern.count + 1))
            }
            // Keep the tail so a pattern split across chunks is still found.
            let keep = min(overlap, valid)
            _ = chunk.withUnsafeMutableBytes { raw in
                memmove(raw.baseAddress!, raw.baseAddress! + valid - keep, keep)
            }
            carried = keep
            offset += UInt64(got)
        }
        if regionFailed { unreadable += 1 }
    }
    return (hits, unreadable, total)
}

/// Occurrences of `pattern` in `buffer[0..<limit]` starting at or after `from`.
func count(_ pattern: [UInt8], in buffer: [UInt8], limit: Int, from: Int) -> Int {
    guard limit >= pattern.count, let first = pattern.first else { return 0 }
    var n = 0
    buffer.withUnsafeBytes { raw in
        pattern.withUnsafeBytes { pat in
            var start = from
            while start + pattern.count <= limit {
                guard let hit = memchr(raw.baseAddress! + start, Int32(first), limit - pattern.count + 1 - start) else {
                    break
                }
                let at = raw.baseAddress!.distance(to: UnsafeRawPointer(hit))
                if memcmp(raw.baseAddress! + at, pat.baseAddress!, pattern.count) == 0 { n += 1 }
                start = at + 1
            }
        }
    }
    return n
}

@Suite("Process level", .serialized)
struct ProcessLevelTests {
    /// A marker password entered through the API must never be found in the
    /// helper's memory — while entered, after copy + reveal, after destroy —
    /// while a control marker in an ordinary array always is.
    @Test(arguments: [false, true])
    func memoryDumpFindsNoMarker(secretMemoryDisabled: Bool) throws {
        let seed = UInt64.random(in: 1...UInt64.max / 2)
        let helper = try Helper(["dump", String(seed)] + (secretMemoryDisabled ? ["--no-secretmem"] : []))
        let patterns = markerEncodings(seed: seed)
        let control = markerEncodings(seed: seed &+ 1)[0]
        for phase in 1...3 {
            let line = try helper.readLine()
            #expect(line.hasPrefix("phase \(phase)"), "helper said: \(line)")
            let scan = try scanMemory(pid: helper.process.pid, patterns: patterns + [control])
            #expect(scan.bytesRead > 1_000_000, "the scan must actually read the process")
            #expect(scan.hits[0] == 0, "UTF-8 marker found in phase \(phase)")
            #expect(scan.hits[1] == 0, "UTF-16LE marker found in phase \(phase)")
            #expect(scan.hits[2] == 0, "UTF-32LE marker found in phase \(phase)")
            #expect(scan.hits[3] > 0, "the control marker must be found, or the scan proves nothing")
            try helper.next()
        }
        #expect(try helper.finish() == .exited(0))
    }

    /// 1,000 live passwords under a 64 KiB memlock limit, as an unprivileged
    /// user: all work, and the report says which are locked.
    @Test func thousandPasswordsUnderLowMemlock() throws {
        let source = try helperPath()
        // Root ignores RLIMIT_MEMLOCK (CAP_IPC_LOCK): drop to nobody, from a
        // copy of the helper that nobody can execute.
        var wrapper = ["/usr/bin/prlimit", "--memlock=65536:65536"]
        var executable = source
        if geteuid() == 0 {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("spc-memlock-\(getpid())")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            executable = dir.appendingPathComponent("spc-test-helper").path
            // Copied by another process: if this process held the copy open for writing, a fork by a
            // test running in parallel could inherit that descriptor and make the exec fail with
            // "Text file busy" until the child execs.
            let copy = try ChildProcess.run("/bin/cp", [source, executable], standardOutput: .inherit)
            #expect(copy.termination == .exited(0), "cp of the helper failed")
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: dir.path)
            wrapper = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] + wrapper
            let helper = try Helper(["many", "1000"], executable: executable, wrapper: wrapper)
            try check(helper)
        } else {
            let helper = try Helper(["many", "1000"], executable: executable, wrapper: wrapper)
            try check(helper)
        }

        func check(_ helper: Helper) throws {
            let line = try helper.readLine()
            let fields = Dictionary(
                uniqueKeysWithValues: line.split(separator: " ").compactMap { pair -> (String, Int)? in
                    let kv = pair.split(separator: "=")
                    return kv.count == 2 ? (String(kv[0]), Int(kv[1]) ?? -1) : nil
                })
            #expect(fields["created"] == 1000, "helper said: \(line)")
            #expect(fields["ok"] == 1000)
            let locked = fields["locked"] ?? -1
            #expect(locked > 0, "the budget that exists must be used")
            #expect(locked < 1000, "a 64 KiB budget cannot lock 1,000 passwords")
            #expect(locked + (fields["unlocked"] ?? -1) == 1000)
            #expect((fields["locked_bytes"] ?? Int.max) <= 65536)
            #expect(try helper.finish() == .exited(0))
        }
    }
}
