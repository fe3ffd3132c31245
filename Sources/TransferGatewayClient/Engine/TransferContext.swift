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

    /// Reads `range` of the file at `url` (one part at a time: never the whole file).
    static func read(_ url: URL, _ range: Range<Int64>) throws -> Data {
        do {
            let handle = try FileHandle(forReadingFrom: url)
            defer { try? handle.close() }
            try handle.seek(toOffset: UInt64(range.lowerBound))
            let data = try handle.read(upToCount: range.count) ?? Data()
            guard data.count == range.count else {
                throw TransferError(.fileError, "\(url.lastPathComponent) is shorter than when the upload began")
            }
            return data
        } catch let error as TransferError {
            throw error
        } catch {
            throw TransferError(.fileError, "cannot read \(url.lastPathComponent): \(error.localizedDescription)")
        }
    }
}
