// swift-tools-version:6.2
import PackageDescription

// Integration tests of your own, on real processes and real cgroups, through icebox as a
// library: a Supervisor runs icebox's engine inside the test process, so no icebox
// executable is needed, or used.
//
// Here icebox is the enclosing checkout. The name makes `package: "icebox"` hold whatever
// the checkout's directory is called (a path dependency is otherwise known by it). In a
// project of your own, depend on icebox by URL and version instead.
let package = Package(
    name: "IntegrationTests",
    dependencies: [.package(name: "icebox", path: "../..")],
    targets: [
        .testTarget(
            name: "IntegrationTests",
            dependencies: [.product(name: "IceboxCore", package: "icebox")]
        )
    ],
    swiftLanguageModes: [.v6]
)
