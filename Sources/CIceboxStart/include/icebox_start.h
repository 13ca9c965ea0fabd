// Start-up shortcuts of the `icebox` executable alone: each file replaces a glibc or Swift runtime
// symbol for a faster start, or (image_folios.c) is the release build's entry point (each says
// why). Only the executable links this target: a program built against the icebox libraries keeps
// glibc's $ORIGIN, the runtime's own argv and its backtracer search (LibraryLinkTests checks it).
#pragma once

#pragma clang assume_nonnull begin

/// The process's arguments as glibc handed them to the program (command_line.c), count in *count.
/// For the entry point: Swift's CommandLine.unsafeArgv is main-actor isolated, so reading it from
/// the top-level code cost every command a dynamic isolation check, and that check starts the
/// concurrency runtime's default executors (faults on four pages).
char *_Nullable const *_Nonnull icebox_process_arguments(int *count);

#pragma clang assume_nonnull end
