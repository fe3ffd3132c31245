import Gateway
import Synchronization
import TransferEngine

#if canImport(Glibc)
    import Glibc
#endif

/// The engine's spool on the local disk: files in one directory, `<job id>.<name>`, with its
/// budget. Files found there at start-up (a download prepared before a restart) count against
/// the budget until removed.
public final class DirectorySpool: Spool, SpoolMaintenance {
    public let directory: String
    private let budget: ByteBudget
    /// The reservations of every file the spool holds bytes for, by path: one, or more for a
    /// file that grew a chunk at a time.
    private let held = Mutex<[String: Holding]>([:])

    public init(directory: String, budget: Int64 = 10 << 30, ownerShare: Int64? = nil) throws {
        self.directory = directory
        self.budget = ByteBudget(capacity: budget, ownerShare: ownerShare)
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { throw SpoolError(errno: errno, path: directory) }
        for name in Self.names(in: directory) {
            let path = "\(directory)/\(name)"
            var info = stat()
            guard stat(path, &info) == 0 else { continue }
            let reservation = self.budget.claimWithoutWaiting(Int64(info.st_blocks) * 512)
            held.withLock { $0[path] = Holding([reservation]) }
        }
    }

    /// The file names in `directory` (not `.` and `..`).
    public static func names(in directory: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
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
        let path = path(jobID: jobID, name: name)
        unlink(path)
        held.withLock { $0.removeValue(forKey: path) }?.release()
    }

    /// Every file of the job the spool holds bytes for (every file it made goes through
    /// `reserve`, and files found at start-up are counted), but those in `keeping`.
    public func removeAll(jobID: String, keeping: Set<SpoolName>) {
        let prefix = "\(directory)/\(jobID)."
        let kept = Set(keeping.map { prefix + $0.rawValue })
        let paths = held.withLock { h in h.keys.filter { $0.hasPrefix(prefix) && !kept.contains($0) } }
        for path in paths {
            unlink(path)
            held.withLock { $0.removeValue(forKey: path) }?.release()
        }
    }

    public func files() -> [SpoolEntry] {
        Self.names(in: directory).compactMap { name in
            var info = stat()
            guard let jobID = name.split(separator: ".").first, stat("\(directory)/\(name)", &info) == 0 else { return nil }
            let modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
            return SpoolEntry(name: name, jobID: String(jobID), modified: modified)
        }
    }

    public func remove(fileNamed name: String) -> Bool {
        let path = "\(directory)/\(name)"
        guard unlink(path) == 0 else { return false }
        held.withLock { $0.removeValue(forKey: path) }?.release()
        return true
    }

    public func rename(jobID: String, from: SpoolName, to: SpoolName) throws {
        let source = path(jobID: jobID, name: from), target = path(jobID: jobID, name: to)
        guard Glibc.rename(source, target) == 0 else { throw SpoolError(errno: errno, path: source) }
        let replaced = held.withLock { h -> Holding? in
            let old = h.removeValue(forKey: target)
            if let moving = h.removeValue(forKey: source) { h[target] = moving }
            return old
        }
        replaced?.release()
    }

    public func reserve(jobID: String, name: SpoolName, bytes: Int64, owner: String) async throws {
        let path = path(jobID: jobID, name: name)
        // What the file holds already is given back first: a resize never counts twice.
        held.withLock { $0.removeValue(forKey: path) }?.release()
        let reservation = try await budget.reserve(bytes, owner: owner)
        let replaced = held.withLock { h -> Holding? in
            defer { h[path] = Holding([reservation]) }
            return h[path]
        }
        replaced?.release()
    }

    public func grow(jobID: String, name: SpoolName, to bytes: Int64, owner: String) async throws {
        let path = path(jobID: jobID, name: name)
        let lacking = lacking(path, bytes)
        guard lacking > 0 else { return }
        add(try await budget.reserve(lacking, owner: owner), to: path)
    }

    public func growIfItFits(jobID: String, name: SpoolName, to bytes: Int64, owner: String) -> Bool {
        let path = path(jobID: jobID, name: name)
        let lacking = lacking(path, bytes)
        guard lacking > 0 else { return true }
        guard let more = budget.tryReserve(lacking, owner: owner) else { return false }
        add(more, to: path)
        return true
    }

    /// What the file at `path` lacks of holding `bytes` (0 when it holds that much).
    private func lacking(_ path: String, _ bytes: Int64) -> Int64 {
        max(0, bytes - held.withLock { $0[path]?.bytes ?? 0 })
    }

    private func add(_ more: Reservation, to path: String) {
        held.withLock { h in h[path, default: Holding([])].pieces.append(more) }
    }

    public func reserved(jobID: String, name: SpoolName) -> Int64 {
        let path = path(jobID: jobID, name: name)
        return held.withLock { $0[path]?.bytes ?? 0 }
    }

    public func shrink(jobID: String, name: SpoolName, to bytes: Int64) {
        let path = path(jobID: jobID, name: name)
        held.withLock { $0[path] }?.shrink(to: bytes)
    }

    /// A file's reservations.
    struct Holding {
        var pieces: [Reservation]

        init(_ pieces: [Reservation]) { self.pieces = pieces }

        var bytes: Int64 { pieces.reduce(0) { $0 + $1.bytes } }

        func release() { for piece in pieces { piece.release() } }

        /// Gives back what is held beyond `bytes`, the newest pieces first.
        func shrink(to bytes: Int64) {
            var keep = max(0, bytes)
            for piece in pieces {
                let held = piece.bytes
                if held <= keep {
                    keep -= held
                } else {
                    piece.shrink(to: keep)
                    keep = 0
                }
            }
        }
    }

    public var usage: (used: Int64, capacity: Int64) { (budget.used, budget.capacity) }
}
