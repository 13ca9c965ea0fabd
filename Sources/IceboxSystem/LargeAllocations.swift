import CIceboxShim

/// How this process's allocator treats large blocks.
public enum LargeAllocations {
    /// Blocks of `bytes` or more get a mapping of their own, returned to the kernel when
    /// freed. glibc otherwise raises that threshold to the largest block freed so far, after
    /// which such blocks come from the heap and stay there whenever anything was allocated
    /// above them. Process-wide: for a program that owns its process.
    public static func keepMapped(atLeast bytes: Int) {
        _ = icebox_fix_mmap_threshold(bytes)
    }
}
