import DurableStorage
import SecureCore

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
    /// The system calls behind its writes (tests inject failures).
    var fileSystem: any DurableFileSystem = SystemFileSystem()

    /// Creates the key file (it must not exist): a random record key and half 0, zeros in half 1.
    func create() throws(VaultError) {
        _ = try DurableFile.withFile(path, .createNew, fileSystem: fileSystem, failure: VaultError.init) {
            (file) throws(VaultError) in
            let random = try core { () throws(SecureCoreError) in try SecureBytes.random(count: 2 * KeyFile.partSize) }
            defer { random.destroy() }
            try storage { () throws(StorageError) in
                try file.write(KeyFile.magic, at: 0)
                try random.withUnsafeBytes { (bytes) throws(StorageError) in
                    try file.write(bytes, at: KeyFile.recordKeyOffset)
                }
                try file.fill(0, count: KeyFile.partSize, at: KeyFile.halfOffset(1))
                try file.sync()
            }
        }
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
        try update { (file) throws(VaultError) in
            let fresh = try core { () throws(SecureCoreError) in try SecureBytes.random(count: KeyFile.partSize) }
            try storage { () throws(StorageError) in
                try fresh.withUnsafeBytes { (bytes) throws(StorageError) in
                    try file.write(bytes, at: KeyFile.halfOffset(index))
                }
                try file.sync()
            }
            return fresh
        }
    }

    /// Overwrites half `index` in place: random bytes, fsync, zeros, fsync.
    func destroyHalf(_ index: UInt8) throws(VaultError) {
        try update { (file) throws(VaultError) in
            try storage { () throws(StorageError) in
                try file.overwrite(offset: KeyFile.halfOffset(index), count: KeyFile.partSize)
            }
        }
    }

    /// Runs `body` with the key file open for writing in place.
    private func update<R>(_ body: (OpenFile) throws(VaultError) -> R) throws(VaultError) -> R {
        guard
            let result = try DurableFile.withFile(path, .update, fileSystem: fileSystem, failure: VaultError.init, body)
        else {
            throw .damaged(reason: "the key file is missing")
        }
        return result
    }

    private func read(at offset: Int) throws(VaultError) -> SecureBytes {
        let read = try DurableFile.withFile(path, .read, failure: VaultError.init) {
            (file) throws(VaultError) -> SecureBytes in
            guard file.size == KeyFile.size,
                try storage({ () throws(StorageError) in try file.readBytes(count: KeyFile.magic.count, at: 0) })
                    == KeyFile.magic
            else {
                throw .damaged(reason: "the key file is damaged or was destroyed: the vault cannot be opened")
            }
            let out = try core { () throws(SecureCoreError) in try SecureBytes(count: KeyFile.partSize) }
            let (n, allZero) = try storage { () throws(StorageError) -> (Int, Bool) in
                try out.withUnsafeMutableBytes { (buffer) throws(StorageError) -> (Int, Bool) in
                    let n = try file.read(into: buffer, at: offset)
                    return (n, buffer.reduce(0) { $0 | $1 } == 0)
                }
            }
            guard n == KeyFile.partSize else {
                throw .damaged(reason: "the key file is damaged or was destroyed: the vault cannot be opened")
            }
            guard !allZero else { throw .damaged(reason: "the key file was destroyed: the vault cannot be opened") }
            return out
        }
        guard let read else { throw .damaged(reason: "the key file is missing: the vault cannot be opened") }
        return read
    }
}
