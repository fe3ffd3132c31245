import Foundation
import Postgres
import TransferEngine

/// The job lifecycle's rules as the PostgreSQL stores bind them: states as `text[]` literals,
/// and the per-identity quota checked in the statement that creates.
extension JobLifecycle {
    /// The states `action` may move a job from, as a PostgreSQL `text[]` literal (a bind value).
    /// A text[] literal of any strings: each element quoted, `"` and `\` escaped.
    static func arrayLiteral(_ items: [String]) -> String {
        "{"
            + items.map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
            .joined(separator: ",") + "}"
    }

    static func textArray(from action: Action) -> String {
        textArray(states(from: action))
    }

    /// `states` as a PostgreSQL `text[]` literal (a bind value), so SQL never restates a set of states.
    static func textArray<S: Sequence<Job.State>>(_ states: S) -> String {
        "{" + states.map(\.rawValue).sorted().joined(separator: ",") + "}"
    }
}

/// The per-identity limits, checked inside the inserting transaction under a lock on the
/// identity, so two requests racing cannot both take the last place.
enum OwnerLimits {
    /// What is being created: a job (an upload job counts as an open upload too), or a
    /// client-driven upload (not a job).
    enum Creation {
        case job(upload: Bool)
        case clientUpload
    }

    static func check(_ quota: OwnerQuota, owner: String, creating: Creation, on connection: PostgresConnection) throws {
        try connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\("gateway-owner:" + owner), 0)) AS locked")
        let active = JobLifecycle.textArray(Job.State.active)
        let row = try connection.query(
            """
            SELECT (SELECT count(*) FROM jobs WHERE owner = \(owner) AND state = ANY(\(active)::text[])) AS active,
                   (SELECT count(*) FROM jobs WHERE owner = \(owner) AND type = 'upload'
                                                AND state = ANY(\(active)::text[]))
                 + (SELECT count(*) FROM uploads WHERE owner = \(owner) AND state IN ('creating', 'open')) AS uploads
            """
        ).first
        let activeJobs = try row?.int("active") ?? 0
        let uploads = try row?.int("uploads") ?? 0
        switch creating {
        case .job(let upload):
            if activeJobs >= quota.maxActiveJobs { throw QuotaExceeded(limit: .activeJobs, maximum: quota.maxActiveJobs) }
            if upload && uploads >= quota.maxOpenUploads { throw QuotaExceeded(limit: .openUploads, maximum: quota.maxOpenUploads) }
        case .clientUpload:
            if uploads >= quota.maxOpenUploads { throw QuotaExceeded(limit: .openUploads, maximum: quota.maxOpenUploads) }
        }
    }
}
