// swift-tools-version: 6.1
// Tern's benchmarks live in their own package so that the library keeps zero dependencies.
// Run them from this folder: `swift package --disable-sandbox benchmark`.
import PackageDescription

let package = Package(
    name: "TernBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "Tern", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
        // Its TLS configuration, for AsyncHTTPClient trusting the test CA over HTTPS.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.30.0"),
    ],
    targets: [
        .executableTarget(
            name: "PromiseBenchmarks",
            dependencies: [
                .product(name: "Tern", package: "Tern"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/PromiseBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .target(
            name: "PipelineFixtures",
            dependencies: [.product(name: "Tern", package: "Tern")]
        ),
        // Not package-benchmark targets: the same comparisons as plain executables, each
        // side taking turns in one process.
        // The floor: libcurl's multi interface driven from C, against the same nginx.
        .target(
            name: "CRawCurl",
            linkerSettings: [.linkedLibrary("dl")]
        ),
        .executableTarget(
            name: "RawCurl",
            dependencies: ["CRawCurl"]
        ),
        // Tern's JSONParser against JSONDecoder on payloads in the shape of real APIs.
        .executableTarget(
            name: "JSONAB",
            dependencies: ["PipelineFixtures", .product(name: "Tern", package: "Tern")]
        ),
        .executableTarget(
            name: "OverheadAB",
            dependencies: ["PipelineFixtures"]
        ),
        .executableTarget(
            name: "EndToEndAB",
            dependencies: ["PipelineFixtures", .product(name: "Tern", package: "Tern"), .product(name: "TernTesting", package: "Tern")]
        ),
        // Replaying a recording (RecordingTransport) against the same requests on stubs.
        .executableTarget(
            name: "RecordingAB",
            dependencies: ["PipelineFixtures", .product(name: "Tern", package: "Tern"), .product(name: "TernTesting", package: "Tern")]
        ),
        .executableTarget(
            name: "ClientsAB",
            dependencies: [
                "CRawCurl",
                "PipelineFixtures",
                .product(name: "Tern", package: "Tern"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .executableTarget(
            name: "Soak",
            dependencies: ["PipelineFixtures", .product(name: "Tern", package: "Tern")]
        ),
        .executableTarget(
            name: "TransferAB",
            dependencies: [.product(name: "Tern", package: "Tern")]
        ),
        .executableTarget(
            name: "PipelineBenchmarks",
            dependencies: [
                "PipelineFixtures",
                .product(name: "Tern", package: "Tern"),
                .product(name: "TernTesting", package: "Tern"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/PipelineBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "RefreshBenchmarks",
            dependencies: [
                .product(name: "Tern", package: "Tern"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/RefreshBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "UploadBenchmarks",
            dependencies: [
                .product(name: "Tern", package: "Tern"),
                .product(name: "TernTesting", package: "Tern"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/UploadBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
