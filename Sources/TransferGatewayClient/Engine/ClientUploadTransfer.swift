import Foundation

/// A large file through a client upload (`/v1/uploads`): parts read from the file a few at a time
/// (at most `partConcurrency` in memory), each `PUT` straight to S3 on its presigned URL, then
/// `complete` without a part list (the gateway lists them). After a relaunch,
/// `GET /v1/uploads/{id}` says which parts S3 holds and only the others are sent. With
/// `partChecksums`, the upload is created with `checksumAlgorithm: CRC32C`: each part's CRC-32C
/// is signed into its URL and sent as `x-amz-checksum-crc32c`, a part S3 refuses as changed on
/// the way (400 `BadDigest`) is sent again, and the completion names the whole file's CRC-32C,
/// made of the parts' (`CRC32C.combine`), so the gateway refuses an object of other bytes.
struct ClientUploadTransfer: Sendable {
    let context: TransferContext
    let reporter: ProgressReporter

    func run(_ record: inout TransferRecord) async throws -> TransferResult {
        guard let size = record.size else { throw TransferError(.fileError, "the record of \(record.id) has no size") }
        reporter.setTotal(size)
        let api = context.api
        var held: [Int: Int64] = [:]
        var first: API.CreatedUpload?
        var checksummed = context.configuration.partChecksums
        if let id = record.serverID {
            let upload = try await api.upload(id)
            if upload.state == "completed" {
                return result(record, objectKey: upload.objectKey, size: upload.size, etag: upload.etag, checksum: upload.checksum)
            }
            record.partSize = upload.partSize
            checksummed = upload.checksumAlgorithm == "CRC32C"
            for part in upload.parts { held[part.partNumber] = part.size }
        } else {
            let created = try await api.createUpload(
                record, size: size, partSize: context.configuration.partSize, checksums: checksummed)
            checksummed = created.checksumAlgorithm == "CRC32C"
            record.serverID = created.uploadId
            record.partSize = created.partSize
            try context.store.save(record)
            first = created
        }
        guard let id = record.serverID else { throw TransferError(.badResponse, "the gateway gave the upload no id") }
        let plan = try PartPlan.forUpload(size: size, partSize: record.partSize)
        let missing = plan.missingParts(held: held)
        reporter.setCommitted(size - missing.reduce(0) { $0 + Int64(plan.range(of: $1).count) })
        let urls = PartURLs(api: api, uploadID: id, pending: missing)
        if let first { await urls.add(first.parts, expiresAt: first.expiresAt) }
        let sums = checksummed ? PartSums() : nil
        try await sendParts(missing, plan: plan, urls: urls, file: record.fileURL, sums: sums)
        var whole: API.Checksum?
        if let sums {
            // Parts sent before a relaunch are summed from the file, one at a time.
            for number in 1...plan.partCount where sums.crc(of: number) == nil {
                sums.set(number, CRC32C.checksum(try TransferContext.read(record.fileURL, plan.range(of: number))))
            }
            let pieces = (1...plan.partCount).map { (crc: sums.crc(of: $0) ?? 0, length: Int64(plan.range(of: $0).count)) }
            whole = API.Checksum(algorithm: "CRC32C", value: CRC32C.base64(CRC32C.combine(pieces)))
        }
        return try await complete(id, record, checksum: whole)
    }

    /// Sends `numbers`, at most `partConcurrency` at once.
    private func sendParts(_ numbers: [Int], plan: PartPlan, urls: PartURLs, file: URL, sums: PartSums?) async throws {
        let width = max(1, context.configuration.partConcurrency)
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = numbers.makeIterator()
            for _ in 0..<width {
                guard let number = next.next() else { break }
                group.addTask { try await sendPart(number, plan: plan, urls: urls, file: file, sums: sums) }
            }
            while try await group.next() != nil {
                if let number = next.next() { group.addTask { try await sendPart(number, plan: plan, urls: urls, file: file, sums: sums) } }
            }
        }
    }

    private func sendPart(_ number: Int, plan: PartPlan, urls: PartURLs, file: URL, sums: PartSums?) async throws {
        let range = plan.range(of: number)
        let body = try TransferContext.read(file, range)
        // The part's CRC-32C, signed into its URL: S3 stores these bytes or none.
        let checksum = sums.map { sums in
            let crc = CRC32C.checksum(body)
            sums.set(number, crc)
            return CRC32C.base64(crc)
        }
        var backoff = Backoff(policy: context.api.retry)
        var resignings = 0
        while true {
            try await context.pace(Int64(body.count))
            let url: URL, headers: [String: String]
            if let checksum {
                (url, headers) = try await urls.url(for: number, checksum: checksum)
            } else {
                (url, headers) = (try await urls.url(for: number), [:])
            }
            let call = GatewayAPI.Call(
                method: "PUT", url: url, body: body, headers: headers, authorized: false,
                onSent: { [reporter] in reporter.setInFlight(number, $0) })
            let answer: HTTPAnswer
            do {
                answer = try await context.api.sendOnce(call)
            } catch let error where GatewayAPI.isTransient(error) {
                reporter.drop(number)
                try await backoff.wait(retryAfter: nil, cause: "part \(number): network: \(error.localizedDescription)")
                continue
            }
            if answer.isSuccess {
                reporter.commit(number, Int64(body.count))
                return
            }
            reporter.drop(number)
            let s3Code = S3ErrorBody.code(answer.body)
            if answer.status == 403 && (S3ErrorBody.saysExpired(answer.body) || resignings == 0) && resignings < 3 {
                // An expired URL (or a clock skew S3 reads as one): sign this part again.
                resignings += 1
                await urls.expire(number)
                continue
            }
            if answer.isTransient || (answer.status == 400 && s3Code == "BadDigest" && checksum != nil) {
                // A BadDigest on a checksummed part: its bytes changed on the way; sent again.
                try await backoff.wait(retryAfter: answer.retryAfter, cause: "part \(number): S3 HTTP \(answer.status) \(s3Code ?? "")")
                continue
            }
            throw TransferError(
                answer.status == 403 ? .forbidden : .rejected, "S3 refused part \(number): HTTP \(answer.status) \(s3Code ?? "")",
                status: answer.status, serverCode: s3Code)
        }
    }

    /// Completes; a completion whose answer was lost (the upload is no longer open) is read back,
    /// and one another request holds (`completing`: perhaps a request whose gateway died, which
    /// the gateway takes over after half a minute) is asked again every 10 s, for up to 5 minutes.
    private func complete(_ id: String, _ record: TransferRecord, checksum: API.Checksum?) async throws -> TransferResult {
        var waits = 0
        while true {
            do {
                let done = try await context.api.completeUpload(id, checksum: checksum)
                return result(record, objectKey: done.objectKey, size: done.size, etag: done.etag, checksum: done.checksum)
            } catch let error as TransferError where error.status == 409 || error.status == 404 {
                guard let upload = try? await context.api.upload(id) else { throw error }
                if upload.state == "completed" {
                    return result(record, objectKey: upload.objectKey, size: upload.size, etag: upload.etag, checksum: upload.checksum)
                }
                guard upload.state == "completing", waits < Self.completingWaits else { throw error }
                waits += 1
                try await Task.sleep(nanoseconds: 10_000_000_000)
            }
        }
    }

    /// Times a completion held by another request is waited for, 10 s each.
    static let completingWaits = 30

    private func result(
        _ record: TransferRecord, objectKey: String, size: Int64, etag: String?, checksum: API.Checksum? = nil
    ) -> TransferResult {
        reporter.setCommitted(size)
        return TransferResult(
            reference: record.reference, objectKey: objectKey, size: size, etag: etag, fileURL: nil,
            checksum: checksum.map { TransferChecksum(algorithm: $0.algorithm, value: $0.value) })
    }
}

/// The CRC-32C of each part summed so far in this run.
final class PartSums: Sendable {
    private let sums = Locked<[Int: UInt32]>([:])

    func set(_ number: Int, _ crc: UInt32) { sums.withLock { $0[number] = crc } }
    func crc(of number: Int) -> UInt32? { sums.withLock { $0[number] } }
}
