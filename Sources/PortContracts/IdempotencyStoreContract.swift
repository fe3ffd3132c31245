import Gateway
import Testing

/// The idempotency keys' contract (`IdempotencyStore`), as PostgreSQL keeps it:
/// `InMemoryIdempotencyStore` must behave the same. Run by `IdempotencyStoreContractTests`
/// (the twin) and `IdempotencyStoreContractLiveTests` (PostgreSQL).
public enum IdempotencyStoreContract {
    /// Every case, in the order they are listed.
    public static let cases: [ContractCase<StoreFixture>] = [
        theFirstClaimMakesTheThingAndRepeatsSeeItsAnswer, releaseLetsAFailedRequestsKeyGo, aKeyLivesItsLifetime,
        anUnansweredClaimIsLetGoAfterAMinute,
    ]

    /// A day, the gateway's lifetime of a key.
    static let day = 86_400

    /// The answer a case records: the one place answers are made.
    static func answer(_ status: Int, location: String?, body: [UInt8] = []) -> StoredAnswer {
        StoredAnswer(status: status, location: location, body: body)
    }

    static let theFirstClaimMakesTheThingAndRepeatsSeeItsAnswer = ContractCase<StoreFixture>(
        "the first claim of a key makes the thing; a repeat sees it in progress, then its answer, with the first fingerprint"
    ) { f in
        let store = f.idempotency
        let alice = f.owner("alice"), bob = f.owner("bob")
        #expect(try await store.claim(owner: alice, scope: "jobs", key: "k", fingerprint: "fp-1", lifetimeSeconds: day) == .claimed)
        #expect(
            try await store.claim(owner: alice, scope: "jobs", key: "k", fingerprint: "fp-2", lifetimeSeconds: day)
                == .inProgress(fingerprint: "fp-1"))
        let made = answer(201, location: "/v1/jobs/1", body: [1, 2, 3])
        try await store.record(owner: alice, scope: "jobs", key: "k", answer: made)
        #expect(
            try await store.claim(owner: alice, scope: "jobs", key: "k", fingerprint: "fp-2", lifetimeSeconds: day)
                == .answered(made, fingerprint: "fp-1"))
        // A key is the identity's and the route's: the same name elsewhere is another key.
        #expect(try await store.claim(owner: bob, scope: "jobs", key: "k", fingerprint: "fp-1", lifetimeSeconds: day) == .claimed)
        #expect(try await store.claim(owner: alice, scope: "tus", key: "k", fingerprint: "fp-1", lifetimeSeconds: day) == .claimed)
        let bare = answer(200, location: nil)
        try await store.record(owner: alice, scope: "tus", key: "k", answer: bare)
        #expect(
            try await store.claim(owner: alice, scope: "tus", key: "k", fingerprint: "fp-9", lifetimeSeconds: day)
                == .answered(bare, fingerprint: "fp-1"))
        // An answer recorded for a key nobody claimed is not kept.
        try await store.record(owner: alice, scope: "jobs", key: "never", answer: made)
        #expect(try await store.claim(owner: alice, scope: "jobs", key: "never", fingerprint: "fp-1", lifetimeSeconds: day) == .claimed)
    }

    static let releaseLetsAFailedRequestsKeyGo = ContractCase<StoreFixture>(
        "release lets an unanswered key go, so the retry makes the thing; an answered key stays"
    ) { f in
        let store = f.idempotency
        let alice = f.owner("alice")
        _ = try await store.claim(owner: alice, scope: "jobs", key: "k", fingerprint: "fp-1", lifetimeSeconds: day)
        try await store.release(owner: alice, scope: "jobs", key: "k")
        #expect(try await store.claim(owner: alice, scope: "jobs", key: "k", fingerprint: "fp-2", lifetimeSeconds: day) == .claimed)
        let made = answer(201, location: "/v1/jobs/2")
        try await store.record(owner: alice, scope: "jobs", key: "k", answer: made)
        try await store.release(owner: alice, scope: "jobs", key: "k")
        #expect(
            try await store.claim(owner: alice, scope: "jobs", key: "k", fingerprint: "fp-3", lifetimeSeconds: day)
                == .answered(made, fingerprint: "fp-2"))
        try await store.release(owner: alice, scope: "jobs", key: "unknown")
    }

    static let aKeyLivesItsLifetime = ContractCase<StoreFixture>("a key answers for its lifetime, then is new again") { f in
        let store = f.idempotency
        let alice = f.owner("alice")
        _ = try await store.claim(owner: alice, scope: "jobs", key: "k", fingerprint: "fp-1", lifetimeSeconds: 100)
        let made = answer(201, location: "/v1/jobs/3")
        try await store.record(owner: alice, scope: "jobs", key: "k", answer: made)
        // Margins of 10 s on each side: on PostgreSQL real time passes too, and a loaded machine
        // takes seconds between two statements.
        try await f.age(milliseconds: 90_000)
        #expect(
            try await store.claim(owner: alice, scope: "jobs", key: "k", fingerprint: "fp-2", lifetimeSeconds: 100)
                == .answered(made, fingerprint: "fp-1"))
        try await f.age(milliseconds: 20_000)
        #expect(try await store.claim(owner: alice, scope: "jobs", key: "k", fingerprint: "fp-2", lifetimeSeconds: 100) == .claimed)
        #expect(
            try await store.claim(owner: alice, scope: "jobs", key: "k", fingerprint: "fp-3", lifetimeSeconds: 100)
                == .inProgress(fingerprint: "fp-2"))
    }

    static let anUnansweredClaimIsLetGoAfterAMinute = ContractCase<StoreFixture>(
        "a claim left unanswered for a minute (its request died) is let go; an answered one is not"
    ) { f in
        let store = f.idempotency
        let alice = f.owner("alice")
        _ = try await store.claim(owner: alice, scope: "jobs", key: "dead", fingerprint: "fp-1", lifetimeSeconds: day)
        _ = try await store.claim(owner: alice, scope: "jobs", key: "done", fingerprint: "fp-1", lifetimeSeconds: day)
        let made = answer(201, location: "/v1/jobs/4")
        try await store.record(owner: alice, scope: "jobs", key: "done", answer: made)
        try await f.age(milliseconds: 50_000)
        #expect(
            try await store.claim(owner: alice, scope: "jobs", key: "dead", fingerprint: "fp-2", lifetimeSeconds: day)
                == .inProgress(fingerprint: "fp-1"))
        try await f.age(milliseconds: 20_000)
        #expect(try await store.claim(owner: alice, scope: "jobs", key: "dead", fingerprint: "fp-2", lifetimeSeconds: day) == .claimed)
        #expect(
            try await store.claim(owner: alice, scope: "jobs", key: "done", fingerprint: "fp-2", lifetimeSeconds: day)
                == .answered(made, fingerprint: "fp-1"))
    }
}
