import Foundation
import SQLiteStore
import Spawn
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Locates an executable built beside this test bundle.
func builtExecutable(_ name: String) throws -> String { try BuiltExecutable.path(name) }

enum CrashTestFailure: Error { case helperMissing(String), helperSaid(String), neverReady }

/// Collects the helper's stdout lines from a background reader.
final class LineCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var buffer: [UInt8] = []
    func append(_ bytes: [UInt8]) { lock.withLock { buffer += bytes } }
    /// Complete lines only: a line without its newline was cut by the kill.
    var lines: [String] {
        lock.withLock {
            guard let last = buffer.lastIndex(of: 10) else { return [] }
            return String(decoding: buffer[..<last], as: UTF8.self).split(separator: "\n").map(String.init)
        }
    }
}

@Suite("SQLite under kill -9")
struct CrashTests {
    @Test("a child killed at a random instant leaves a sound file holding its last commit", arguments: 0..<5)
    func killNine(trial: Int) async throws {
        let scratch = try Scratch()
        let path = scratch.path()
        let executable = try builtExecutable("sqlite-crash-helper")
        let (collector, termination) = try await offPool { () throws -> (LineCollector, ChildProcess.Termination) in
            try Self.runAndKill(executable, path)
        }
        #expect(termination.signal != nil, "expected a death by signal, got \(termination)")

        let lines = collector.lines.filter { $0 != "ready" }
        if let error = lines.first(where: { $0.hasPrefix("error") }) { throw CrashTestFailure.helperSaid(error) }
        let reported = lines.compactMap { Int64($0) }
        #expect(reported == Array(1...Int64(reported.count)), "the child reported each commit in order")
        let last = reported.last ?? 0

        let db = try SQLiteDatabase(path: path)
        #expect(try db.integrityCheck() == ["ok"])
        let counter = try #require(try db.query("SELECT value FROM counter")[0][0].int64)
        // One commit more than reported is legitimate, and common: the kill can land after the
        // commit's WAL frames were written to the kernel (while COMMIT waits in fsync, or after it
        // returned but before the report's write). A killed process loses nothing the kernel holds,
        // so that transaction is in the file whole. Never fewer, and never a torn transaction.
        #expect(counter == last || counter == last + 1, "counter \(counter), last reported \(last)")
        #expect(
            try db.query("SELECT count(*), coalesce(max(value), 0) FROM log")[0].values == [
                .integer(counter), .integer(counter),
            ])
        print("kill -9 trial \(trial): \(reported.count) commits reported, file holds \(counter)")
    }

    /// Starts the helper, waits for it to be ready, kills it 100–400 ms later, collects its output
    /// (read on a thread of its own until end of file, which the kill brings).
    private static func runAndKill(_ executable: String, _ path: String) throws -> (
        LineCollector, ChildProcess.Termination
    ) {
        let child = try ChildProcess(
            executable: executable, arguments: [path], standardInput: .nullDevice, standardOutput: .pipe)
        let output = try #require(child.standardOutput)
        let collector = LineCollector()
        let drained = DispatchSemaphore(value: 0)
        Thread {
            while let chunk = try? output.read(), !chunk.isEmpty { collector.append(chunk) }
            drained.signal()
        }.start()
        let deadline = ContinuousClock.now + .seconds(20)
        while !collector.lines.contains("ready") {
            guard ContinuousClock.now < deadline, child.isRunning else {
                _ = try? child.kill(SIGKILL)
                _ = try? child.wait()
                drained.wait()
                throw CrashTestFailure.neverReady
            }
            usleep(2_000)
        }
        usleep(UInt32.random(in: 100_000...400_000))
        try child.kill(SIGKILL)
        let termination = try child.wait()
        drained.wait()
        return (collector, termination)
    }
}
