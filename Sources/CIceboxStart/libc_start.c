// glibc's start-up of a static executable, without its survey of the CPU. Before main, glibc 2.36's
// __libc_start_main (csu/libc-start.c, static case) runs init_cpu_features: it asks the CPU for its
// features and then, for each cache level and property sysconf can report, walks CPUID leaves 2 and
// 4 again (handle_intel, intel_check_word, get_common_cache_info): about 80 CPUID instructions, ~10
// µs on bare metal. In a virtual machine every CPUID traps to the hypervisor (~10-12 µs each on
// this nested one): over half of an `icebox suspend` (benchmarks/budget.md, "glibc's start-up").
//
// icebox needs none of it: the features choose among glibc's string functions (IFUNC resolvers,
// which fall back to their SSE2 versions, part of the x86-64 baseline), and the cache sizes tune
// memcpy of large blocks and answer sysconf(_SC_LEVEL1_DCACHE_SIZE...), which nothing in icebox
// asks. So the release build links with --wrap=__libc_start_main (scripts/lib/setup.sh), and _start
// calls this instead: glibc 2.36's sequence, step for step (the same calls, in the same order, with
// the same arguments), less init_cpu_features and the copy of its cache sizes. memcpy's one
// threshold that has no usable default is set as glibc sets it from a 1 MiB shared cache, its
// default size. ICEBOX_LIBC_START=glibc in the environment hands the start to glibc's own (to rule
// this out on a host where something goes wrong, and to time one binary both ways). LibcStartTests
// checks under gdb that glibc's survey is never reached, but is with ICEBOX_LIBC_START=glibc.
//
// It is tied to glibc 2.36 on x86_64, whose internals it calls (hidden symbols, linkable in a
// static link) and whose thread-control-block layout it writes: the stack guard at %fs:0x28 (where
// compilers read it) and the pointer guard at %fs:0x30 (tcbhead_t), and the main thread's
// cancellation buffer at %fs:0x300 and %fs:0x2f8 (struct pthread's cleanup_jmp_buf and cleanup in
// 2.36). setup.sh adds the flag only where getconf says glibc 2.36 and the machine is x86_64, and
// this file compiles only then. The debug build (dynamic, started by ld.so) never uses it.

#include <features.h>  // __GLIBC__, __GLIBC_MINOR__

#if defined(ICEBOX_OWN_LIBC_START) && defined(__x86_64__) && defined(__GLIBC__) && __GLIBC__ == 2 && __GLIBC_MINOR__ == 36

#include <elf.h>
#include <link.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int (*icebox_main_fn)(int, char **, char **);
typedef void (*icebox_init_fn)(int, char **, char **);

// glibc's own, as libc-start.o references them.
extern char **__environ;
extern void *__libc_stack_end;
extern int __libc_enable_secure;
extern void *_dl_random;
extern void _dl_aux_init(ElfW(auxv_t) *);
extern void __tunables_init(char **);
extern void _dl_relocate_static_pie(void);
extern void __libc_setup_tls(void);
extern void __pthread_initialize_minimal(void) __attribute__((weak));
extern void __libc_early_init(_Bool);
extern void __libc_init_first(int, char **, char **);
extern int __cxa_atexit(void (*)(void *), void *, void *);
extern void __libc_check_standard_fds(void);
extern void *_dl_debug_initialize(ElfW(Addr), long);
extern void __libc_fatal(const char *) __attribute__((noreturn));
extern void __nptl_deallocate_tsd(void);
extern unsigned int __nptl_nthreads;
extern void _init(void);
extern void _fini(void);
extern icebox_init_fn __preinit_array_start[], __preinit_array_end[], __init_array_start[], __init_array_end[];
extern void (*__fini_array_start[])(void), (*__fini_array_end[])(void);
extern const ElfW(Rela) __rela_iplt_start[] __attribute__((weak)), __rela_iplt_end[] __attribute__((weak));
extern long __x86_shared_cache_size, __x86_shared_non_temporal_threshold, __x86_rep_movsb_stop_threshold;
extern int __real___libc_start_main(icebox_main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);

// The program's destructors, as glibc's call_fini (static in libc-start.o): .fini_array from last
// to first, then _fini.
static void icebox_call_fini(void *unused) {
    (void)unused;
    size_t i = (size_t)(__fini_array_end - __fini_array_start);
    while (i-- > 0) __fini_array_start[i]();
    _fini();
}

// struct pthread_unwind_buf (nptl/descr.h): where pthread_exit or a cancellation of the main thread
// unwinds to.
struct icebox_unwind_buf {
    struct {
        long jmp_buf[8];
        int mask_was_saved;
    } cancel_jmp_buf[1];
    union {
        void *pad[4];
        struct {
            void *prev;
            void *cleanup;
            int canceltype;
        } data;
    } priv;
};

// main, as glibc's __libc_start_call_main (sysdeps/nptl/libc_start_call_main.h): its exit status to
// exit(); a main thread that ends by pthread_exit comes back here, and the process exits with the
// last thread.
__attribute__((noreturn, noinline)) static void icebox_call_main(icebox_main_fn main, int argc, char **argv) {
    struct icebox_unwind_buf buf;
    int result;
    // _setjmp writes the registers and mask_was_saved only: the first 72 bytes, which this
    // layout shares with struct __jmp_buf_tag (as glibc's own cast does).
    int unwound = _setjmp((struct __jmp_buf_tag *)(void *)&buf);
    if (unwound == 0) {
        void *prev, *cleanup;
        __asm__ volatile("mov %%fs:0x300, %0" : "=r"(prev));
        __asm__ volatile("mov %%fs:0x2f8, %0" : "=r"(cleanup));
        buf.priv.data.prev = prev;
        buf.priv.data.cleanup = cleanup;
        void *self = &buf;
        __asm__ volatile("mov %0, %%fs:0x300" : : "r"(self) : "memory");
        result = main(argc, argv, __environ);
    } else {
        __nptl_deallocate_tsd();
        if (__atomic_sub_fetch(&__nptl_nthreads, 1, __ATOMIC_SEQ_CST) != 0) {
            for (;;) __asm__ volatile("syscall" : : "a"(60L), "D"(0L) : "rcx", "r11", "memory");  // exit(0), this thread
        }
        result = 0;
    }
    exit(result);
}

// No stack protector: its canary lives in the thread control block (%fs:0x28), which does not
// exist until __libc_setup_tls, and is set only below.
__attribute__((no_stack_protector)) int __wrap___libc_start_main(
    icebox_main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void), void (*rtld_fini)(void), void *stack_end) {
    char **env = &argv[argc + 1];
    // ICEBOX_LIBC_START=glibc: glibc's own start. Compared by hand: no libc function may run
    // yet (strcmp is an IFUNC, resolved only below).
    for (char **e = env; *e != NULL; e++) {
        const char *s = *e, *k = "ICEBOX_LIBC_START=glibc";
        while (*k != '\0' && *s == *k) s++, k++;
        if (*k == '\0' && *s == '\0') return __real___libc_start_main(main, argc, argv, init, fini, rtld_fini, stack_end);
    }
    __environ = env;
    __libc_stack_end = stack_end;
    char **p = env;
    while (*p != NULL) p++;
    _dl_aux_init((ElfW(auxv_t) *)(p + 1));
    __tunables_init(__environ);
    // Here glibc surveys the CPU and sets memcpy's thresholds from the caches it found. With
    // no survey, the one without a usable default: above it memcpy streams past the cache (a
    // zero would stream every copy over 128 bytes, in whole pages).
    __x86_shared_non_temporal_threshold = __x86_shared_cache_size * 3 / 4;
    __x86_rep_movsb_stop_threshold = __x86_shared_non_temporal_threshold;
    _dl_relocate_static_pie();
    // IRELATIVE relocations: each IFUNC resolved (apply_irel).
    for (const ElfW(Rela) *r = __rela_iplt_start; r < __rela_iplt_end; r++) {
        if (ELF64_R_TYPE(r->r_info) != R_X86_64_IRELATIVE) __libc_fatal("Unexpected reloc type in static binary.\n");
        ElfW(Addr) *where = (ElfW(Addr) *)r->r_offset;
        *where = ((ElfW(Addr)(*)(void))r->r_addend)();
    }
    __libc_setup_tls();
    // The stack protector's canary and the pointer guard, from the kernel's AT_RANDOM bytes
    // (_dl_setup_stack_chk_guard: its low byte zeroed; _dl_setup_pointer_guard).
    uintptr_t guard;
    memcpy(&guard, _dl_random, sizeof guard);
    guard &= ~(uintptr_t)0xff;
    __asm__ volatile("mov %0, %%fs:0x28" : : "r"(guard) : "memory");
    if (__pthread_initialize_minimal != NULL) __pthread_initialize_minimal();
    uintptr_t pointer_guard;
    memcpy(&pointer_guard, (char *)_dl_random + sizeof pointer_guard, sizeof pointer_guard);
    __asm__ volatile("mov %0, %%fs:0x30" : : "r"(pointer_guard) : "memory");
    if (rtld_fini != NULL) __cxa_atexit((void (*)(void *))rtld_fini, NULL, NULL);
    __libc_early_init(1);
    __libc_init_first(argc, argv, __environ);
    __cxa_atexit(icebox_call_fini, NULL, NULL);
    if (__libc_enable_secure) __libc_check_standard_fds();
    char **environment = __environ;
    for (icebox_init_fn *f = __preinit_array_start; f < __preinit_array_end; f++) (*f)(argc, argv, environment);
    _init();
    for (icebox_init_fn *f = __init_array_start; f < __init_array_end; f++) (*f)(argc, argv, environment);
    _dl_debug_initialize(0, 0);
    icebox_call_main(main, argc, argv);
}

#endif
