/// How an object of a given size is cut into multipart parts (AWS S3 limits): every part but
/// the last has the same size (Cloudflare R2 requires it), at least 5 MiB; at most 10,000
/// parts, so the part size grows for large objects; objects up to 5 TiB.
public struct PartPlan: Sendable, Equatable {
    public static let minimumPartSize: Int64 = 5 * 1024 * 1024
    public static let maximumPartSize: Int64 = 5 * 1024 * 1024 * 1024
    public static let maximumPartCount = 10_000
    public static let maximumObjectSize: Int64 = 5 * 1024 * 1024 * 1024 * 1024

    public let objectSize: Int64
    public let partSize: Int64
    public let partCount: Int

    public enum PlanError: Error, Equatable, Sendable {
        case negativeSize
        case objectTooLarge(limit: Int64)
        case partSizeOutOfRange
    }

    /// Plans `objectSize` bytes with parts of `requestedPartSize` (grown in whole MiB when more
    /// than 10,000 parts would be needed). An empty object is one empty part.
    public init(objectSize: Int64, requestedPartSize: Int64, maximumObjectSize: Int64 = PartPlan.maximumObjectSize) throws(PlanError) {
        guard objectSize >= 0 else { throw .negativeSize }
        guard objectSize <= min(maximumObjectSize, Self.maximumObjectSize) else {
            throw .objectTooLarge(limit: min(maximumObjectSize, Self.maximumObjectSize))
        }
        guard (Self.minimumPartSize...Self.maximumPartSize).contains(requestedPartSize) else { throw .partSizeOutOfRange }
        var partSize = requestedPartSize
        if Self.ceilDiv(objectSize, partSize) > Int64(Self.maximumPartCount) {
            let mebibyte: Int64 = 1024 * 1024
            let needed = Self.ceilDiv(objectSize, Int64(Self.maximumPartCount))
            partSize = Self.ceilDiv(needed, mebibyte) * mebibyte
        }
        self.objectSize = objectSize
        self.partSize = partSize
        self.partCount = max(1, Int(Self.ceilDiv(objectSize, partSize)))
    }

    /// Whether `number` is one of this plan's parts. Part numbers read back from the job store
    /// or from S3 belong to whatever plan was current when they were written: check them here
    /// before asking for their size.
    public func contains(part number: Int) -> Bool { number >= 1 && number <= partCount }

    /// Bytes of part `number` (1-based); 0 for a number outside the plan, which no part of it
    /// can match (see `holds`).
    public func size(ofPart number: Int) -> Int64 {
        guard contains(part: number) else { return 0 }
        if number < partCount { return partSize }
        return objectSize - Int64(partCount - 1) * partSize
    }

    /// Byte range of part `number` (1-based), inclusive; nil for the empty object's one part and
    /// for a number outside the plan.
    public func range(ofPart number: Int) -> ClosedRange<Int64>? {
        let size = size(ofPart: number)
        guard size > 0 else { return nil }
        let start = Int64(number - 1) * partSize
        return start...(start + size - 1)
    }

    /// Whether a recorded part is exactly part `part.number` of this plan (number and size).
    public func holds(_ part: RecordedPart) -> Bool {
        contains(part: part.number) && part.size == size(ofPart: part.number)
    }

    /// Whether one PutObject (or CopyObject) does the whole job.
    public var isSinglePart: Bool { partCount == 1 }

    static func ceilDiv(_ a: Int64, _ b: Int64) -> Int64 { a == 0 ? 0 : (a - 1) / b + 1 }
}
