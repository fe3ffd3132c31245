import Auth
import Foundation
import HTTPServer

/// The one lookup of a resource named by an id in the path (a job, a tus upload, a client
/// upload): the token checked first, the id a UUID, the resource the caller's own (or, where
/// operators may read, an operator's to see). Anything else is 404, never 403: another
/// identity's ids do not exist for the caller.
enum OwnedResource {
    static func find<T: Sendable>(
        _ http: HTTPRequest, id: String, authenticator: Authenticator, adminMayRead: Bool = false,
        load: (String) async throws -> T?, owner: (T) -> String
    ) async throws -> (T, Identity) {
        let identity = try authenticator.identity(of: http)
        guard UUID(uuidString: id) != nil, let resource = try await load(id.lowercased()) else { throw APIError.notFound }
        let mine = identity.id.map { AccessPolicy.same(owner(resource), $0) } ?? false
        guard mine || (adminMayRead && identity.isAdmin) else { throw APIError.notFound }
        return (resource, identity)
    }
}
