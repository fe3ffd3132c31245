import Auth
import Foundation
import HTTPServer
import TransferEngine

/// `POST /v1/uploads/{id}/complete`: the parts S3 holds (or the client's list, checked against
/// them) made into the object, with its conditions and checksum; a completion held by a request
/// that died is taken over, and one S3 already made is answered from the object.
extension UploadsRoutes {
    func complete(_ http: HTTPRequest, id: String) async throws -> HTTPResponse {
        let upload = try await upload(http, id: id)
        // A completion another request holds is refused by the claim below (409, Retry-After),
        // or taken over once that request is long gone (it died with its instance).
        if upload.record.state != .completing { try requireOpen(upload) }
        let fields = try await Responses.fields(from: http, known: ["parts", "preventOverwrite", "ifMatch", "checksum"])
        let expected = try Self.expectedChecksum(fields, upload)
        // The completion makes the object: it never clobbers when asked (412, the upload stays open).
        let condition = WriteCondition(
            preventOverwrite: try fields.bool("preventOverwrite"),
            ifMatch: try fields.string("ifMatch").map { value throws(APIError) in try SafeWrite.etag(value) })
        if try fields.bool("preventOverwrite") == true && fields.has("ifMatch") {
            throw APIError.validation("preventOverwrite and ifMatch exclude each other.")
        }
        // The record is claimed first, before S3 is asked anything: an abort racing this
        // completion loses (409), or wins and this one answers 409 `upload_not_open`.
        guard try await jobs.clientUploads.claim(id: upload.id, for: .completing) else { throw try await notOpen(upload.id) }
        // From the claim on, the request's work runs to its end even if the client hangs up.
        let routes = self
        let parts: [RecordedPart], whole: ObjectChecksum?
        do {
            (parts, whole) = try await Shield.run {
                do {
                    return try await routes.checkedParts(upload, fields, expected: expected)
                } catch {
                    // Gone from S3: kept claimed while the object is looked at, below.
                    if (error as? APIError) != Self.gone { try? await routes.jobs.clientUploads.unclaim(id: upload.id) }
                    throw error
                }
            }
        } catch let error as APIError where error == Self.gone {
            // S3 no longer has the upload: a completion whose request died may have made the object.
            guard let etag = await Self.completedElsewhere(jobs.objects, upload) else {
                try? await jobs.clientUploads.unclaim(id: upload.id)
                throw error
            }
            try await jobs.clientUploads.completed(id: upload.id, etag: etag)
            return Responses.json(200, bytes: Self.completedAnswer(upload, etag: etag))
        }
        let store = jobs.clientUploads, objects = jobs.objects, chosen = parts
        // Completion and its record run to their end even if the client hangs up meanwhile.
        let etag: String = try await Shield.run {
            let etag: String
            do {
                etag = try await objects.completeMultipartUpload(
                    key: upload.objectKey, uploadID: upload.s3UploadID, parts: chosen, condition: condition)
            } catch let error as TransferError where error == .objectExists || error == .destinationChanged {
                try? await store.unclaim(id: upload.id)
                throw error == .objectExists
                    ? APIError(
                        .objectExists,
                        "The key already holds an object; the upload stays open (complete without preventOverwrite, or abort).")
                    : APIError(.preconditionFailed, "The object is no longer the version ifMatch named; the upload stays open.")
            } catch {
                // An answer lost on the way (a timeout, a reset) may come after S3 made the
                // object, and a retry then finds the upload gone: the object says which.
                if let made = await Self.madeBefore(objects, upload, chosen) {
                    try await store.completed(id: upload.id, etag: made, checksum: whole)
                    return made
                }
                if let error = error as? TransferError, error.code == .noSuchUpload {
                    try await store.aborted(id: upload.id)
                    throw Self.gone
                }
                try? await store.unclaim(id: upload.id)
                throw error
            }
            // The object is written: whatever follows, the upload is completed.
            try await store.completed(id: upload.id, etag: etag, checksum: whole)
            let size = try await objects.size(of: upload.objectKey).size
            guard size == upload.size else {
                throw APIError(.sizeMismatch, "The object is \(size) bytes, not \(upload.size).")
            }
            return etag
        }
        return Responses.json(200, bytes: Self.completedAnswer(upload, etag: etag, checksum: whole))
    }

    /// `{objectKey, size, etag, checksum}` of a completed upload.
    static func completedAnswer(_ upload: Upload, etag: String, checksum: ObjectChecksum? = nil) -> [UInt8] {
        var text = JSONText()
        text.begin()
        text.field("objectKey", .string(upload.objectKey))
        text.field("size", .int(Int(upload.size)))
        text.field("etag", .string(etag))
        text.rawField("checksum", ChecksumFields.json(checksum))
        text.end()
        return text.bytes
    }

    /// The object's ETag when S3 holds one at the key that a completion of this upload made: its
    /// size, and a multipart ETag of as many parts (the parts themselves are gone with the upload).
    static func completedElsewhere(_ objects: any ObjectStore, _ upload: Upload) async -> String? {
        guard let found = try? await objects.size(of: upload.objectKey), found.size == upload.size,
            found.etag.trimmingCharacters(in: CharacterSet(charactersIn: "\"")).hasSuffix("-\(upload.plan.partCount)")
        else { return nil }
        return found.etag
    }

    /// The parts to complete with: those S3 holds (the truth), all of them, each of its planned
    /// size; a client's list, when sent, must agree with them.
    func chosenParts(_ upload: Upload, _ fields: JSONFields) async throws -> [RecordedPart] {
        let byNumber = Dictionary(try await heldParts(upload).map { ($0.number, $0) }, uniquingKeysWith: { a, _ in a })
        if let sent = try fields.array("parts") {
            for value in sent {
                guard case .object(let members) = value, members.pairs.allSatisfy({ $0.key == "partNumber" || $0.key == "etag" }),
                    let n = Self.partNumber(members["partNumber"]), case .string(let etag)? = members["etag"]
                else {
                    throw APIError.validation("parts must be [{partNumber, etag}], part numbers whole from 1 to 10000.")
                }
                guard let part = byNumber[n], MultipartETag.same(part.etag, etag) else {
                    throw APIError(.partMismatch, "Part \(n) is not the one S3 holds.")
                }
            }
        }
        var parts: [RecordedPart] = []
        for number in 1...upload.plan.partCount {
            guard let part = byNumber[number], upload.plan.holds(part) else {
                throw APIError(
                    .partsMissing, "Part \(number) of \(upload.plan.partCount) is missing or not \(upload.plan.size(ofPart: number)) bytes."
                )
            }
            parts.append(part)
        }
        return parts
    }

    /// The ETag of the upload's object if it is already the one `parts` make (its size, and
    /// their multipart ETag), else nil.
    static func madeBefore(_ objects: any ObjectStore, _ upload: Upload, _ parts: [RecordedPart]) async -> String? {
        guard let expected = MultipartETag.expected(for: parts.map(\.etag)),
            let current = try? await objects.size(of: upload.objectKey),
            current.size == upload.size, MultipartETag.same(current.etag, expected)
        else { return nil }
        return current.etag
    }
}
