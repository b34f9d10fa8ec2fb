// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Tern",
    // Apple platforms from the releases that ship the Swift concurrency runtime; the point
    // releases add FileHandle's throwing reads and writes, which multipart uploads use.
    platforms: [.macOS("10.15.4"), .iOS("13.4"), .tvOS("13.4"), .watchOS("6.2")],
    products: [
        .library(name: "Tern", targets: ["Tern"]),
        .library(name: "TernTesting", targets: ["TernTesting"]),
        .executable(name: "tern-demo", targets: ["TernDemo"]),
    ],
    // The library depends on the toolchain alone: Foundation, FoundationNetworking and Dispatch.
    dependencies: [],
    targets: [
        // libcurl's variadic calls, made from C: libcurl itself is loaded at run time, on Linux.
        .target(name: "CTernCurl", linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]),
        .target(name: "Tern", dependencies: ["CTernCurl"]),
        .target(name: "TernTesting", dependencies: ["Tern"]),
        .executableTarget(name: "TernDemo", dependencies: ["Tern", "TernTesting"]),
        .testTarget(name: "TernTests", dependencies: ["Tern", "TernTesting"]),
    ],
    swiftLanguageModes: [.v6]
)
