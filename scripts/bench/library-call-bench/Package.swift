// swift-tools-version:6.2
import PackageDescription

// The program scripts/bench/library-call runs: a test author's view of the library (only what
// IceboxCore makes public), built in release mode against the checkout around it.
let package = Package(
    name: "library-call-bench",
    dependencies: [.package(name: "icebox", path: "../../..")],
    targets: [
        .executableTarget(
            name: "library-call-bench",
            dependencies: [.product(name: "IceboxCore", package: "icebox")]
        )
    ],
    swiftLanguageModes: [.v6]
)
