// The process's arguments for Swift's CommandLine, without the Swift runtime's search for them. In
// a static executable the runtime's CommandLine.cpp.o finds argv at start-up, in a C++ constructor,
// by reading /proc/self/maps through stdio and sscanf to locate the stack, then walking back from
// environ: about 50 µs before main, a tenth of `icebox --version`. glibc hands every .init_array
// function argc, argv and envp, so the two functions that object file defines are defined here
// instead: the linker then takes ours and never pulls it out of libswiftCore.a, and its constructor
// does not run. Should a toolchain put anything else in that object file, the link fails with
// duplicate symbols rather than quietly changing behaviour. In a build against the shared runtime
// the library keeps its own (or uses these, which answer the same).
//
// The signatures are the runtime's (stdlib/public/stubs/CommandLine.cpp): a pointer in, a pointer
// out, the C registers on every platform Swift runs on Linux.

#include <stddef.h>

#include "icebox_start.h"

static char **captured_argv;
static int captured_argc;
static char **override_argv;
static int override_argc;
static char *no_arguments[] = {NULL};

// Runs before any Swift code: priority 101 is the first a program may use.
__attribute__((constructor(101))) static void icebox_capture_arguments(int argc, char **argv, char **envp) {
    (void)envp;
    if (argv != NULL && argc >= 0) {
        captured_argv = argv;
        captured_argc = argc;
    }
}

char **_swift_stdlib_getUnsafeArgvArgc(int *outArgLen);
void _swift_stdlib_overrideUnsafeArgvArgc(char **argv, int argc);

char **_swift_stdlib_getUnsafeArgvArgc(int *outArgLen) {
    if (override_argv != NULL) {
        *outArgLen = override_argc;
        return override_argv;
    }
    if (captured_argv != NULL) {
        *outArgLen = captured_argc;
        return captured_argv;
    }
    *outArgLen = 0;
    return no_arguments;
}

void _swift_stdlib_overrideUnsafeArgvArgc(char **argv, int argc) {
    override_argv = argv;
    override_argc = argc;
}

char *const *icebox_process_arguments(int *count) {
    return _swift_stdlib_getUnsafeArgvArgc(count);
}
