// Where the Swift runtime looks for its helper programs; icebox ships none. In a static executable,
// a C++ constructor of the runtime (Backtrace.cpp) asks for swift-backtrace, the crash reporter,
// next to the executable: readlink("/proc/self/exe") and eight stat calls for files that are not
// there, about 22 µs of every `icebox` command here. Finding nothing, the runtime turns crash
// reports off, as it does for every icebox build without the helper; a user who sets
// SWIFT_BACKTRACE=swift-backtrace=PATH still gets them (the runtime never asks).
//
// The runtime defines this function in Paths.cpp.o with two others that nothing in a static icebox
// refers to, so the linker takes this one and never pulls that object out of libswiftCore.a. Should
// a toolchain refer to the others, the link fails with duplicate symbols rather than quietly
// changing behaviour. In a build against the shared runtime the library keeps its own (this one is
// not exported).

#include <stddef.h>

char *swift_copyAuxiliaryExecutablePath(const char *name);

char *swift_copyAuxiliaryExecutablePath(const char *name) {
    (void)name;
    return NULL;
}
