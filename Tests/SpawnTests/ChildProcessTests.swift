import Foundation
import Spawn
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The text of `bytes`.
func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

/// A scratch directory of this test process, removed by the caller.
func scratchDirectory() throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("spawn-test-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    return path
}

@Suite("ChildProcess: posix_spawn, waitpid, pipes")
struct ChildProcessTests {
    @Test("the exit status is reported as exited, with its value")
    func exitStatus() throws {
        #expect(try ChildProcess.run("/bin/sh", ["-c", "exit 0"]).termination == .exited(0))
        let three = try ChildProcess.run("/bin/sh", ["-c", "exit 3"]).termination
        #expect(three == .exited(3))
        #expect(three.exitStatus == 3 && three.signal == nil)
    }

    @Test("a death by signal is reported as signaled, with the signal, never as an exit status")
    func signalDeath() throws {
        let killed = try ChildProcess.run("/bin/sh", ["-c", "kill -SEGV $$"]).termination
        #expect(killed == .signaled(SIGSEGV))
        #expect(killed.signal == SIGSEGV && killed.exitStatus == nil)
    }

    @Test("standard output is captured through a pipe; argv[0] is the executable, the arguments follow")
    func standardOutputCaptured() throws {
        let finished = try ChildProcess.run("/bin/cat", ["/proc/self/cmdline"])
        #expect(text(finished.output) == "/bin/cat\u{0}/proc/self/cmdline\u{0}")
        #expect(finished.termination == .exited(0))
        let words = try ChildProcess.run("/bin/sh", ["-c", "printf '%s|%s' \"$0\" \"$1\"", "one", "two words"])
        #expect(text(words.output) == "one|two words")
    }

    @Test("standard output larger than a pipe's buffer is read to end of file without a deadlock")
    func largeOutput() throws {
        let finished = try ChildProcess.run("/usr/bin/head", ["-c", "1000000", "/dev/zero"])
        #expect(finished.output.count == 1_000_000)
        #expect(finished.output.allSatisfy { $0 == 0 })
    }

    @Test("standard input comes from a pipe the parent writes and closes")
    func standardInputFromPipe() throws {
        let child = try ChildProcess(executable: "/bin/cat", standardInput: .pipe, standardOutput: .pipe)
        let input = try #require(child.standardInput)
        try input.write("first line\n")
        try input.write(Array("second".utf8))
        input.close()
        #expect(text(try #require(child.standardOutput).readToEnd()) == "first line\nsecond")
        #expect(try child.wait() == .exited(0))
    }

    @Test("standard error goes to the output pipe with .standardOutput, and files work both ways")
    func redirections() throws {
        let merged = try ChildProcess.run(
            "/bin/sh", ["-c", "echo out; echo err >&2"], standardError: .standardOutput)
        #expect(text(merged.output) == "out\nerr\n")
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let written = try ChildProcess.run(
            "/bin/sh", ["-c", "echo to-file"], standardOutput: .file(directory + "/out"))
        #expect(written.output.isEmpty && written.termination == .exited(0))
        #expect(try String(contentsOfFile: directory + "/out", encoding: .utf8) == "to-file\n")
        var info = stat()
        #expect(stat(directory + "/out", &info) == 0 && info.st_mode & 0o777 == 0o600)
        let read = try ChildProcess.run("/bin/cat", standardInput: .file(directory + "/out"))
        #expect(text(read.output) == "to-file\n")
        let discarded = try ChildProcess.run("/bin/cat", standardInput: .nullDevice)
        #expect(discarded.output.isEmpty && discarded.termination == .exited(0))
    }

    @Test("the environment given is the child's whole environment; nil passes the parent's")
    func environment() throws {
        let given = try ChildProcess.run("/usr/bin/env", environment: ["SPAWN_TEST_A": "one", "SPAWN_TEST_B": "x=y"])
        #expect(Set(text(given.output).split(separator: "\n")) == ["SPAWN_TEST_A=one", "SPAWN_TEST_B=x=y"])
        let inherited = try ChildProcess.run("/bin/sh", ["-c", "printf %s \"$PATH\""])
        #expect(text(inherited.output) == (ProcessInfo.processInfo.environment["PATH"] ?? ""))
        let merged = try ChildProcess.run(
            "/bin/sh", ["-c", "printf '%s %s' \"$PATH\" \"$SPAWN_TEST_C\""],
            environment: ChildProcess.inheritedEnvironment.merging(["SPAWN_TEST_C": "three"]) { $1 })
        #expect(text(merged.output) == (ProcessInfo.processInfo.environment["PATH"] ?? "") + " three")
    }

    @Test("the working directory is the one given")
    func workingDirectory() throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let finished = try ChildProcess.run("/bin/sh", ["-c", "pwd -P"], workingDirectory: directory)
        let resolved = URL(fileURLWithPath: directory).resolvingSymlinksInPath().path
        #expect(text(finished.output) == resolved + "\n")
    }

    @Test("kill sends the signal; once the child is reaped it sends nothing")
    func kill() throws {
        let child = try ChildProcess(executable: "/bin/sleep", arguments: ["30"], standardInput: .nullDevice)
        #expect(child.isRunning)
        #expect(try child.kill(SIGTERM))
        #expect(try child.wait() == .signaled(SIGTERM))
        #expect(child.termination == .signaled(SIGTERM))
        #expect(!child.isRunning)
        #expect(try child.kill(SIGKILL) == false, "a reaped child's number may belong to another process")
        #expect(try child.wait() == .signaled(SIGTERM), "a second wait returns the same end")
    }

    @Test("wait with a timeout returns nil while the child runs, and its end once it has ended")
    func waitWithTimeout() throws {
        let child = try ChildProcess(executable: "/bin/sleep", arguments: ["30"], standardInput: .nullDevice)
        #expect(try child.wait(timeout: .milliseconds(100)) == nil)
        #expect(try child.poll() == nil)
        #expect(child.termination == nil)
        try child.kill(SIGKILL)
        #expect(try child.wait(timeout: .seconds(30)) == .signaled(SIGKILL))
        let quick = try ChildProcess(executable: "/bin/sh", arguments: ["-c", "exit 7"], standardInput: .nullDevice)
        #expect(try quick.wait(timeout: .seconds(30)) == .exited(7))
    }

    @Test("two threads waiting for the same child both get its end")
    func concurrentWaits() async throws {
        let child = try ChildProcess(
            executable: "/bin/sh", arguments: ["-c", "sleep 0.3; exit 4"], standardInput: .nullDevice)
        let ends = await withTaskGroup(of: ChildProcess.Termination?.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    await withCheckedContinuation { continuation in
                        Thread { continuation.resume(returning: try? child.wait()) }.start()
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(ends == [.exited(4), .exited(4)])
    }

    @Test("a missing or non-executable program is a typed error naming the step, the errno and the program")
    func missingExecutable() throws {
        let missing = "/nonexistent/spawn-test-program"
        #expect(throws: SpawnError(.spawn, code: ENOENT, executable: missing)) {
            try ChildProcess(executable: missing)
        }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let plain = directory + "/not-executable"
        #expect(FileManager.default.createFile(atPath: plain, contents: Data("#!/bin/sh\n".utf8)))
        #expect(throws: SpawnError(.spawn, code: EACCES, executable: plain)) {
            try ChildProcess(executable: plain, standardInput: .pipe, standardOutput: .pipe)
        }
        do {
            _ = try ChildProcess.run(missing)
            Issue.record("a missing program started")
        } catch {
            #expect(error.operation == .spawn && error.code == ENOENT)
            #expect(error.description.contains(missing))
        }
    }

    @Test("a child sees only 0, 1 and 2 (and its own), and our pipe ends are close-on-exec")
    func noDescriptorLeaks() throws {
        // A descriptor of this process without close-on-exec, and another child's open pipes.
        let plain = open("/dev/null", O_RDONLY)
        #expect(plain > 2)
        defer { close(plain) }
        let other = try ChildProcess(executable: "/bin/cat", standardInput: .pipe, standardOutput: .pipe)
        let input = try #require(other.standardInput)
        let output = try #require(other.standardOutput)
        for fd in [input.fileDescriptor, output.fileDescriptor] {
            #expect(fd > 2)
            #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0, "pipe end \(fd) is not close-on-exec")
        }
        // ls opens the directory it lists: one descriptor of its own, the lowest free one.
        let listing = try ChildProcess.run("/bin/ls", ["/proc/self/fd"], standardError: .standardOutput)
        #expect(listing.termination == .exited(0))
        #expect(text(listing.output).split(separator: "\n") == ["0", "1", "2", "3"], "\(text(listing.output))")
        // The other child still gets end of file: nothing else holds its input open.
        input.close()
        #expect(try output.readToEnd().isEmpty)
        #expect(try other.wait() == .exited(0))
    }

    @Test("the child starts with no signal blocked or ignored, whatever the parent blocked or ignored")
    func cleanSignalState() throws {
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGTERM)
        sigaddset(&blocked, SIGUSR1)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        // Nothing sends SIGUSR2 to the test process; ignoring it for a moment is harmless.
        let handler = signal(SIGUSR2, SIG_IGN)
        defer { signal(SIGUSR2, handler) }
        let finished = try ChildProcess.run("/bin/grep", ["-E", "^Sig(Blk|Ign):", "/proc/self/status"])
        let fields = Dictionary(
            uniqueKeysWithValues: text(finished.output).split(separator: "\n").map { line in
                let parts = line.split(separator: ":")
                return (String(parts[0]), UInt64(parts[1].trimmingCharacters(in: .whitespaces), radix: 16))
            })
        // Signals 1 to 31 are bits 0 to 30 (glibc keeps 32 and 33 for itself).
        let classic: UInt64 = 0x7fff_ffff
        #expect(fields["SigBlk"].flatMap { $0 }.map { $0 & classic } == 0, "\(text(finished.output))")
        #expect(fields["SigIgn"].flatMap { $0 }.map { $0 & classic } == 0, "\(text(finished.output))")
        let sleeper = try ChildProcess(executable: "/bin/sleep", arguments: ["30"], standardInput: .nullDevice)
        try sleeper.kill(SIGTERM)
        #expect(try sleeper.wait(timeout: .seconds(30)) == .signaled(SIGTERM))
    }

    @Test("writing to a child that has gone is EPIPE, and the parent survives the SIGPIPE")
    func brokenPipe() throws {
        let child = try ChildProcess(executable: "/bin/true", standardInput: .pipe, standardOutput: .nullDevice)
        #expect(try child.wait() == .exited(0))
        let input = try #require(child.standardInput)
        #expect(throws: SpawnError(.write, code: EPIPE, executable: "/bin/true")) {
            try input.write(Array(repeating: 0x61, count: 100_000))
        }
        var pending = sigset_t()
        sigpending(&pending)
        #expect(sigismember(&pending, SIGPIPE) == 0, "the SIGPIPE was left pending")
        input.close()
        #expect(throws: SpawnError(.write, code: EBADF, executable: "/bin/true")) { try input.write("x") }
    }

    @Test("run refuses pipes nobody would serve")
    func runRefusesUnservedPipes() {
        #expect(throws: SpawnError(.spawn, code: EINVAL, executable: "/bin/true")) {
            try ChildProcess.run("/bin/true", standardError: .pipe)
        }
        #expect(throws: SpawnError(.spawn, code: EINVAL, executable: "/bin/true")) {
            try ChildProcess.run("/bin/true", standardInput: .pipe)
        }
        #expect(throws: SpawnError(.spawn, code: EINVAL, executable: "/bin/true")) {
            try ChildProcess(executable: "/bin/true", standardOutput: .standardOutput)
        }
    }
}
