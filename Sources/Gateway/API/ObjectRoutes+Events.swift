import Auth

/// `object.deleted` and `object.moved` in the event feed: recorded once S3 has done the change,
/// in the caller's feed and in that of each key space's owner. A feed that cannot be written to
/// (the database down) does not undo or fail a change S3 has made: the event is left out.
extension ObjectRoutes {
    /// Where an object of `level` at `key` (in `target`'s key space, or the caller's) is.
    static func place(_ level: AccessLevel, key: String, target: String?, identity: Identity, objectKey: String) -> ObjectChange.Place {
        ObjectChange.Place(
            accessLevel: level.rawValue, key: key, identityId: level == .public ? nil : (target ?? identity.id), objectKey: objectKey)
    }

    /// Records `change` as `type` for everyone it concerns.
    func announce(_ type: String, _ change: ObjectChange, caller: Identity) async {
        guard let feed = jobs.events else { return }
        for owner in change.audience(caller: caller.id) {
            try? await feed.record(owner: owner, type: type, change: change)
        }
    }
}
