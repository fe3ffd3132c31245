// swift-tools-version: 6.0
// TransferGateway: a REST gateway that moves files in and out of S3-compatible storage.
// Targets are the architecture: dependencies point one way (executable → Gateway → engine,
// adapters → ports: the routes' target `Gateway` lists neither Postgres nor S3, the engine
// sees only its ports), and each C module is imported by exactly one Swift target.
import PackageDescription

let package = Package(
    name: "TransferGateway",
    // iOS is for the client library only (the server is Linux: epoll); macOS 15 is the server
    // targets' floor (Synchronization), so on a Mac the whole package asks for it.
    platforms: [.macOS(.v15), .iOS(.v15)],
    products: [
        .executable(name: "transfer-gateway", targets: ["TransferGateway"]),
        // The client for apps: Foundation only, no server target, no unsafe flags.
        .library(name: "TransferGatewayClient", targets: ["TransferGatewayClient"]),
        .executable(name: "transfer-client", targets: ["TransferClientCLI"]),
    ],
    targets: [
        // C system libraries, found through pkg-config. Each has one shim header.
        .systemLibrary(
            name: "CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(
            name: "CCrypto", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CPostgres", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]),

        // Linux epoll and eventfd, for the HTTP server's event loops (headers only).
        .systemLibrary(name: "CSystem"),
        // HTTP/1.1 server on POSIX sockets, epoll loops and Dispatch. Knows nothing of S3, jobs or JSON.
        .target(name: "HTTPServer", dependencies: ["CSystem"]),
        // Per-thread stripes of a locked value, for bookkeeping every request touches.
        .target(name: "Striped"),
        // SHA-256 and HMAC over libcrypto; the only target that imports CCrypto.
        .target(name: "Crypto", dependencies: ["CCrypto"]),
        // Calendar dates from days since 1970 and back, by arithmetic.
        .target(name: "CivilDate"),
        // AWS Signature Version 4: pure, no I/O.
        .target(name: "SigV4", dependencies: ["Crypto", "Striped", "CivilDate"]),
        // The S3 operations the gateway uses, over libcurl.
        .target(name: "S3", dependencies: ["CCurl", "SigV4", "Crypto", "Striped"]),
        // PostgreSQL over libpq.
        .target(name: "Postgres", dependencies: ["CPostgres"]),
        // JWT verification, identities, access levels and object-key rules.
        .target(name: "Auth", dependencies: ["Crypto", "Striped"]),
        // Transfer jobs: part planning, scheduling, retries, leases — pure logic behind ports.
        .target(name: "TransferEngine", dependencies: ["Crypto"]),
        // The API: routes, HTTP plumbing (problems, CORS, tokens), JSON, logging, metrics, limits and
        // background sweeps, over ports. It cannot see PostgreSQL or S3: the adapters implement its ports.
        .target(name: "Gateway", dependencies: ["HTTPServer", "Auth", "TransferEngine", "Crypto", "Striped", "CivilDate"]),
        // The ports' real implementations: PostgreSQL stores and schema, the S3 object store,
        // presigner and bucket sweeps, the URL fetcher, the dependency checks.
        .target(name: "Adapters", dependencies: ["Gateway", "TransferEngine", "Postgres", "S3", "SigV4", "Crypto", "Auth"]),
        // The composition root (configuration, wiring) and the commands: `transfer-gateway serve|migrate|token`.
        .executableTarget(
            name: "TransferGateway",
            dependencies: [
                "Gateway", "Adapters", "HTTPServer", "TransferEngine", "Postgres",
                "S3", "SigV4", "Auth", "Crypto",
            ]),
        // The client for apps: uploads, downloads, resume after relaunch, over the gateway's API.
        // Foundation (FoundationNetworking on Linux) only; depends on no other target.
        .target(name: "TransferGatewayClient"),
        // `transfer-client`: the client library as a command line.
        .executableTarget(name: "TransferClientCLI", dependencies: ["TransferGatewayClient"]),

        // In-memory twins of every port (the engine's and the routes'), a manual clock and one
        // loopback HTTP client, for tests of every target.
        .target(name: "TestSupport", dependencies: ["TransferEngine", "Gateway", "Crypto"]),
        // Each port's contract as one suite, run against its in-memory twin (the unit tests) and
        // its real adapter (IntegrationTests), so a twin cannot drift from PostgreSQL or S3.
        .target(name: "PortContracts", dependencies: ["TransferEngine", "Gateway", "TestSupport", "Crypto"]),

        // One test target per source target, named after it (IntegrationTests aside).
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "TestSupport"]),
        .testTarget(name: "StripedTests", dependencies: ["Striped"]),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto"]),
        .testTarget(name: "SigV4Tests", dependencies: ["SigV4", "Crypto"], exclude: ["Fixtures"]),
        .testTarget(
            name: "GatewayTests",
            dependencies: [
                "Gateway", "HTTPServer", "Auth", "Crypto",
                "TransferEngine", "TestSupport", "Adapters", "PortContracts",
            ]),
        .testTarget(name: "AuthTests", dependencies: ["Auth", "Crypto"], exclude: ["Fixtures"]),
        .testTarget(name: "TransferEngineTests", dependencies: ["TransferEngine", "Crypto", "TestSupport", "Adapters", "PortContracts"]),
        .testTarget(name: "S3Tests", dependencies: ["S3", "SigV4", "Crypto"], exclude: ["Fixtures"]),
        .testTarget(name: "AdaptersTests", dependencies: ["Adapters", "S3", "SigV4", "Gateway", "TransferEngine", "TestSupport"]),
        .testTarget(name: "TransferGatewayTests", dependencies: ["TransferGateway", "Gateway"]),
        .testTarget(name: "TransferGatewayClientTests", dependencies: ["TransferGatewayClient"]),
        // Every live suite: against the real PostgreSQL and S3 server (GATEWAY_LIVE_TESTS=1, scripts/test.sh).
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "Gateway", "Adapters", "TransferGateway", "HTTPServer", "S3", "Postgres",
                "Auth", "SigV4", "Crypto", "TransferEngine", "TestSupport", "PortContracts",
                "TransferGatewayClient",
            ],
            exclude: ["Scripts"]),
    ],
    swiftLanguageModes: [.v6]
)

// Release builds optimise across modules: the request path runs through five of them. Not the
// client's targets: SwiftPM refuses unsafe flags in a package an app depends on by version.
let clientTargets: Set<String> = ["TransferGatewayClient", "TransferClientCLI"]
for target in package.targets where (target.type == .regular || target.type == .executable) && !clientTargets.contains(target.name) {
    target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]
}
