import TransferEngine

/// The body of a request that does not end its upload (`Upload-Complete: ?0`, or interop 3's
/// `Upload-Incomplete: ?1`): its bytes pass through, and its end is reported as a break, so the
/// upload receiver keeps every byte and waits for more (`UploadReceiver.Outcome.waiting`)
/// instead of writing the object, even when the bytes reach the upload's declared length (a
/// draft upload is complete only when a request says so).
struct UnfinishedBody: ByteSource {
    let body: any ByteSource

    /// The end of a body that is not the end of its upload.
    struct NotTheEnd: Error {}

    func next() async throws -> ArraySlice<UInt8>? {
        guard let chunk = try await body.next() else { throw NotTheEnd() }
        return chunk
    }
}
