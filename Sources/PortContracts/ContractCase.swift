import Testing

/// What a contract case runs on: the ports under test, made fresh for the case, and put away
/// after it whether it passed or not.
public protocol ContractFixture: Sendable {
    /// Removes what the case left behind (rows, objects, uploads); never throws.
    func tearDown() async
}

/// One case of a port's contract: a behaviour every implementation of the port must show, the
/// in-memory twin as much as the real adapter. A suite lists its cases once; the twin's tests
/// and the live tests each run every case, so a case added is checked on both sides.
public struct ContractCase<Fixture: ContractFixture>: Sendable, CustomTestStringConvertible {
    /// The behaviour, as a sentence (the test's name in the report).
    public let name: String
    let body: @Sendable (Fixture) async throws -> Void

    /// A case named `name` that checks `body` on a fixture.
    public init(_ name: String, _ body: @escaping @Sendable (Fixture) async throws -> Void) {
        self.name = name
        self.body = body
    }

    /// The case's name, as Swift Testing shows a parameterized test's argument.
    public var testDescription: String { name }

    /// Runs the case on a fixture `make` builds, then tears the fixture down.
    public func run(on make: () async throws -> Fixture) async throws {
        let fixture = try await make()
        do {
            try await body(fixture)
        } catch {
            await fixture.tearDown()
            throw error
        }
        await fixture.tearDown()
    }
}
