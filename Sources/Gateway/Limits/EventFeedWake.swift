import Crypto

/// The key on `JobChanges` under which an identity's new feed events are announced. The feed's
/// trigger sends `NOTIFY gateway_jobs, 'events:' || md5(owner)`: a fixed-size payload whatever
/// the identity (a notification carries at most 8000 bytes), and no identity in the channel.
public enum EventFeedWake {
    public static func key(_ owner: String) -> String {
        "events:" + Digest.hex(Digest.md5(Array(owner.utf8)))
    }
}
