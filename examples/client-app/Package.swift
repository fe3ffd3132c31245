// swift-tools-version: 6.0
// An app's package that uses the gateway's client library as an app would: a dependency on this
// repository (by path here; an app names the repository's URL and a version), the product
// `TransferGatewayClient`, nothing else. scripts/client-example-check.sh builds and runs it.
import PackageDescription

let package = Package(
    name: "client-app",
    // The root package asks for macOS 15 (its server targets); the client library itself needs 12.
    platforms: [.macOS(.v15), .iOS(.v15)],
    dependencies: [.package(name: "TransferGateway", path: "../..")],
    targets: [
        .executableTarget(
            name: "client-app",
            dependencies: [.product(name: "TransferGatewayClient", package: "TransferGateway")])
    ],
    swiftLanguageModes: [.v6]
)
