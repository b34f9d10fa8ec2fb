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
    // The layers, each depending only on those below it; the compiler refuses an upward
    // reference. Users import Tern, which re-exports the two below.
    targets: [
        // Promises, the clock, the errors and HTTP's vocabulary: what every layer speaks.
        .target(name: "TernCore", exclude: ["PUBLIC.md"]),
        // The C that Swift cannot write, for TernTransport alone: it loads at run time, on Linux,
        // libcurl (and makes its variadic calls), libpsl (the public suffixes the cookie jar asks
        // about, through TernTransport's PublicSuffixList) and the zlib, brotli and zstd decoders.
        .target(name: "CTernCurl", linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]),
        // What carries bytes: the Transport protocol, CurlTransport, URLSessionTransport.
        .target(name: "TernTransport", dependencies: ["TernCore", "CTernCurl"], exclude: ["PUBLIC.md"]),
        // The API and its pipeline: parameters, parsing, plugins, pagination, downloads, cookies.
        .target(name: "Tern", dependencies: ["TernCore", "TernTransport"], exclude: ["PUBLIC.md"]),
        .target(name: "TernTesting", dependencies: ["Tern"], exclude: ["PUBLIC.md"]),
        // The README's tour, written as a user's app is: public API alone.
        .executableTarget(name: "TernDemo", dependencies: ["Tern", "TernTesting"], packageAccess: false),
        // The README's and the DocC articles' code, compiled as a user's module is: without
        // `package` access, so that a snippet naming a declaration users cannot reach does not
        // build. TernTests runs it (SnippetTests checks every snippet is in this target).
        .testTarget(name: "TernSnippets", dependencies: ["Tern", "TernTesting"], packageAccess: false),
        // Bounds how many tests run at once, before Swift Testing starts (see its one C file).
        .target(name: "TernTestRunWidth", path: "Tests/TernTestRunWidth"),
        .testTarget(name: "TernTests", dependencies: ["TernCore", "TernTransport", "Tern", "TernTesting", "TernSnippets", "TernTestRunWidth"]),
    ],
    swiftLanguageModes: [.v6]
)

// In a release build the tests' own modules are built as in a debug one, without the optimizer
// and a file batch per core (the library is what the release gate checks): optimizing the whole
// test module took CI 26 minutes, one core busy; this takes 6. The driver then warns that it
// ignores the `-num-threads` a release build passes. Flags of the tests' modules alone, which no
// user of the package builds.
for target in package.targets where target.type == .test {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .unsafeFlags(["-Onone", "-no-whole-module-optimization", "-enable-batch-mode"], .when(configuration: .release)),
    ]
}
