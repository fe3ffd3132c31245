/// What a write requires of the object it makes, so that it never clobbers another's: the key
/// free (`preventOverwrite`, S3's `If-None-Match: *`) or still the version named (`ifMatch`,
/// S3's `If-Match`). A write whose condition fails changes nothing and fails
/// `TransferError.objectExists` or `.destinationChanged`.
public enum WriteCondition: Sendable, Equatable {
    case absent
    case etag(String)

    /// The condition `preventOverwrite` and `ifMatch` ask for (nil: none).
    public init?(preventOverwrite: Bool?, ifMatch: String?) {
        if preventOverwrite == true {
            self = .absent
        } else if let ifMatch {
            self = .etag(ifMatch)
        } else {
            return nil
        }
    }

    /// The error a store reports when the condition did not hold.
    public var failure: TransferError {
        switch self {
        case .absent: return .objectExists
        case .etag: return .destinationChanged
        }
    }
}
