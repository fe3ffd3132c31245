import Synchronization

/// A part file of one request that S3 already holds, kept open (with its reservation) for the
/// request's next tail. Writing over pages the page cache still holds costs well under half of
/// writing a new file (no pages to allocate and zero, no blocks to reserve, nothing to free when
/// it is unlinked). Only the request's own file is reused, so a reservation stays with its
/// owner, and only one is kept: a request whose client stalls holds at most its tail and one
/// spare, and none for parts larger than `largestPart`. A spare gives way while the request
/// waits for room on the spool; what is left when the request's parts are all done is removed.
final class SpareParts: Sendable {
    /// Parts larger than this are not kept: a stalled request would hold them.
    static let largestPart: Int64 = 8 << 20

    private struct State {
        var spare: (number: Int, file: SpoolFile)?
        var waitingForRoom = false
    }

    private let state = Mutex(State())

    /// Offers a part's file, its send finished (S3 answered for every byte, so no socket's
    /// queue still refers to its pages). False when it is not wanted: one is kept already, or
    /// the request waits for room the file would hold.
    func keep(_ number: Int, _ file: SpoolFile) -> Bool {
        state.withLock { s in
            guard s.spare == nil, !s.waitingForRoom else { return false }
            s.spare = (number, file)
            return true
        }
    }

    /// The file to write the next tail into, and the part number its name still carries.
    func take() -> (number: Int, file: SpoolFile)? {
        state.withLock { s in
            defer { s.spare = nil }
            return s.spare
        }
    }

    /// The request is about to wait for room on the spool: nothing is kept until `roomFound`,
    /// and the part number of a file kept now is returned, for it to be removed.
    func giveWay() -> Int? {
        state.withLock { s in
            s.waitingForRoom = true
            defer { s.spare = nil }
            return s.spare?.number
        }
    }

    /// The wait for room is over.
    func roomFound() {
        state.withLock { $0.waitingForRoom = false }
    }
}
