// The executable's directory, which glibc's start-up in a static executable looks up for nothing
// icebox uses. Before main, glibc sets the main program's "origin" (what $ORIGIN means in a library
// search path) with readlink("/proc/self/exe"): the first look at /proc/self of a new process,
// which makes the kernel build its /proc entries, about 33 µs of every `icebox` command here
// (`scripts/bench/tight.c`). The origin only expands $ORIGIN in the search path of a library loaded
// with dlopen, and a static executable's own map has none; glibc loads NSS modules by name from the
// system's directories, where (char *)-1, glibc's own "origin unknown", only drops an $ORIGIN
// element.
//
// glibc's definition is alone in its object file (elf/dl-origin.c), so the linker takes this one
// and never pulls that file out of libc.a. In a dynamically linked build, ld.so keeps its own (ours
// is neither exported nor called).

char *_dl_get_origin(void);

char *_dl_get_origin(void) { return (char *)-1; }
