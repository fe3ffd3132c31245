import Testing

@testable import TransferEngine

private let MiB: Int64 = 1024 * 1024
private let five = 5 * MiB

struct PlanCase: Sendable, CustomTestStringConvertible {
    let size: Int64
    let partSize: Int64
    let parts: Int
    let lastPart: Int64
    var testDescription: String { "\(size) bytes" }
}

/// Boundaries on both sides: empty, one byte, one part ± 1, the 10,000-part edge ± 1, the
/// 5 TiB limit.
@Test(arguments: [
    PlanCase(size: 0, partSize: five, parts: 1, lastPart: 0),
    PlanCase(size: 1, partSize: five, parts: 1, lastPart: 1),
    PlanCase(size: five - 1, partSize: five, parts: 1, lastPart: five - 1),
    PlanCase(size: five, partSize: five, parts: 1, lastPart: five),
    PlanCase(size: five + 1, partSize: five, parts: 2, lastPart: 1),
    PlanCase(size: 10_000 * five - 1, partSize: five, parts: 10_000, lastPart: five - 1),
    PlanCase(size: 10_000 * five, partSize: five, parts: 10_000, lastPart: five),
    // One byte past 10,000 parts: the part size grows to the next whole MiB.
    PlanCase(size: 10_000 * five + 1, partSize: 6 * MiB, parts: 8_334, lastPart: 10_000 * five + 1 - 8_333 * 6 * MiB),
    // 5 TiB: 5 TiB / 10,000 rounded up to whole MiB is 525 MiB, 9,987 parts.
    PlanCase(size: PartPlan.maximumObjectSize, partSize: 525 * MiB, parts: 9_987, lastPart: PartPlan.maximumObjectSize - 9_986 * 525 * MiB),
])
func partPlanBoundaries(_ c: PlanCase) throws {
    let plan = try PartPlan(objectSize: c.size, requestedPartSize: five)
    #expect(plan.partSize == c.partSize)
    #expect(plan.partCount == c.parts)
    #expect(plan.size(ofPart: plan.partCount) == c.lastPart)
    #expect(plan.partCount <= PartPlan.maximumPartCount)
    // Every part but the last is the same size, and the parts add up.
    #expect(Int64(plan.partCount - 1) * plan.partSize + plan.size(ofPart: plan.partCount) == c.size)
    if let last = plan.range(ofPart: plan.partCount) { #expect(last.upperBound == c.size - 1) }
}

@Test func tooLargeAndBadPartSizesAreRefused() {
    #expect(throws: PartPlan.PlanError.objectTooLarge(limit: PartPlan.maximumObjectSize)) {
        _ = try PartPlan(objectSize: PartPlan.maximumObjectSize + 1, requestedPartSize: five)
    }
    #expect(throws: PartPlan.PlanError.objectTooLarge(limit: 100)) {
        _ = try PartPlan(objectSize: 101, requestedPartSize: five, maximumObjectSize: 100)
    }
    #expect(throws: PartPlan.PlanError.partSizeOutOfRange) { _ = try PartPlan(objectSize: 10, requestedPartSize: five - 1) }
    #expect(throws: PartPlan.PlanError.partSizeOutOfRange) {
        _ = try PartPlan(objectSize: 10, requestedPartSize: PartPlan.maximumPartSize + 1)
    }
    #expect(throws: PartPlan.PlanError.negativeSize) { _ = try PartPlan(objectSize: -1, requestedPartSize: five) }
}

@Test func rangesTileTheObject() throws {
    let plan = try PartPlan(objectSize: 3 * five + 7, requestedPartSize: five)
    #expect(plan.range(ofPart: 1) == 0...(five - 1))
    #expect(plan.range(ofPart: 2) == five...(2 * five - 1))
    #expect(plan.range(ofPart: 4) == (3 * five)...(3 * five + 6))
    #expect(try PartPlan(objectSize: 0, requestedPartSize: five).range(ofPart: 1) == nil)
}

/// Part numbers read back from a store or from S3 may belong to another plan: asking about one
/// outside this plan answers "none of mine", never a trap.
@Test func partsOutsideThePlanAreNotOfIt() throws {
    let plan = try PartPlan(objectSize: 2 * five + 1, requestedPartSize: five)
    for number in [-1, 0, 4, 10_000, Int.max] {
        #expect(!plan.contains(part: number) && plan.size(ofPart: number) == 0 && plan.range(ofPart: number) == nil)
        #expect(!plan.holds(RecordedPart(number: number, size: 0, etag: "x")))
    }
    #expect(plan.holds(RecordedPart(number: 3, size: 1, etag: "x")) && !plan.holds(RecordedPart(number: 3, size: five, etag: "x")))
    let empty = try PartPlan(objectSize: 0, requestedPartSize: five)
    #expect(empty.holds(RecordedPart(number: 1, size: 0, etag: "x")) && !empty.holds(RecordedPart(number: 2, size: 0, etag: "x")))
}
