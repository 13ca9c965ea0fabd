// swift-tools-version:6.2
import PackageDescription

// Layers, bottom to top: C shim and libcap → IceboxSystem (syscall wrappers) →
// IceboxCore (cgroups, freezers, lifecycle, daemon) → IceboxCLI (parsing, commands) →
// the thin `icebox` executable.
// Warnings are errors in our own targets, without unsafeFlags (which would stop other
// packages from depending on icebox by version).
let strict: [SwiftSetting] = [.treatAllWarnings(as: .error)]

let package = Package(
    name: "icebox",
    products: [
        .executable(name: "icebox", targets: ["icebox"]),
        // The library for integration tests: only its API is public (Supervisor, IceboxClient,
        // their options, results and errors); the engine under it is `package`.
        .library(name: "IceboxCore", targets: ["IceboxCore"]),
    ],
    targets: [
        .target(name: "CIceboxShim", cSettings: [.define("_GNU_SOURCE")]),
        // Symbols that replace glibc's and the Swift runtime's for a faster start: the
        // executable's alone, never linked into a program built against the libraries.
        .target(name: "CIceboxStart"),
        .systemLibrary(name: "CLibcap", pkgConfig: "libcap", providers: [.apt(["libcap-dev"])]),
        .target(name: "IceboxSystem", dependencies: ["CIceboxShim", "CLibcap"], swiftSettings: strict),
        .target(name: "IceboxCore", dependencies: ["IceboxSystem"], swiftSettings: strict),
        .target(name: "IceboxCLI", dependencies: ["IceboxCore"], swiftSettings: strict),
        .executableTarget(name: "icebox", dependencies: ["IceboxCLI", "CIceboxStart"], swiftSettings: strict),
        // What the test targets share (temporary files, a free port, why no cgroup can be made):
        // test code, so under Tests/.
        .target(name: "IceboxTestSupport", path: "Tests/IceboxTestSupport"),
        .testTarget(name: "IceboxSystemTests", dependencies: ["IceboxSystem", "IceboxTestSupport"]),
        .testTarget(name: "IceboxCoreTests", dependencies: ["IceboxCore", "IceboxTestSupport"]),
        .testTarget(name: "IceboxCLITests", dependencies: ["IceboxCLI", "icebox", "IceboxTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
