/// How a file splits into the parts of a client upload: every part `partSize` bytes but the
/// last, which holds the rest (S3 numbers parts from 1; Cloudflare R2 requires equal parts).
///
/// Pure arithmetic, tested at each boundary (`PartPlanTests`).
public struct PartPlan: Codable, Hashable, Sendable {
    /// The file's size in bytes.
    public let size: Int64
    /// The size of every part but the last.
    public let partSize: Int64

    /// A plan; `size` must not be negative and `partSize` must be positive.
    public init(size: Int64, partSize: Int64) {
        precondition(size >= 0, "a file's size is not negative")
        precondition(partSize > 0, "a part size is positive")
        self.size = size
        self.partSize = partSize
    }

    /// A plan read back (from an app's own store, say): one with a negative size, a part size
    /// that is not positive or more parts than S3 takes is refused with
    /// `DecodingError.dataCorrupted`, never trusted.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let size = try container.decode(Int64.self, forKey: .size)
        let partSize = try container.decode(Int64.self, forKey: .partSize)
        let refusal = DecodingError.dataCorrupted(
            DecodingError.Context(
                codingPath: container.codingPath,
                debugDescription: "a plan's size is not negative, its part size is positive, and it has at most 10,000 parts"))
        guard size >= 0, partSize > 0 else { throw refusal }
        self.init(size: size, partSize: partSize)
        guard partCount <= Self.maximumPartCount else { throw refusal }
    }

    /// The number of parts: at least one (an empty file is one empty part). Counted without
    /// `size + partSize`, which a part size near `Int64.max` (a gateway's answer) would overflow.
    public var partCount: Int { size <= 0 ? 1 : Int((size - 1) / partSize + 1) }

    /// The most parts S3 takes in one multipart upload.
    public static let maximumPartCount = 10_000

    /// The plan of an upload of `size` bytes (`fileError` when negative: a record read back
    /// from a damaged store) the gateway answered with `partSize`: `badResponse` when it gave
    /// none, or one that is not positive or makes more parts than S3 takes (no such upload could
    /// complete, and a list of millions of part numbers would only fill memory).
    static func forUpload(size: Int64, partSize: Int64?) throws(TransferError) -> PartPlan {
        guard size >= 0 else { throw TransferError(.fileError, "a file's size cannot be negative (\(size) bytes)") }
        guard let partSize, partSize > 0 else { throw TransferError(.badResponse, "the gateway gave the upload no part size") }
        let plan = PartPlan(size: size, partSize: partSize)
        guard plan.partCount <= maximumPartCount else {
            throw TransferError(.badResponse, "the gateway's part size (\(partSize) bytes) makes more than \(maximumPartCount) parts")
        }
        return plan
    }

    /// Part `number`'s bytes in the file (`number` from 1 to `partCount`).
    public func range(of number: Int) -> Range<Int64> {
        precondition(number >= 1 && number <= partCount, "part \(number) is outside 1...\(partCount)")
        let start = Int64(number - 1) * partSize
        return start..<(size - start <= partSize ? size : start + partSize)
    }

    /// The parts still to send, given those S3 holds (by number and size): a held part of the
    /// wrong size is sent again.
    public func missingParts(held: [Int: Int64]) -> [Int] {
        (1...partCount).filter { held[$0] != Int64(range(of: $0).count) }
    }
}
