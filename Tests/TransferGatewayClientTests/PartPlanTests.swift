import Foundation
import Testing

@testable import TransferGatewayClient

/// Part arithmetic at every boundary: one byte under, at and over a part; empty files.
struct PartPlanTests {
    static let mib: Int64 = 1 << 20

    static let mib5: Int64 = 5 << 20
    /// (size, part size, parts).
    static let counts: [(Int64, Int64, Int)] = [
        (0, mib5, 1), (1, mib5, 1), (mib5 - 1, mib5, 1), (mib5, mib5, 1), (mib5 + 1, mib5, 2), (5 * mib5, mib5, 5),
        (5 * mib5 + 7, mib5, 6), (1, 1, 1), (10, .max, 1), (.max, .max, 1), (.max, 1 << 62, 2),
    ]

    @Test(arguments: counts)
    func partCount(size: Int64, partSize: Int64, count: Int) {
        #expect(PartPlan(size: size, partSize: partSize).partCount == count)
    }

    @Test func everyPartButTheLastIsFull() {
        let plan = PartPlan(size: 12 * Self.mib + 7, partSize: 5 * Self.mib)
        #expect(plan.range(of: 1) == 0..<(5 * Self.mib))
        #expect(plan.range(of: 2) == (5 * Self.mib)..<(10 * Self.mib))
        #expect(plan.range(of: 3) == (10 * Self.mib)..<(12 * Self.mib + 7))
        let total = (1...plan.partCount).reduce(Int64(0)) { $0 + Int64(plan.range(of: $1).count) }
        #expect(total == plan.size)
    }

    /// A part size near `Int64.max` (a gateway's answer) is one part of the whole file, no trap.
    @Test func aHugePartSizeIsOnePart() {
        #expect(PartPlan(size: 10, partSize: .max).range(of: 1) == 0..<10)
        #expect(PartPlan(size: 10, partSize: .max).missingParts(held: [:]) == [1])
        #expect(PartPlan(size: .max, partSize: 1 << 62).range(of: 2) == (1 << 62)..<Int64.max)
    }

    /// A gateway's part size that leaves no upload possible is refused as a bad answer: none,
    /// zero, negative, or one making more than 10,000 parts (and exactly 10,000 is taken).
    @Test func anUploadsPlanIsRefusedPastS3sPartLimit() throws {
        #expect(try PartPlan.forUpload(size: 10_000, partSize: 1).partCount == 10_000)
        #expect(try PartPlan.forUpload(size: 10_000 * Self.mib5, partSize: Self.mib5).partCount == PartPlan.maximumPartCount)
        for partSize: Int64? in [nil, 0, -1] {
            #expect(throws: TransferError.self) { try PartPlan.forUpload(size: 1, partSize: partSize) }
        }
        let refusal = #expect(throws: TransferError.self) { try PartPlan.forUpload(size: 10_001, partSize: 1) }
        #expect(refusal?.code == .badResponse)
        #expect(throws: TransferError.self) { try PartPlan.forUpload(size: .max, partSize: 1) }
    }

    @Test func emptyFileIsOneEmptyPart() {
        #expect(PartPlan(size: 0, partSize: 5 * Self.mib).range(of: 1).isEmpty)
    }

    @Test func missingPartsSkipThoseHeldWhole() {
        let plan = PartPlan(size: 25 * Self.mib, partSize: 5 * Self.mib)
        #expect(plan.missingParts(held: [:]) == [1, 2, 3, 4, 5])
        #expect(plan.missingParts(held: [1: 5 * Self.mib, 3: 5 * Self.mib]) == [2, 4, 5])
        // A held part of the wrong size is sent again.
        #expect(plan.missingParts(held: [1: 5 * Self.mib, 2: 1]) == [2, 3, 4, 5])
        #expect(plan.missingParts(held: Dictionary(uniqueKeysWithValues: (1...5).map { ($0, 5 * Self.mib) })).isEmpty)
    }

    /// A plan read back from a damaged store is refused, not trusted: a part size of 0 would
    /// divide by zero, a negative size would make a range that ends before it starts, and
    /// billions of parts would fill memory with their numbers.
    @Test(arguments: [
        #"{"size":10,"partSize":0}"#, #"{"size":10,"partSize":-5}"#, #"{"size":-1,"partSize":5}"#,
        #"{"size":10001,"partSize":1}"#, #"{"size":9223372036854775807,"partSize":1}"#,
    ])
    func aDamagedPlanIsRefusedWhenDecoded(json: String) {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(PartPlan.self, from: Data(json.utf8)) }
    }

    @Test func aPlanRoundTrips() throws {
        let plan = PartPlan(size: 12 * Self.mib + 3, partSize: 5 * Self.mib)
        #expect(try JSONDecoder().decode(PartPlan.self, from: JSONEncoder().encode(plan)) == plan)
    }

    @Test func aNegativeSizeIsAFileErrorForAnUpload() {
        let refusal = #expect(throws: TransferError.self) { try PartPlan.forUpload(size: -1, partSize: 5 * Self.mib) }
        #expect(refusal?.code == .fileError)
    }
}
