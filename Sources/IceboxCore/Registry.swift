import IceboxSystem

/// The registry: every app the daemon knows, one file per app ($STATE_DIR/registry/NAME.json),
/// each written atomically when that app changes.
public enum Registry {
    /// Every record in the directory, oldest launch first; unreadable files are skipped.
    public static func load(directory: String) -> [AppRecord] {
        let names = ((try? FileIO.list(directory)) ?? []).filter { $0.hasSuffix(".json") }
        return names.compactMap { (try? FileIO.read(directory + "/" + $0)).flatMap { JSONLines.decode(AppRecord.self, $0) } }
            .sorted { $0.launchedWall < $1.launchedWall }
    }
}
