import Crypto
#if canImport(Glibc)
import Glibc
#endif

/// Local files a job spools through: a prepared download, or the body of an import whose
/// source cannot be read in ranges. A port, so the engine never names a directory.
public protocol Spool: Sendable {
    /// The job's file `name`, created when `create` (emptied when `truncate`); nil when absent.
    func open(jobID: String, name: SpoolName, create: Bool, truncate: Bool) throws -> SpoolFile?
    func remove(jobID: String, name: SpoolName)
}

public enum SpoolName: String, Sendable {
    /// A download job's object, served at `GET /v1/jobs/{id}/data`.
    case download = "data"
    /// An import's body, kept only until its parts are in S3.
    case importBody = "import"
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

    /// SHA-256 (hex) of `range`, read back from the file; nil when the file is shorter.
    public func sha256(_ range: ClosedRange<Int64>) -> String? {
        let context = Digest.SHA256Context()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset = range.lowerBound
        while offset <= range.upperBound {
            let want = Int(min(Int64(buffer.count), range.upperBound - offset + 1))
            let got = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, want, off_t(offset)) }
            guard got > 0 else { return nil }
            buffer.withUnsafeBytes { context.update(UnsafeRawBufferPointer(rebasing: $0[0..<got])) }
            offset += Int64(got)
        }
        return Digest.hex(context.finish())
    }

    /// MD5 (hex) of `range`: what S3 answers as the ETag of a part made of these bytes.
    public func md5(_ range: ClosedRange<Int64>) -> String? {
        let count = Int(range.upperBound - range.lowerBound + 1)
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let got = bytes.withUnsafeMutableBytes {
                pread(fd, $0.baseAddress! + done, count - done, off_t(range.lowerBound + Int64(done)))
            }
            guard got > 0 else { return nil }
            done += got
        }
        return Digest.hex(Digest.md5(bytes))
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

/// The spool as files in one directory: `<job id>.<name>`.
public struct DirectorySpool: Spool {
    public let directory: String

    public init(directory: String) throws {
        self.directory = directory
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { throw SpoolError(errno: errno, path: directory) }
    }

    public func path(jobID: String, name: SpoolName) -> String {
        "\(directory)/\(jobID).\(name.rawValue)"
    }

    public func open(jobID: String, name: SpoolName, create: Bool, truncate: Bool) throws -> SpoolFile? {
        let path = path(jobID: jobID, name: name)
        var flags = O_RDWR | O_CLOEXEC
        if create { flags |= O_CREAT }
        if truncate { flags |= O_TRUNC }
        let fd = Glibc.open(path, flags, 0o600)
        if fd < 0 {
            if errno == ENOENT && !create { return nil }
            throw SpoolError(errno: errno, path: path)
        }
        return SpoolFile(fd: fd, path: path)
    }

    public func remove(jobID: String, name: SpoolName) {
        unlink(path(jobID: jobID, name: name))
    }
}
