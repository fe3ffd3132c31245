import Adapters
import Foundation
import TestSupport
import Testing
import TransferEngine

@testable import Gateway

/// Cancel of an upload that waits for bytes, by the jobs API and by tus termination alike: one
/// engine function (`Cancellation`) aborts its S3 upload and removes what it left on the way:
/// the spool's tail file and the tail pieces staged in the bucket.
@Suite struct CancellationTests {
    static let tus = ("Tus-Resumable", "1.0.0")

    /// A tus upload of `length` bytes with `sent` of them received: its tail is on the spool and
    /// staged in the bucket. Returns its id.
    static func tusUpload(_ rig: RouteRig, length: Int = 8 << 20, sent: Int = 1000) async throws -> String {
        let created = try await rig.send(
            "POST", "/v1/tus/", as: "alice",
            headers: [
                tus, ("Upload-Length", String(length)), ("Upload-Metadata", "key \(Data("c.bin".utf8).base64EncodedString())"),
            ])
        let id = try #require(created.headers["location"]?.split(separator: "/").last.map(String.init))
        // The receiver's lease and part timers run on the rig's manual clock.
        let patch = try await driving(rig.clock) {
            try await rig.send(
                "PATCH", "/v1/tus/\(id)", as: "alice", body: [UInt8](repeating: 7, count: sent),
                headers: [
                    tus, ("Content-Type", "application/offset+octet-stream"), ("Upload-Offset", "0"),
                ])
        }
        #expect(patch.status == 204 && patch.headers["upload-offset"] == String(sent))
        return id
    }

    static func staged(_ rig: RouteRig, _ id: String) -> [String] {
        rig.objects.keys(under: "\(EngineSettings().stagingPrefix)\(id)/")
    }

    static func spooled(_ rig: RouteRig, _ id: String) -> [SpoolEntry] {
        rig.spool.files().filter { $0.jobID == id }
    }

    @Test func tusTerminationLeavesNoSpooledBytesNorStagedTail() async throws {
        let rig = try RouteRig()
        let id = try await Self.tusUpload(rig)
        #expect(!Self.staged(rig, id).isEmpty && !Self.spooled(rig, id).isEmpty && rig.spool.usage.used > 0, "the tail is kept")
        let terminated = try await rig.send("DELETE", "/v1/tus/\(id)", as: "alice", headers: [Self.tus])
        #expect(terminated.status == 204 && terminated.headers["tus-resumable"] == "1.0.0")
        #expect(Self.staged(rig, id).isEmpty, "staged tail pieces left: \(Self.staged(rig, id))")
        #expect(Self.spooled(rig, id).isEmpty && rig.spool.usage.used == 0)
        #expect(rig.objects.openUploads == 0)
        let gone = try await rig.send("HEAD", "/v1/tus/\(id)", as: "alice", headers: [Self.tus])
        #expect(gone.status == 410)
    }

    /// The instance that wrote a tus upload's object died before finishing its job: every byte
    /// is committed, so the client's HEAD sees nothing left to send. That HEAD finishes the job
    /// with the object S3 holds (after the dead request's lease lapses), never an empty one.
    @Test func aHeadFinishesAnUploadWhoseLastRequestDiedAfterWritingTheObject() async throws {
        let rig = try RouteRig()
        let length = 3000
        let created = try await rig.send(
            "POST", "/v1/tus/", as: "alice",
            headers: [Self.tus, ("Upload-Length", String(length)), ("Upload-Metadata", "key \(Data("d.bin".utf8).base64EncodedString())")])
        let id = try #require(created.headers["location"]?.split(separator: "/").last.map(String.init))
        let job = try #require(try await rig.store.job(id: id))
        // What the dead request left: the object written and recorded as its one part, the job
        // marked completing, its lease lapsed.
        let body = [UInt8](repeating: 9, count: length)
        let etag = try await rig.objects.putObject(key: try #require(job.objectKey), data: .bytes(body), attributes: ObjectAttributesSpec())
        let claim = try #require(try await rig.store.claimUpload(id: id, owner: "gone", leaseMilliseconds: 30_000))
        _ = try await rig.store.recordUploadPart(RecordedPart(number: 1, size: Int64(length), etag: etag), under: claim.lease)
        try await rig.store.beginCompleting(claim.lease)
        rig.store.expireLease(id)
        let head = try await driving(rig.clock) { try await rig.send("HEAD", "/v1/tus/\(id)", as: "alice", headers: [Self.tus]) }
        #expect(head.status == 200 && head.headers["upload-offset"] == String(length))
        let finished = try #require(try await rig.store.job(id: id))
        #expect(finished.state == Job.State.completed && finished.etag == etag, "\(finished.state)")
        #expect(rig.objects.object(job.objectKey ?? "")?.count == length)
    }

    @Test func jobsCancelOfAPausedUploadLeavesNothingEither() async throws {
        let rig = try RouteRig()
        let id = try await Self.tusUpload(rig)
        #expect(try await rig.send("POST", "/v1/jobs/\(id)/pause", as: "alice").status == 200)
        let canceled = try await rig.send("POST", "/v1/jobs/\(id)/cancel", as: "alice")
        #expect(canceled.status == 200 && canceled.json["state"] as? String == "canceled" && canceled.headers["etag"] != nil)
        #expect(Self.staged(rig, id).isEmpty && Self.spooled(rig, id).isEmpty && rig.spool.usage.used == 0)
        #expect(rig.objects.openUploads == 0)
    }

    @Test func anUploadWithWholePartsHasItsS3UploadAbortedOnTermination() async throws {
        let rig = try RouteRig()
        let id = try await Self.tusUpload(rig, length: 12 << 20, sent: (5 << 20) + 10)
        #expect(rig.objects.openUploads == 1 && !Self.staged(rig, id).isEmpty)
        #expect(try await rig.send("DELETE", "/v1/tus/\(id)", as: "alice", headers: [Self.tus]).status == 204)
        #expect(rig.objects.openUploads == 0 && Self.staged(rig, id).isEmpty && Self.spooled(rig, id).isEmpty)
    }

    /// One-way completion: a job that began writing its object is neither canceled nor cleaned.
    @Test func aCompletingUploadRefusesBothWays() async throws {
        let rig = try RouteRig()
        let id = try await Self.tusUpload(rig)
        let claim = try #require(try await rig.store.claimUpload(id: id, owner: "elsewhere", leaseMilliseconds: 60_000))
        try await rig.store.beginCompleting(claim.lease)
        let tus = try await rig.send("DELETE", "/v1/tus/\(id)", as: "alice", headers: [Self.tus])
        #expect(tus.status == 409 && tus.code == "job_completing" && tus.headers["tus-resumable"] == "1.0.0")
        let jobs = try await rig.send("POST", "/v1/jobs/\(id)/cancel", as: "alice")
        #expect(jobs.status == 409 && jobs.code == "job_completing")
        #expect(try await rig.store.job(id: id)?.state == .running)
        #expect(!Self.staged(rig, id).isEmpty, "nothing of a completing upload is removed")
    }

    @Test func aCompletedUploadIsNotTerminated() async throws {
        let rig = try RouteRig()
        let id = try await Self.tusUpload(rig, length: 10, sent: 10)
        let tus = try await rig.send("DELETE", "/v1/tus/\(id)", as: "alice", headers: [Self.tus])
        #expect(tus.status == 409 && tus.code == "job_not_pending")
        let jobs = try await rig.send("POST", "/v1/jobs/\(id)/cancel", as: "alice")
        #expect(jobs.status == 200 && jobs.json["state"] as? String == "completed")
    }
}
