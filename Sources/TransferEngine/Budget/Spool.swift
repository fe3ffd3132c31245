import Crypto
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Local files a job's bytes wait in on their way: the parts of upload and import jobs (sent to
/// S3 from there, so a retry reads the file again and memory never holds a part), an upload's
/// tail, a prepared download. A port, so the engine never names a directory. Every byte on the
/// spool is reserved first against one budget (`GATEWAY_SPOOL_BUDGET`): a file that does not fit
/// waits for room, and no identity's files hold more than its share of it
/// (`GATEWAY_USER_SPOOL_SHARE`).
public protocol Spool: Sendable {
    /// The job's file `name`, created when `create` (emptied when `truncate`); nil when absent.
    func open(jobID: String, name: SpoolName, create: Bool, truncate: Bool) throws -> SpoolFile?
    /// Removes the file and gives its reserved bytes back.
    func remove(jobID: String, name: SpoolName)
    /// Removes every file of the job but those in `keeping`.
    func removeAll(jobID: String, keeping: Set<SpoolName>)
    /// Renames a file, its reservation going with it (a full tail becoming a part).
    func rename(jobID: String, from: SpoolName, to: SpoolName) throws
    /// Holds `bytes` of the budget for the file `name` of `jobID`, an identity's (replacing what
    /// it held), waiting while they do not fit. Throws `ByteBudget.TooLarge` for more than the
    /// whole budget or one identity's share.
    func reserve(jobID: String, name: SpoolName, bytes: Int64, owner: String) async throws
    /// Holds at least `bytes` for the file, reserving only what it lacks (a file that grows a
    /// chunk at a time as its bytes arrive), waiting while that does not fit.
    func grow(jobID: String, name: SpoolName, to bytes: Int64, owner: String) async throws
    /// `grow` if the bytes it lacks fit now; false (nothing reserved) when it would wait.
    func growIfItFits(jobID: String, name: SpoolName, to bytes: Int64, owner: String) -> Bool
    /// Bytes the file holds of the budget now.
    func reserved(jobID: String, name: SpoolName) -> Int64
    /// Gives back what the file holds beyond `bytes` (never waits).
    func shrink(jobID: String, name: SpoolName, to bytes: Int64)
    /// Bytes the spool holds now (reserved), and may hold at most.
    var usage: (used: Int64, capacity: Int64) { get }
}

/// A spool file's name within its job: `data`, `tail`, `part-3`…
public struct SpoolName: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// A download job's object, served at `GET /v1/jobs/{id}/data`.
    public static let download = SpoolName("data")
    /// An upload's bytes past its last full part.
    public static let tail = SpoolName("tail")
    /// One part on its way to S3.
    public static func part(_ number: Int) -> SpoolName { SpoolName("part-\(number)") }

    public var description: String { rawValue }
}

/// An open spool file. Reads and writes are positional (`pread`/`pwrite`), so parts in
/// flight share it without a lock. Closed when the last reference goes.
public final class SpoolFile: Sendable {
    public let fd: Int32
    public let path: String

    public init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    public var size: Int64 {
        var info = stat()
        return fstat(fd, &info) == 0 ? Int64(info.st_size) : -1
    }

    public func truncate(to size: Int64) throws {
        guard ftruncate(fd, off_t(size)) == 0 else { throw SpoolError(errno: errno, path: path) }
    }

    public func sync() throws {
        guard fsync(fd) == 0 else { throw SpoolError(errno: errno, path: path) }
    }

    /// Writes all of `bytes` at `offset`.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress.map { $0 + done }, bytes.count - done, off_t(offset + Int64(done)))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw SpoolError(errno: n == 0 ? EIO : errno, path: path) }
            done += n
        }
    }

    /// Reads `range` back in blocks of at most `block` bytes, handing each to `body`; false when
    /// the file is shorter than the range.
    public func forEachBlock(
        of range: ClosedRange<Int64>, block: Int = 256 * 1024,
        _ body: (UnsafeRawBufferPointer) -> Void
    ) -> Bool {
        var buffer = [UInt8](repeating: 0, count: Int(min(Int64(block), range.upperBound - range.lowerBound + 1)))
        var offset = range.lowerBound
        while offset <= range.upperBound {
            let want = Int(min(Int64(buffer.count), range.upperBound - offset + 1))
            let got = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, want, off_t(offset)) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { return false }
            buffer.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[0..<got])) }
            offset += Int64(got)
        }
        return true
    }

    /// SHA-256 (hex) of `range`, read back from the file; nil when the file is shorter.
    public func sha256(_ range: ClosedRange<Int64>) -> String? {
        digest(.sha256, range)
    }

    /// MD5 (hex) of `range`: what S3 answers as the ETag of a part made of these bytes.
    public func md5(_ range: ClosedRange<Int64>) -> String? {
        digest(.md5, range)
    }

    /// MD5 of `range`, as bytes (for `Content-MD5`).
    public func md5Digest(_ range: ClosedRange<Int64>) -> [UInt8]? {
        let context = Digest.Context(.md5)
        guard forEachBlock(of: range, { context.update($0) }) else { return nil }
        return context.finish()
    }

    /// CRC-32C of `range`, read back from the file; nil when the file is shorter.
    public func crc32c(_ range: ClosedRange<Int64>) -> UInt32? {
        var crc: UInt32 = 0
        guard forEachBlock(of: range, { crc = Digest.crc32c($0, continuing: crc) }) else { return nil }
        return crc
    }

    private func digest(_ algorithm: Digest.Algorithm, _ range: ClosedRange<Int64>) -> String? {
        let context = Digest.Context(algorithm)
        guard forEachBlock(of: range, { context.update($0) }) else { return nil }
        return Digest.hex(context.finish())
    }
}

public struct SpoolError: Error, CustomStringConvertible {
    public let errno: Int32
    public let path: String

    public init(errno: Int32, path: String) {
        self.errno = errno
        self.path = path
    }

    public var description: String { "\(path): \(String(cString: strerror(errno)))" }
}
