import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The demo's scratch directory: made with `mkdtemp` (mode 0700, a name
/// nobody could predict or prepare), and removed when the demo ends or is
/// interrupted.
enum DemoDirectory {
    /// Child processes to stop before the directory goes (the reference server).
    static let children = Mutex<[pid_t]>([])

    /// The directory could not be made.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Makes `$TMPDIR/securepin-demo-XXXXXX` (or under `/tmp`).
    /// - Returns: its path.
    static func make() throws -> String {
        let parent = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((parent + "/securepin-demo-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else {
            throw Failure(
                description: "cannot create a scratch directory in \(parent): \(String(cString: strerror(errno)))"
                    + " (set TMPDIR to a writable directory)")
        }
        return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Removes `path` and exits 130 (128 + SIGINT) or 143 (SIGTERM) when one of those signals
    /// arrives; cancel the returned sources to restore the default handling.
    /// - Parameter path: the scratch directory.
    /// - Returns: a handle whose `cancel()` stops watching.
    static func removeOnSignal(_ path: String) -> SignalCleanup {
        var sources: [any DispatchSourceSignal] = []
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                for child in children.withLock({ $0 }) { kill(child, SIGTERM) }
                // The demo's other threads keep running until _exit: one may create a temporary file
                // while the tree is being removed (then the removal fails on a non-empty directory).
                // Remove until the path is gone; a writer cannot create anything in a directory
                // that no longer exists, so this ends after a pass or two. A server child still
                // shutting down (slow on a loaded machine) may write its database files meanwhile:
                // after 3 s it is killed, and the whole wait is bounded at 10 s.
                for attempt in 0..<1000 {
                    try? FileManager.default.removeItem(atPath: path)
                    if access(path, F_OK) != 0 { break }
                    if attempt == 300 { for child in children.withLock({ $0 }) { kill(child, SIGKILL) } }
                    usleep(10_000)
                }
                FileHandle.standardError.write(Data("\nsecurepin: demo: interrupted; removed \(path)\n".utf8))
                // _exit, not exit: other threads are mid-step, and running atexit handlers and
                // static destructors under them can crash instead of exiting.
                fflush(nil)
                _exit(128 + signalNumber)
            }
            source.resume()
            sources.append(source)
        }
        return SignalCleanup(sources: sources)
    }

    /// The signal watchers of ``removeOnSignal(_:)``.
    struct SignalCleanup {
        let sources: [any DispatchSourceSignal]

        /// Stops watching and restores the default action of SIGINT and SIGTERM.
        func cancel() {
            for source in sources { source.cancel() }
            signal(SIGINT, SIG_DFL)
            signal(SIGTERM, SIG_DFL)
        }
    }
}
