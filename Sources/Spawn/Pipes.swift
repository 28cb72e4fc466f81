internal import CSpawn
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The parent's end of a pipe from a child's standard output or standard error.
///
/// The descriptor is close-on-exec, so no other child inherits it; it is closed by ``close()``
/// or when the reader is released. Reads and the close are serialised: a close waits for a read
/// in progress to return.
public final class PipeReader: Sendable {
    private let end: PipeEnd

    init(descriptor: Int32, executable: String) { end = PipeEnd(descriptor: descriptor, executable: executable) }

    /// The descriptor, or -1 once closed (for checks such as its close-on-exec flag).
    public var fileDescriptor: Int32 { end.fileDescriptor }

    /// Reads what is available, blocking until at least one byte is or the writer has gone.
    /// - Parameter count: the most bytes to return.
    /// - Returns: up to `count` bytes; empty at end of file (or after ``close()``).
    /// - Throws: ``SpawnError`` (`read`).
    public func read(upTo count: Int = 65_536) throws(SpawnError) -> [UInt8] {
        let executable = end.executable
        return try end.descriptor.withLock { (fd) throws(SpawnError) -> [UInt8] in
            guard fd >= 0 else { return [] }
            var failure: Int32 = 0
            let bytes = [UInt8](unsafeUninitializedCapacity: max(count, 1)) { buffer, initialized in
                while true {
                    let got = Glibc.read(fd, buffer.baseAddress, buffer.count)
                    if got >= 0 {
                        initialized = got
                        return
                    }
                    if errno != EINTR {
                        failure = errno
                        initialized = 0
                        return
                    }
                }
            }
            guard failure == 0 else { throw SpawnError(.read, code: failure, executable: executable) }
            return bytes
        }
    }

    /// Reads until end of file: until every process holding the write end (the child, and any
    /// child of its own that inherited it) has closed it or exited.
    /// - Returns: everything read.
    /// - Throws: ``SpawnError`` (`read`).
    public func readToEnd() throws(SpawnError) -> [UInt8] {
        var all: [UInt8] = []
        while true {
            let chunk = try read()
            if chunk.isEmpty { return all }
            all += chunk
        }
    }

    /// Closes the descriptor (idempotent). A child still writing then gets `EPIPE` or SIGPIPE.
    public func close() { end.close() }
}

/// The parent's end of a pipe to a child's standard input.
///
/// The descriptor is close-on-exec, so no other child inherits it. Close it (``close()``) when
/// everything is written: the child sees end of file only then.
public final class PipeWriter: Sendable {
    private let end: PipeEnd

    init(descriptor: Int32, executable: String) { end = PipeEnd(descriptor: descriptor, executable: executable) }

    /// The descriptor, or -1 once closed.
    public var fileDescriptor: Int32 { end.fileDescriptor }

    /// Writes all of `bytes`, blocking while the pipe is full.
    ///
    /// SIGPIPE is blocked in the calling thread for the write, and the one a closed pipe raises is
    /// consumed: a child that exited early is reported as `EPIPE`, and does not kill the parent.
    /// - Parameter bytes: what to write.
    /// - Throws: ``SpawnError`` (`write`; `EBADF` after ``close()``).
    public func write(_ bytes: [UInt8]) throws(SpawnError) {
        let executable = end.executable
        try end.descriptor.withLock { (fd) throws(SpawnError) in
            guard fd >= 0 else { throw SpawnError(.write, code: EBADF, executable: executable) }
            let failure = withSIGPIPEBlocked { () -> Int32 in
                bytes.withUnsafeBytes { raw -> Int32 in
                    var offset = 0
                    while offset < raw.count {
                        let wrote = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                        if wrote < 0 {
                            if errno == EINTR { continue }
                            return errno
                        }
                        offset += wrote
                    }
                    return 0
                }
            }
            guard failure == 0 else { throw SpawnError(.write, code: failure, executable: executable) }
        }
    }

    /// Writes `text` as UTF-8.
    /// - Parameter text: what to write (never a secret: it passes through a `String`).
    /// - Throws: ``SpawnError`` (`write`).
    public func write(_ text: String) throws(SpawnError) { try write(Array(text.utf8)) }

    /// Closes the descriptor (idempotent): the child reads end of file.
    public func close() { end.close() }
}

/// The parent's end of a pipe, either way: the descriptor under a lock (a close waits for a read
/// or write in progress), closed once, and closed when released.
private final class PipeEnd: Sendable {
    let descriptor: Mutex<Int32>
    let executable: String

    init(descriptor: Int32, executable: String) {
        self.descriptor = Mutex(descriptor)
        self.executable = executable
    }

    deinit { close() }

    var fileDescriptor: Int32 { descriptor.withLock { $0 } }

    func close() {
        descriptor.withLock { fd in
            if fd >= 0 { _ = Glibc.close(fd) }
            fd = -1
        }
    }
}

/// Runs `body` (which returns 0 or an error number) with SIGPIPE blocked in this thread; when it
/// failed with `EPIPE`, the SIGPIPE it raised is taken off the pending set before the mask returns.
private func withSIGPIPEBlocked(_ body: () -> Int32) -> Int32 {
    var pipeSignal = sigset_t()
    sigemptyset(&pipeSignal)
    sigaddset(&pipeSignal, SIGPIPE)
    var pending = sigset_t()
    sigpending(&pending)
    let alreadyPending = sigismember(&pending, SIGPIPE) == 1
    var previous = sigset_t()
    pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
    let result = body()
    if result == EPIPE && !alreadyPending {
        var now = timespec()
        while sigtimedwait(&pipeSignal, nil, &now) < 0 && errno == EINTR {}
    }
    pthread_sigmask(SIG_SETMASK, &previous, nil)
    return result
}

/// A pipe whose ends are both close-on-exec (`pipe2(O_CLOEXEC)`) and above 2, so that a file
/// action for one standard descriptor cannot overwrite the end meant for another.
/// - Returns: (read end, write end).
func makePipe(executable: String) throws(SpawnError) -> (read: Int32, write: Int32) {
    var fds: [Int32] = [-1, -1]
    guard spawn_shim_pipe_cloexec(&fds) == 0 else { throw SpawnError(.pipe, code: errno, executable: executable) }
    for index in 0..<2 where fds[index] <= 2 {
        let moved = fcntl(fds[index], F_DUPFD_CLOEXEC, 3)
        let failure = errno
        Glibc.close(fds[index])
        fds[index] = moved
        guard moved >= 0 else {
            for fd in fds where fd >= 0 { Glibc.close(fd) }
            throw SpawnError(.pipe, code: failure, executable: executable)
        }
    }
    return (fds[0], fds[1])
}
