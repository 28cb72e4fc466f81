internal import CSpawn
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A child process started with `posix_spawn` and waited for with `waitid`/`waitpid`.
///
/// It replaces Foundation's `Process`, whose `run()` can crash while it looks for the highest open
/// descriptor, and whose `waitUntilExit()` does not always return under the test runner. The child:
/// - gets `argv[0]` = the executable's path, then `arguments`;
/// - gets each standard descriptor from the parent (`inherit`), `/dev/null`, a new pipe or a file;
///   every other descriptor is closed in it (a descriptor of the parent never leaks into it);
/// - starts with no signal blocked and every signal at its default action, whatever the spawning
///   thread blocked or ignored (a test thread's blocked SIGTERM would make a server unstoppable).
///
/// The parent's pipe ends (``standardInput``, ``standardOutput``, ``standardError``) are
/// close-on-exec from their creation, so no other child, started by any thread, inherits them.
///
/// The child is reaped only under a lock that ``kill(_:)`` takes too, so a signal never reaches a
/// process that reused the number after the child was reaped. Release a child only after waiting
/// for it: one never waited for stays a zombie until the parent exits.
///
/// Nothing secret may pass through it: arguments and environment are plain strings, visible to every
/// local user in `/proc`. Pass secrets as files.
public final class ChildProcess: Sendable {
    /// Where the child's standard input comes from.
    public enum Input: Equatable, Sendable {
        /// The parent's own standard input.
        case inherit
        /// `/dev/null`: the child reads end of file at once.
        case nullDevice
        /// A new pipe; the parent writes through ``ChildProcess/standardInput``.
        case pipe
        /// The file at this path, opened for reading.
        case file(String)
    }

    /// Where the child's standard output or standard error goes.
    public enum Output: Equatable, Sendable {
        /// The parent's own descriptor.
        case inherit
        /// `/dev/null`.
        case nullDevice
        /// A new pipe; the parent reads through ``ChildProcess/standardOutput`` or
        /// ``ChildProcess/standardError``.
        case pipe
        /// The file at this path, created (mode 0600) or truncated.
        case file(String)
        /// Wherever standard output goes (`2>&1`); for standard error only.
        case standardOutput
    }

    /// How the child ended.
    public enum Termination: Equatable, Hashable, Sendable, CustomStringConvertible {
        /// It called `exit` (or returned from `main`) with this status (0 to 255).
        case exited(Int32)
        /// A signal ended it (SIGKILL, SIGSEGV, …).
        case signaled(Int32)

        /// The exit status, or `nil` when a signal ended it.
        public var exitStatus: Int32? {
            if case .exited(let status) = self { return status }
            return nil
        }

        /// The signal that ended it, or `nil` when it exited.
        public var signal: Int32? {
            if case .signaled(let number) = self { return number }
            return nil
        }

        /// `exit 0`, `signal 9`.
        public var description: String {
            switch self {
            case .exited(let status): "exit \(status)"
            case .signaled(let number): "signal \(number)"
            }
        }

        /// Decodes a `waitpid` status of a child that ended (never a stopped one: no `WUNTRACED`).
        init(waitStatus status: Int32) {
            let low = status & 0x7f
            self = low == 0 ? .exited((status >> 8) & 0xff) : .signaled(low)
        }
    }

    /// The child's process id.
    public let pid: Int32
    /// The program it runs.
    public let executable: String
    /// The pipe to its standard input, when started with ``Input/pipe``.
    public let standardInput: PipeWriter?
    /// The pipe from its standard output, when started with ``Output/pipe``.
    public let standardOutput: PipeReader?
    /// The pipe from its standard error, when started with ``Output/pipe``.
    public let standardError: PipeReader?
    private let ended = Mutex<Termination?>(nil)

    /// Starts `executable` with `arguments`.
    /// - Parameters:
    ///   - executable: the program's path (not searched on `PATH`; use `/usr/bin/env` for that).
    ///   - arguments: its arguments, after `argv[0]`.
    ///   - environment: its whole environment; `nil` passes the parent's.
    ///   - workingDirectory: where it starts; `nil` for the parent's.
    ///   - standardInput: where its standard input comes from.
    ///   - standardOutput: where its standard output goes (not ``Output/standardOutput``).
    ///   - standardError: where its standard error goes.
    /// - Throws: ``SpawnError``: `pipe` when a pipe cannot be made, `spawn` when the program cannot
    ///   be started (`ENOENT` for a missing one, `EACCES` for one not executable, `EINVAL` for standard
    ///   output sent to itself), or whatever opening a redirection file in the child failed with.
    public init(
        executable: String, arguments: [String] = [], environment: [String: String]? = nil,
        workingDirectory: String? = nil, standardInput: Input = .inherit, standardOutput: Output = .inherit,
        standardError: Output = .inherit
    ) throws(SpawnError) {
        guard standardOutput != .standardOutput else {
            throw SpawnError(.spawn, code: EINVAL, executable: executable)
        }
        // Each pipe: (the parent's end, the child's end). The child's end is closed in the parent
        // once the child has its copy; everything is closed if the start fails.
        var childEnds: [Int32] = []
        var parentEnds: [Int32] = []
        defer { for fd in childEnds { close(fd) } }
        func pipeFor(input: Bool) throws(SpawnError) -> (parent: Int32, child: Int32) {
            let ends = try makePipe(executable: executable)
            let pair = input ? (parent: ends.write, child: ends.read) : (parent: ends.read, child: ends.write)
            parentEnds.append(pair.parent)
            childEnds.append(pair.child)
            return pair
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }

        var inputEnd: Int32 = -1
        var outputEnd: Int32 = -1
        var errorEnd: Int32 = -1
        var status: Int32 = 0
        do throws(SpawnError) {
            switch standardInput {
            case .inherit: break
            case .nullDevice: status = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            case .file(let path): status = posix_spawn_file_actions_addopen(&actions, 0, path, O_RDONLY, 0)
            case .pipe:
                let ends = try pipeFor(input: true)
                inputEnd = ends.parent
                status = posix_spawn_file_actions_adddup2(&actions, ends.child, 0)
            }
            for (target, output) in [(Int32(1), standardOutput), (Int32(2), standardError)] where status == 0 {
                switch output {
                case .inherit: break
                case .nullDevice:
                    status = posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
                case .file(let path):
                    status = posix_spawn_file_actions_addopen(
                        &actions, target, path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
                case .standardOutput: status = posix_spawn_file_actions_adddup2(&actions, 1, target)
                case .pipe:
                    let ends = try pipeFor(input: false)
                    if target == 1 { outputEnd = ends.parent } else { errorEnd = ends.parent }
                    status = posix_spawn_file_actions_adddup2(&actions, ends.child, target)
                }
            }
            // Every other descriptor: our pipe ends are close-on-exec anyway, this catches those of
            // code that did not ask for it.
            if status == 0 {
                status = spawn_shim_addclosefrom(&actions, 3)
                if status == ENOSYS { status = 0 }  // no such file action here: close-on-exec only
            }
            if status == 0, let workingDirectory { status = spawn_shim_addchdir(&actions, workingDirectory) }

            var noSignals = sigset_t()
            sigemptyset(&noSignals)
            var allSignals = sigset_t()
            sigfillset(&allSignals)
            if status == 0 { status = posix_spawnattr_setsigmask(&attributes, &noSignals) }
            if status == 0 { status = posix_spawnattr_setsigdefault(&attributes, &allSignals) }
            if status == 0 {
                status = posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
            }
            guard status == 0 else { throw SpawnError(.spawn, code: status, executable: executable) }

            let argv = ([executable] + arguments).map { strdup($0) } + [nil]
            defer { for argument in argv { free(argument) } }
            var child: pid_t = 0
            if let environment {
                let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
                defer { for entry in envp { free(entry) } }
                status = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
            } else {
                status = posix_spawn(&child, executable, &actions, &attributes, argv, spawn_shim_environ())
            }
            guard status == 0 else { throw SpawnError(.spawn, code: status, executable: executable) }
            pid = child
        } catch {
            for fd in parentEnds { close(fd) }
            throw error
        }
        self.executable = executable
        self.standardInput = inputEnd >= 0 ? PipeWriter(descriptor: inputEnd, executable: executable) : nil
        self.standardOutput = outputEnd >= 0 ? PipeReader(descriptor: outputEnd, executable: executable) : nil
        self.standardError = errorEnd >= 0 ? PipeReader(descriptor: errorEnd, executable: executable) : nil
    }

    /// How it ended, if a wait or ``poll()`` has seen it end; `nil` while that has not happened.
    public var termination: Termination? { ended.withLock { $0 } }

    /// Whether it is still running (reaps it if it has ended). A failed check counts as ended.
    public var isRunning: Bool {
        do { return try poll() == nil } catch { return false }
    }

    /// Reaps the child if it has ended, without blocking.
    /// - Returns: how it ended, or `nil` while it runs.
    /// - Throws: ``SpawnError`` (`wait`; `ECHILD` if something else reaped it).
    public func poll() throws(SpawnError) -> Termination? {
        let pid = pid
        let executable = executable
        return try ended.withLock { (ended) throws(SpawnError) -> Termination? in
            if let ended { return ended }
            var status: Int32 = 0
            while true {
                let reaped = waitpid(pid, &status, WNOHANG)
                if reaped == pid {
                    ended = Termination(waitStatus: status)
                    return ended
                }
                if reaped == 0 { return nil }
                if errno != EINTR { throw SpawnError(.wait, code: errno, executable: executable) }
            }
        }
    }

    /// Blocks until the child ends (interrupted waits are resumed).
    /// - Returns: how it ended.
    /// - Throws: ``SpawnError`` (`wait`).
    @discardableResult
    public func wait() throws(SpawnError) -> Termination {
        while true {
            if let done = try poll() { return done }
            // Waits for the end without reaping (WNOWAIT): only `poll` reaps, under the lock.
            var info = siginfo_t()
            if waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 {
                let failure = errno
                if failure == EINTR { continue }
                // Another thread's poll reaped it between our poll and our waitid.
                if failure == ECHILD, let done = termination { return done }
                throw SpawnError(.wait, code: failure, executable: executable)
            }
        }
    }

    /// Waits at most `timeout` for the child to end, polling (1 ms at first, then up to 20 ms).
    /// - Parameter timeout: how long to wait.
    /// - Returns: how it ended, or `nil` if it still runs after `timeout`.
    /// - Throws: ``SpawnError`` (`wait`).
    public func wait(timeout: Duration) throws(SpawnError) -> Termination? {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var pause: UInt32 = 1_000
        while true {
            if let done = try poll() { return done }
            if clock.now >= deadline { return nil }
            usleep(pause)
            pause = min(pause * 2, 20_000)
        }
    }

    /// Sends `signal` to the child, unless it has already been reaped.
    /// - Parameter signal: the signal (SIGTERM, SIGKILL, SIGHUP, …).
    /// - Returns: whether it was sent (`false`: the child had already ended and been reaped).
    /// - Throws: ``SpawnError`` (`signal`).
    @discardableResult
    public func kill(_ signal: Int32) throws(SpawnError) -> Bool {
        let pid = pid
        let executable = executable
        return try ended.withLock { (ended) throws(SpawnError) -> Bool in
            guard ended == nil else { return false }
            if sendSignal(pid, signal) == 0 { return true }
            throw SpawnError(.signal, code: errno, executable: executable)
        }
    }

    /// What ``run(_:_:environment:workingDirectory:standardInput:standardOutput:standardError:)``
    /// returns.
    public struct Finished: Equatable, Sendable {
        /// How the child ended.
        public var termination: Termination
        /// Its standard output (and standard error with ``Output/standardOutput``) when that
        /// went to ``Output/pipe``; empty otherwise.
        public var output: [UInt8]
    }

    /// Runs `executable` to the end: reads its standard output to end of file when that is a
    /// pipe, then waits for it.
    /// - Parameters:
    ///   - executable: the program's path.
    ///   - arguments: its arguments.
    ///   - environment: its whole environment; `nil` passes the parent's.
    ///   - workingDirectory: where it starts; `nil` for the parent's.
    ///   - standardInput: where its standard input comes from (by default `/dev/null`).
    ///   - standardOutput: where its standard output goes (by default a pipe, returned).
    ///   - standardError: where its standard error goes (not a pipe of its own, which nobody would
    ///     read while the child may fill it: use ``Output/standardOutput`` to capture it).
    /// - Returns: how it ended, and its output.
    /// - Throws: ``SpawnError`` (`EINVAL` for ``Input/pipe`` or a standard-error pipe).
    public static func run(
        _ executable: String, _ arguments: [String] = [], environment: [String: String]? = nil,
        workingDirectory: String? = nil, standardInput: Input = .nullDevice, standardOutput: Output = .pipe,
        standardError: Output = .inherit
    ) throws(SpawnError) -> Finished {
        guard standardInput != .pipe, standardError != .pipe else {
            throw SpawnError(.spawn, code: EINVAL, executable: executable)
        }
        let child = try ChildProcess(
            executable: executable, arguments: arguments, environment: environment,
            workingDirectory: workingDirectory, standardInput: standardInput, standardOutput: standardOutput,
            standardError: standardError)
        var output: [UInt8] = []
        do throws(SpawnError) {
            output = try child.standardOutput?.readToEnd() ?? []
        } catch {
            _ = try? child.kill(SIGKILL)
            _ = try? child.wait()
            throw error
        }
        child.standardOutput?.close()
        return Finished(termination: try child.wait(), output: output)
    }

    /// The parent's environment, to extend for a child: `ChildProcess.inheritedEnvironment.merging(…)`.
    public static var inheritedEnvironment: [String: String] {
        var result: [String: String] = [:]
        guard var entry = spawn_shim_environ() else { return [:] }
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        return result
    }
}

/// `kill(2)`, out of reach inside ``ChildProcess`` whose method has the same name.
private func sendSignal(_ pid: Int32, _ signal: Int32) -> Int32 { kill(pid, signal) }
