import Foundation

/// What every transfer of one client shares: the API, the state directory, the pacer and the
/// settings.
struct TransferContext: Sendable {
    let api: GatewayAPI
    let store: StateStore
    let pacer: Pacer?
    let configuration: TransferClient.Configuration

    /// Waits for the pacer, when a bandwidth limit is set.
    func pace(_ bytes: Int64) async throws {
        if let pacer { try await pacer.take(bytes) }
    }

    /// Reads `range` of the file at `url` (one part at a time: never the whole file), with
    /// `pread` into one buffer: `FileHandle.read(upToCount:)` reads 4 KiB per call on Linux.
    static func read(_ url: URL, _ range: Range<Int64>) throws -> Data {
        guard !range.isEmpty else { return Data() }
        let descriptor = open(url.path, O_RDONLY)
        guard descriptor >= 0 else {
            throw TransferError(.fileError, "cannot read \(url.lastPathComponent): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var data = Data(count: range.count)
        var done = 0
        var failure: Int32 = 0
        data.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            while done < range.count {
                let count = pread(descriptor, base + done, range.count - done, off_t(range.lowerBound) + off_t(done))
                if count < 0 && errno == EINTR { continue }
                if count < 0 { failure = errno }
                if count <= 0 { return }
                done += count
            }
        }
        if failure != 0 {
            throw TransferError(.fileError, "cannot read \(url.lastPathComponent): \(String(cString: strerror(failure)))")
        }
        guard done == range.count else {
            throw TransferError(.fileError, "\(url.lastPathComponent) is shorter than when the upload began")
        }
        return data
    }
}
