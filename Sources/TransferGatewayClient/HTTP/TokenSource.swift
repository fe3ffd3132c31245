import Foundation

/// The bearer token of a client: asked of the app's provider once, kept, and asked again only when
/// the gateway refuses the one kept (401). Concurrent refusals of the same token share one new ask.
actor TokenSource {
    private let provider: @Sendable () async throws -> String
    private var current: String?
    private var asking: Task<String, Error>?

    init(provider: @escaping @Sendable () async throws -> String) {
        self.provider = provider
    }

    /// The token to send.
    func token() async throws -> String {
        if let current { return current }
        return try await ask()
    }

    /// A token other than `refused`, asking the provider when the kept one is the refused one.
    func replace(refused: String) async throws -> String {
        if let current, current != refused { return current }
        current = nil
        return try await ask()
    }

    private func ask() async throws -> String {
        if let asking { return try await asking.value }
        let task = Task { [provider] in try await provider() }
        asking = task
        defer { asking = nil }
        do {
            let token = try await task.value.trimmingCharacters(in: .whitespacesAndNewlines)
            current = token
            return token
        } catch {
            throw TransferError(.unauthorized, "the token provider failed: \(error)")
        }
    }
}
