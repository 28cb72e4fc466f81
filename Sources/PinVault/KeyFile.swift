import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The vault's key file (`key`, 104 bytes): the magic, a record key and two
/// 32-byte halves. Every slot key, the vault file's MAC and the failure
/// record's MAC are derived from these bytes, and they are only ever
/// overwritten *in place* (`pwrite` and `fsync` on the same inode): when a
/// half is destroyed, every copy of a vault file bound to it — including the
/// copies a file system leaves in freed blocks after a rename — is useless,
/// even with the right PIN. Two halves let a PIN change write the new one
/// while the old vault file still needs the old one.
struct KeyFile {
    static let name = "key"
    static let magic: [UInt8] = Array("SPCKEY02".utf8)
    static let partSize = 32
    /// Offsets: the record key, then half 0, then half 1.
    static let recordKeyOffset = magic.count
    static func halfOffset(_ half: UInt8) -> Int { magic.count + partSize * (1 + Int(half)) }
    static let size = magic.count + 3 * partSize
    static let macLabel: [UInt8] = Array("SPC file mac v2".utf8)
    static let slotLabel: [UInt8] = Array("SPC slot key v2".utf8)
    static let recordLabel: [UInt8] = Array("SPC failures v2".utf8)

    let path: String

    /// Creates the key file (it must not exist): a random record key and half 0, zeros in half 1.
    func create() throws(VaultError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .io(operation: "create key file", errno: errno) }
        defer { close(fd) }
        let random = try core { () throws(SecureCoreError) in try SecureBytes.random(count: 2 * KeyFile.partSize) }
        defer { random.destroy() }
        try pwriteAll(fd, KeyFile.magic, at: 0)
        try random.withUnsafeBytes { (bytes) throws(VaultError) in
            try pwriteAll(fd, bytes, at: KeyFile.recordKeyOffset)
        }
        try pwriteAll(fd, [UInt8](repeating: 0, count: KeyFile.partSize), at: KeyFile.halfOffset(1))
        guard fsync(fd) == 0 else { throw .io(operation: "fsync key file", errno: errno) }
    }

    /// The record key, in secure memory.
    func recordKey() throws(VaultError) -> SecureBytes {
        try read(at: KeyFile.recordKeyOffset)
    }

    /// One half, in secure memory; a destroyed (all-zero) half is an error.
    func half(_ index: UInt8) throws(VaultError) -> SecureBytes {
        try read(at: KeyFile.halfOffset(index))
    }

    /// Whether half `index` is all zeros (destroyed, or never used).
    func isDestroyed(_ index: UInt8) throws(VaultError) -> Bool {
        do throws(VaultError) {
            try half(index).destroy()
            return false
        } catch .damaged(let reason) where reason.hasPrefix("the key file was destroyed") {
            return true
        }
    }

    /// Writes a new random half `index` in place and returns it.
    func renewHalf(_ index: UInt8) throws(VaultError) -> SecureBytes {
        let fd = try openForWriting()
        defer { close(fd) }
        let fresh = try core { () throws(SecureCoreError) in try SecureBytes.random(count: KeyFile.partSize) }
        try fresh.withUnsafeBytes { (bytes) throws(VaultError) in
            try pwriteAll(fd, bytes, at: KeyFile.halfOffset(index))
        }
        guard fsync(fd) == 0 else { throw .io(operation: "fsync key file", errno: errno) }
        return fresh
    }

    /// Overwrites half `index` in place: random bytes, fsync, zeros, fsync.
    func destroyHalf(_ index: UInt8) throws(VaultError) {
        let fd = try openForWriting()
        defer { close(fd) }
        try KeyFile.overwrite(fd, offset: KeyFile.halfOffset(index), count: KeyFile.partSize, name: "key file")
    }

    /// Overwrites a file in place over its whole length (random, fsync, zeros,
    /// fsync) before it is unlinked. No error when it does not exist.
    static func overwriteInPlace(_ path: String, name: String) throws(VaultError) {
        let fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 {
            if errno == ENOENT { return }
            throw .io(operation: "open \(name) for overwriting", errno: errno)
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .io(operation: "fstat \(name)", errno: errno) }
        try overwrite(fd, offset: 0, count: Int(st.st_size), name: name)
    }

    static func overwrite(_ fd: Int32, offset: Int, count: Int, name: String) throws(VaultError) {
        guard count > 0 else { return }
        let random = try core { () throws(SecureCoreError) in try SecureRandom.bytes(count: count) }
        try pwriteAll(fd, random, at: offset)
        guard fsync(fd) == 0 else { throw .io(operation: "fsync \(name)", errno: errno) }
        try pwriteAll(fd, [UInt8](repeating: 0, count: count), at: offset)
        guard fsync(fd) == 0 else { throw .io(operation: "fsync \(name)", errno: errno) }
    }

    private func openForWriting() throws(VaultError) -> Int32 {
        let fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            throw errno == ENOENT
                ? .damaged(reason: "the key file is missing") : .io(operation: "open key file", errno: errno)
        }
        return fd
    }

    private func read(at offset: Int) throws(VaultError) -> SecureBytes {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            throw errno == ENOENT
                ? .damaged(reason: "the key file is missing: the vault cannot be opened")
                : .io(operation: "open key file", errno: errno)
        }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: KeyFile.magic.count)
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .io(operation: "fstat key file", errno: errno) }
        guard st.st_size == KeyFile.size, pread(fd, &head, head.count, 0) == head.count, head == KeyFile.magic else {
            throw .damaged(reason: "the key file is damaged or was destroyed: the vault cannot be opened")
        }
        let out = try core { () throws(SecureCoreError) in try SecureBytes(count: KeyFile.partSize) }
        let (n, allZero): (Int, Bool) = out.withUnsafeMutableBytes { buffer in
            let n = pread(fd, buffer.baseAddress, KeyFile.partSize, off_t(offset))
            return (n, buffer.reduce(0) { $0 | $1 } == 0)
        }
        guard n == KeyFile.partSize else { throw .io(operation: "read key file", errno: errno) }
        guard !allZero else { throw .damaged(reason: "the key file was destroyed: the vault cannot be opened") }
        return out
    }
}

/// Writes all of `bytes` at `offset`.
func pwriteAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int) throws(VaultError) {
    var done = 0
    while done < bytes.count {
        let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
        if n < 0 {
            if errno == EINTR { continue }
            throw .io(operation: "write in place", errno: errno)
        }
        done += n
    }
}

func pwriteAll(_ fd: Int32, _ bytes: [UInt8], at offset: Int) throws(VaultError) {
    let result: Result<Void, VaultError> = bytes.withUnsafeBytes { buffer in
        do throws(VaultError) {
            try pwriteAll(fd, buffer, at: offset)
            return .success(())
        } catch { return .failure(error) }
    }
    try result.get()
}
