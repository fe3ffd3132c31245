import Foundation
import TestSupport
import Testing
import TransferEngine

@testable import Gateway

/// `/v1/jobs` through the real router over in-memory ports: no stack.
@Suite struct JobRoutesTests {
    @Test func anUploadJobTakesItsBytesAndCompletes() async throws {
        let rig = try RouteRig()
        let created = try await rig.send(
            "POST", "/v1/jobs", as: "alice",
            json: ["type": "upload", "accessLevel": "private", "key": "a.bin", "size": 11])
        #expect(created.status == 201 && created.json["state"] as? String == "pending")
        let id = try #require(created.json["id"] as? String)
        let put = try await rig.send("PUT", "/v1/jobs/\(id)/data", as: "alice", body: Array("hello world".utf8))
        #expect(put.status == 200 && put.json["state"] as? String == "completed", "\(put.json)")
        #expect(rig.objects.object("private/alice/a.bin") == Array("hello world".utf8))
        #expect(put.headers["upload-offset"] == "11")
    }

    @Test func pauseResumeAndCancelFollowTheLifecycle() async throws {
        let rig = try RouteRig()
        let created = try await rig.send(
            "POST", "/v1/jobs", as: "alice",
            json: [
                "type": "copy", "source": ["accessLevel": "private", "key": "s"], "destination": ["accessLevel": "private", "key": "d"],
            ])
        let id = try #require(created.json["id"] as? String)
        #expect(try await rig.send("POST", "/v1/jobs/\(id)/pause", as: "alice").json["state"] as? String == "paused")
        #expect(try await rig.send("POST", "/v1/jobs/\(id)/pause", as: "alice").status == 200, "idempotent")
        #expect(try await rig.send("POST", "/v1/jobs/\(id)/resume", as: "alice").json["state"] as? String == "queued")
        #expect(try await rig.send("POST", "/v1/jobs/\(id)/cancel", as: "alice").json["state"] as? String == "canceled")
        #expect(
            try await rig.send("POST", "/v1/jobs/\(id)/resume", as: "alice").json["state"] as? String == "canceled",
            "a final state does not move")
        #expect(try await rig.send("GET", "/v1/jobs/\(id)", as: "bob").status == 404, "another identity's job does not exist")
        #expect(try await rig.send("POST", "/v1/jobs/\(id)/cancel", as: "bob").status == 404)
    }

    /// `POST /v1/jobs/{id}/retry`: a job failed retryably goes back to wait with its error as
    /// `lastError`; a second retry changes nothing; a job failed for good, or not failed, is 409
    /// `job_not_retryable`; another identity's job does not exist.
    @Test func retryResumesOnlyAJobFailedRetryably() async throws {
        let rig = try RouteRig()
        let copy: [String: Any] = [
            "type": "copy", "source": ["accessLevel": "private", "key": "s"], "destination": ["accessLevel": "private", "key": "d"],
        ]
        var ids: [String] = []
        for _ in 0..<2 { ids.append(try #require(try await rig.send("POST", "/v1/jobs", as: "alice", json: copy).json["id"] as? String)) }
        // The first fails in a way a retry may get past, the second for good (claimed in either order).
        for _ in 0..<2 {
            let (job, lease) = try #require(try await rig.store.claim(owner: "i", leaseMilliseconds: 30_000))
            let failure = job.id == ids[0] ? JobFailure(.stalled, retryable: true) : JobFailure(.accessDenied)
            try await rig.store.finish(lease, state: .failed, etag: nil, error: failure)
        }
        let failed = try await rig.send("GET", "/v1/jobs/\(ids[0])", as: "alice")
        let error = failed.json["error"] as? [String: Any]
        #expect(error?["code"] as? String == "stalled" && error?["retryable"] as? Bool == true, "\(failed.json)")
        #expect(failed.json.keys.contains("retryAt") && failed.json.keys.contains("lastError"))
        #expect(try await rig.send("POST", "/v1/jobs/\(ids[0])/retry", as: "bob").status == 404)
        let retried = try await rig.send("POST", "/v1/jobs/\(ids[0])/retry", as: "alice")
        #expect(retried.status == 200 && retried.json["state"] as? String == "queued", "\(retried.json)")
        #expect((retried.json["lastError"] as? [String: Any])?["code"] as? String == "stalled" && retried.json["error"] is NSNull)
        let again = try await rig.send("POST", "/v1/jobs/\(ids[0])/retry", as: "alice")
        #expect(again.status == 200 && again.json["state"] as? String == "queued")
        let forGood = try await rig.send("POST", "/v1/jobs/\(ids[1])/retry", as: "alice")
        #expect(forGood.status == 409 && forGood.json["code"] as? String == "job_not_retryable", "\(forGood.json)")
        _ = try await rig.send("POST", "/v1/jobs/\(ids[0])/cancel", as: "alice")
        let canceled = try await rig.send("POST", "/v1/jobs/\(ids[0])/retry", as: "alice")
        #expect(canceled.status == 409 && canceled.json["code"] as? String == "job_not_retryable")
    }

    /// `stallTimeoutSeconds` is a copy's and an import's option, bounded; an upload job does
    /// not take it (its client sends the bytes when it sends them).
    @Test func stallTimeoutIsACopyAndImportOption() async throws {
        let rig = try RouteRig()
        func copy(_ stall: Any) -> [String: Any] {
            [
                "type": "copy", "stallTimeoutSeconds": stall, "source": ["accessLevel": "private", "key": "s"],
                "destination": ["accessLevel": "private", "key": "d"],
            ]
        }
        #expect(try await rig.send("POST", "/v1/jobs", as: "alice", json: copy(10)).status == 201)
        for (bad, code) in [(0, "validation_failed"), (86_401, "validation_failed"), ("10", "invalid_json")] as [(Any, String)] {
            let refused = try await rig.send("POST", "/v1/jobs", as: "alice", json: copy(bad))
            #expect(refused.status == 400 && refused.json["code"] as? String == code, "\(bad): \(refused.json)")
        }
        let upload = try await rig.send(
            "POST", "/v1/jobs", as: "alice",
            json: ["type": "upload", "accessLevel": "private", "key": "u.bin", "stallTimeoutSeconds": 10])
        #expect(upload.status == 400 && upload.json["code"] as? String == "option_not_supported", "\(upload.json)")
    }

    /// A job that has begun to write its object refuses pause and cancel with 409
    /// `job_completing`, running or handed back (`pending`), on the jobs API and tus alike.
    @Test func aCompletingJobRefusesPauseAndCancel() async throws {
        let rig = try RouteRig()
        let created = try await rig.send(
            "POST", "/v1/jobs", as: "alice",
            json: ["type": "upload", "accessLevel": "private", "key": "c.bin", "size": 11])
        let id = try #require(created.json["id"] as? String)
        let claim = try #require(try await rig.store.claimUpload(id: id, owner: "i", leaseMilliseconds: 30_000))
        try await rig.store.beginCompleting(claim.lease)
        for action in ["cancel", "pause"] {
            let refused = try await rig.send("POST", "/v1/jobs/\(id)/\(action)", as: "alice")
            #expect(refused.status == 409 && refused.json["code"] as? String == "job_completing", "\(action): \(refused.json)")
        }
        try await rig.store.releaseUpload(claim.lease)
        #expect(try await rig.store.job(id: id)?.state == .pending)
        let refused = try await rig.send("POST", "/v1/jobs/\(id)/cancel", as: "alice")
        #expect(refused.status == 409 && refused.json["code"] as? String == "job_completing", "handed back: \(refused.json)")
        let tus = try await rig.send("DELETE", "/v1/tus/\(id)", as: "alice", headers: [("Tus-Resumable", "1.0.0")])
        #expect(tus.status == 409, "tus termination too: \(tus.status)")
        #expect(try await rig.store.job(id: id)?.state == .pending, "nothing changed")
    }

    @Test func aLongPollAnswersWhenTheChangeIsAnnounced() async throws {
        let rig = try RouteRig()
        let created = try await rig.send(
            "POST", "/v1/jobs", as: "alice",
            json: ["type": "upload", "accessLevel": "private", "key": "w.bin"])
        let id = try #require(created.json["id"] as? String)
        let etag = try #require(created.headers["etag"])
        rig.changes.setLive(true)
        // The poll names the version it has, so the pause is a change to it whether the poll
        // reads the job before or after it (on a loaded machine, either).
        let poll = Task {
            try await rig.send("GET", "/v1/jobs/\(id)?wait=60", as: "alice", headers: [("If-None-Match", etag)]).json["state"] as? String
        }
        _ = try await rig.store.transition(id: id, .pause)
        // Announced until the poll answers (it may begin waiting after the first word);
        // unannounced, it would hold its answer for 60 s.
        let started = Date()
        let announcing = Task {
            while !Task.isCancelled {
                rig.changes.notify(id)
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        defer { announcing.cancel() }
        #expect(try await poll.value == "paused")
        #expect(Date().timeIntervalSince(started) < 5)
    }

    @Test func quotasAndRefusalsHaveTheirCodes() async throws {
        let rig = try RouteRig { $0.quota = OwnerQuota(maxActiveJobs: 2, maxOpenUploads: 5) }
        for _ in 0..<2 {
            #expect(
                try await rig.send(
                    "POST", "/v1/jobs", as: "alice",
                    json: ["type": "upload", "accessLevel": "private", "key": "q.bin"]
                ).status == 201)
        }
        let third = try await rig.send("POST", "/v1/jobs", as: "alice", json: ["type": "upload", "accessLevel": "private", "key": "q.bin"])
        #expect(third.status == 429 && third.code == "quota_exceeded" && third.headers["retry-after"] != nil)
        let unknown = try await rig.send(
            "POST", "/v1/jobs", as: "bob",
            json: [
                "type": "upload", "accessLevel": "private", "key": "k",
                "targetIdentityId": "alice",
            ])
        #expect(unknown.status == 403 && unknown.code == "forbidden")
        let noToken = try await rig.send("POST", "/v1/jobs", json: ["type": "upload"])
        #expect(noToken.status == 401 && noToken.headers["www-authenticate"] == "Bearer")
        let badSize = try await rig.send(
            "POST", "/v1/jobs", as: "bob",
            json: [
                "type": "upload", "accessLevel": "private", "key": "k",
                "partSize": 10,
            ])
        #expect(badSize.status == 400 && badSize.code == "validation_failed")
    }

    @Test func aPausedUploadRefusesBytesWithJobPaused() async throws {
        let rig = try RouteRig()
        let created = try await rig.send("POST", "/v1/jobs", as: "alice", json: ["type": "upload", "accessLevel": "private", "key": "p"])
        let id = try #require(created.json["id"] as? String)
        _ = try await rig.send("POST", "/v1/jobs/\(id)/pause", as: "alice")
        let put = try await rig.send("PUT", "/v1/jobs/\(id)/data", as: "alice", body: [1, 2, 3])
        #expect(put.status == 409 && put.code == "job_paused")
    }

    @Test func anImportOfARefusedAddressIsRefusedAtCreation() async throws {
        let rig = try RouteRig(sourceCheck: StaticSourceAddressCheck(refused: ["127.0.0.1": "a loopback address"]))
        let refused = try await rig.send(
            "POST", "/v1/jobs", as: "alice",
            json: [
                "type": "import", "sourceUrl": "http://127.0.0.1:8333/b/k", "accessLevel": "private", "key": "i",
            ])
        #expect(refused.status == 400 && refused.code == "forbidden_address")
        let detail = refused.json["detail"] as? String ?? ""
        #expect(
            detail.contains("127.0.0.1 is a loopback address") && detail.contains("GATEWAY_IMPORT_ALLOW_HOSTS")
                && detail.contains("127.0.0.1:8333"), "\(detail)")
        #expect(try await rig.store.list(owner: "alice", state: nil, kind: nil, limit: 10, after: nil).isEmpty, "no job was made")
        let allowed = try await rig.send(
            "POST", "/v1/jobs", as: "alice",
            json: [
                "type": "import", "sourceUrl": "https://files.example.com/k", "accessLevel": "private", "key": "i",
            ])
        #expect(allowed.status == 201 && allowed.json["state"] as? String == "queued")
    }

    /// The API, the event stream and webhooks render a job in one place: each shows the detail.
    @Test func aFailedJobsErrorHasACodeAndADetail() async throws {
        let rig = try RouteRig()
        let failed = Job(
            id: "6d9a4b7e-0000-4000-8000-000000000001", owner: "alice", kind: .import, state: .queued,
            objectKey: "private/alice/i", source: .url("https://files.example.com/k"), bytesTotal: nil, partSize: 5_242_880)
        _ = try await rig.store.insert(failed, quota: nil)
        // Failed as the stores record it (an insert keeps no error): claimed, then finished.
        let (_, lease) = try #require(try await rig.store.claim(owner: "rig", leaseMilliseconds: 60_000))
        try await rig.store.finish(
            lease, state: .failed, etag: nil, error: JobFailure(.retriesExhausted, cause: .sourceHTTPError, status: 404))
        let shown = try await rig.send("GET", "/v1/jobs/\(failed.id)", as: "alice")
        let error = try #require(shown.json["error"] as? [String: Any], "\(shown.json)")
        #expect(error["code"] as? String == "retries_exhausted" && error["cause"] as? String == "source_http_error")
        #expect(error["status"] as? Int == 404)
        #expect((error["detail"] as? String)?.contains("no such file at the URL") == true, "\(error)")
        let render = WebhookEventData.renderer(jobs: rig.store, clientUploads: rig.clientUploads)
        let event = WebhookEvent(id: "e", type: "job.failed", subjectID: failed.id, attempts: 1, createdAt: 0)
        let data = try #require(try await render(event))
        let webhook = try #require(try JSONSerialization.jsonObject(with: Data(data)) as? [String: Any])
        #expect((webhook["error"] as? [String: Any])?["detail"] as? String == error["detail"] as? String)
    }

    /// Every answer that shows a job which has not ended carries its eventsUrl: the creation,
    /// the GET, and the answer to bytes that leave an upload pending.
    @Test func everyAnswerShowingAnUnendedJobHasItsEventsURL() async throws {
        let rig = try RouteRig { $0.linkSecret = Array("links-of-the-route-tests-32-bytes".utf8) }
        let created = try await rig.send(
            "POST", "/v1/jobs", as: "alice",
            json: ["type": "upload", "accessLevel": "private", "key": "e.bin", "size": 11])
        let id = try #require(created.json["id"] as? String)
        #expect((created.json["eventsUrl"] as? String)?.contains("/v1/jobs/\(id)/events?") == true, "\(created.json)")
        let part = try await rig.send("PUT", "/v1/jobs/\(id)/data", as: "alice", body: Array("hello".utf8))
        #expect(part.status == 200 && part.json["state"] as? String == "pending", "\(part.json)")
        #expect((part.json["eventsUrl"] as? String)?.hasPrefix("http://rig/v1/jobs/\(id)/events?") == true, "\(part.json)")
        let rest = try await rig.send(
            "PATCH", "/v1/jobs/\(id)/data", as: "alice", body: Array(" world".utf8),
            headers: [("Upload-Offset", "5"), ("Content-Type", "application/offset+octet-stream")])
        #expect(rest.json["state"] as? String == "completed" && rest.json["eventsUrl"] == nil, "\(rest.json)")
    }
}
