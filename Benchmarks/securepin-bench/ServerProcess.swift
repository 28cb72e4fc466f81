import Dispatch
import Foundation
import Spawn
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One `securepin server` child process of the bench, as an operator runs it: `--port 0`, the
/// store's options, the admin token from a file, the access log to `/dev/null`, and a ready
/// file the bench waits for and reads the port from.
///
/// Stopped with SIGTERM (the graceful stop), SIGKILL when it has not exited after a timeout;
/// ``stop(timeout:)`` is safe to call more than once, so every error path can call it.
final class ServerProcess {
    struct Failed: Error, CustomStringConvertible {
        var description: String
    }

    private let process: ChildProcess
    private(set) var port: UInt16 = 0
    private let readyFile: String

    /// Every child still running, so that an interrupted bench (SIGINT, SIGTERM) stops them too.
    static let running = Mutex<Set<Int32>>([])
    /// Scratch directories (they hold the admin token and DSN files) that an interrupted bench removes.
    static let scratch = Mutex<Set<String>>([])

    /// Starts `executable server --port 0 STORE… --admin-token-file T --log-file /dev/null
    /// --ready-file R` and waits (at most `timeout` seconds) until the ready file holds the port.
    /// - Throws: ``Failed`` when it cannot start, exits first or does not become ready in time
    ///   (then it is killed).
    init(executable: String, storeArguments: [String], tokenFile: String, readyFile: String, timeout: Double = 60)
        throws(Failed)
    {
        self.readyFile = readyFile
        unlink(readyFile)
        do {
            // Its announcements would mix with the bench's output (and break --json); errors still show.
            process = try ChildProcess(
                executable: executable,
                arguments: ["server", "--port", "0"] + storeArguments
                    + ["--admin-token-file", tokenFile, "--log-file", "/dev/null", "--ready-file", readyFile],
                standardInput: .nullDevice, standardOutput: .nullDevice, standardError: .inherit)
        } catch {
            throw Failed(description: "cannot start securepin server: \(error)")
        }
        Self.running.withLock { _ = $0.insert(process.pid) }
        let deadline = now() + UInt64(timeout * 1e9)
        while now() < deadline {
            if let text = try? String(contentsOfFile: readyFile, encoding: .utf8),
                let value = UInt16(text.trimmingCharacters(in: .whitespacesAndNewlines)), value > 0
            {
                port = value
                return
            }
            guard process.isRunning else {
                stop()
                throw Failed(
                    description:
                        "securepin server ended (\(termination.map { "\($0)" } ?? "unknown")) before it was ready")
            }
            usleep(10_000)
        }
        stop(timeout: 0)
        throw Failed(description: "securepin server was not ready after \(Int(timeout)) s")
    }

    var pid: Int32 { process.pid }

    /// How the child ended, once ``stop(timeout:)`` (or a failed start) has seen it end.
    var termination: ChildProcess.Termination? { process.termination }

    /// User and system CPU time of the child so far (all its threads), from `/proc/PID/stat`.
    func cpuNanoseconds() -> UInt64? { Self.cpuNanoseconds(pid: pid) }

    /// User and system CPU time of process `pid` (all its threads), from `/proc/PID/stat`.
    static func cpuNanoseconds(pid: Int32) -> UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm) ": state is field 3, utime field 14, stime field 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = UInt64(fields[11]), let system = UInt64(fields[12]) else { return nil }
        let ticks = UInt64(max(1, sysconf(Int32(_SC_CLK_TCK))))
        return (user + system) * 1_000_000_000 / ticks
    }

    /// SIGTERM, then waits up to `timeout` seconds for the exit; SIGKILL after that.
    func stop(timeout: Double = 10) {
        defer {
            Self.running.withLock { _ = $0.remove(process.pid) }
            unlink(readyFile)
        }
        guard process.isRunning else { return }
        _ = try? process.kill(SIGTERM)
        if (try? process.wait(timeout: .milliseconds(Int64(timeout * 1000)))) == nil {
            _ = try? process.kill(SIGKILL)
            _ = try? process.wait()
        }
    }

    /// Makes SIGINT and SIGTERM kill every running child and remove the scratch directories
    /// before the bench exits (a child outliving the bench would keep its port and, on
    /// PostgreSQL, its connections; a directory would keep the token and DSN files).
    static func stopChildrenOnSignals() -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                let children = running.withLock { $0 }
                for child in children { kill(child, SIGKILL) }
                for child in children { waitpid(child, nil, 0) }
                for directory in scratch.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: directory) }
                exit(128 + number)
            }
            source.resume()
            return source
        }
    }
}
