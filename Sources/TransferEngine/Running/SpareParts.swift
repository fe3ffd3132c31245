import Synchronization

/// The file of a part S3 already holds, kept open (with its reservation) for the request's next
/// tail. Writing over pages the page cache still holds costs well under half of writing a new
/// file (no pages to allocate and zero, no blocks to reserve, nothing to free when it is
/// unlinked). A file is kept only while the request's tail is full and waits to go out — the
/// client is faster than S3 — and the next launch takes it at once: a request whose client is
/// slow or stalled never holds one beside its tail, and none is kept for parts larger than
/// `largestPart`. The tail written into it keeps the part's reservation until it fills (a
/// client that stalls then pins a part, never more than the request has sent). Only the
/// request's own file is reused, so a reservation stays with its owner. An import that streams
/// its source into parts keeps one the same way for its next part: a source that stalls right
/// after a full part holds it, one part, as it would hold the part it fills the moment its next
/// byte came (parts of any size: an import reserves whole parts anyway).
final class SpareParts: Sendable {
    /// Parts larger than this are not kept.
    static let largestPart: Int64 = 8 << 20

    private struct State {
        var spare: (number: Int, file: SpoolFile)?
        var wanted = false
    }

    private let state = Mutex(State())

    /// The tail is (about to be) full: the next part's file to finish sending is kept.
    func want() {
        state.withLock { $0.wanted = true }
    }

    /// Offers a part's file, its send finished (S3 answered for every byte, so no socket's
    /// queue still refers to its pages). False when it is not wanted: the tail is not full, or
    /// one is kept already.
    func keep(_ number: Int, _ file: SpoolFile) -> Bool {
        state.withLock { s in
            guard s.wanted, s.spare == nil else { return false }
            s.spare = (number, file)
            return true
        }
    }

    /// The kept file, and the part number its name still carries; none is kept after this until
    /// wanted again.
    private func take() -> (number: Int, file: SpoolFile)? {
        state.withLock { s in
            s.wanted = false
            defer { s.spare = nil }
            return s.spare
        }
    }

    /// The kept file, renamed `name` on `spool` (its reservation going with it) for the next
    /// bytes; nil when none is kept. A file whose rename fails is removed.
    func take(as name: SpoolName, jobID: String, on spool: any Spool) throws -> SpoolFile? {
        guard let spare = take() else { return nil }
        do {
            try spool.rename(jobID: jobID, from: .part(spare.number), to: name)
        } catch {
            spool.remove(jobID: jobID, name: .part(spare.number))
            throw error
        }
        return spare.file
    }

    /// Removes the kept file, if any, from `spool`; none is kept until wanted again.
    func drop(jobID: String, on spool: any Spool) {
        if let spare = take() { spool.remove(jobID: jobID, name: .part(spare.number)) }
    }
}
