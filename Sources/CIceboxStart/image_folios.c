// The program's code asked for in 2 MiB page-cache folios (MADV_HUGEPAGE on its executable
// segment), before any of it runs. Which folios the page cache holds a file in is decided by
// whoever reads it first: `scripts/install` writes the binary in one write, so the cache holds it
// in 2 MiB folios and every command maps each 2 MiB of code with one page-table entry. Once those
// pages were dropped (memory pressure, a reboot), the first process to run reads them back through
// the page faults of its start, and the kernel's read-around fills the cache with 4 KiB pages.
// Every later `icebox` command then maps its code 16 pages per fault: `icebox suspend` took 35 page
// faults in its code against 7 as installed, and 1.8x the C one-shot against 1.4x
// (benchmarks/budget.md, "The readahead state"). With VM_HUGEPAGE on the mapping, a fault that
// finds nothing in the page cache reads a 2 MiB folio instead (filemap.c, do_sync_mmap_readahead;
// it needs no CONFIG_READ_ONLY_THP_FOR_FS, which MADV_COLLAPSE of a file would), so the first
// command after a reboot puts the code back as an install left it, for itself and everyone after.
//
// It must come before the first fault in the code: the first instruction run. The release build
// (scripts/lib/setup.sh) makes icebox_entry the ELF entry point; it advises and jumps to glibc's
// _start with the registers the kernel set. It sits in a section of its own, which lld places after
// .text, in the last 2 MiB of the code: that stretch is shorter than 2 MiB (never mapped by one
// entry anyway), so the 4 KiB pages its own first fault reads cost nothing the rest of the code
// would have had. No libc here: nothing is set up yet (no TLS, no IRELATIVE relocations), so a raw
// system call, no stack protector, and the program headers read from the ELF header the kernel
// mapped.
//
// A build with another entry point (the debug build, linked dynamically) advises from
// .preinit_array instead: the first code of the executable that the dynamic linker runs. The advice
// changes the folios of icebox's own file only, and only when nothing holds those pages yet; a
// failure (no file THP readahead: an old kernel) changes nothing.

#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>

#define ICEBOX_MADV_HUGEPAGE 14
#define ICEBOX_EARLY_CODE __attribute__((section("icebox_early"), used, no_stack_protector))
#define ICEBOX_EARLY ICEBOX_EARLY_CODE __attribute__((visibility("hidden")))

extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));

static long icebox_raw_madvise(uintptr_t start, size_t length, int advice) {
#if defined(__x86_64__)
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"((long)SYS_madvise), "D"(start), "S"(length), "d"((long)advice)
                     : "rcx", "r11", "memory");
    return ret;
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = SYS_madvise;
    register long x0 __asm__("x0") = (long)start;
    register long x1 __asm__("x1") = (long)length;
    register long x2 __asm__("x2") = advice;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
    return x0;
#else
    (void)start, (void)length, (void)advice;
    return -1;
#endif
}

// Where the segment that holds the ELF header (file offset 0) was put, less its address in
// the file's program headers: 0 in the static (not position-independent) release build.
ICEBOX_EARLY_CODE static uintptr_t icebox_load_bias(const ElfW(Ehdr) *ehdr) {
    const ElfW(Phdr) *phdr = (const ElfW(Phdr) *)((const char *)ehdr + ehdr->e_phoff);
    for (int i = 0; i < ehdr->e_phnum; i++) {
        if (phdr[i].p_type == PT_LOAD && phdr[i].p_offset == 0) return (uintptr_t)ehdr - (uintptr_t)phdr[i].p_vaddr;
    }
    return 0;
}

ICEBOX_EARLY void icebox_advise_image_folios(void) {
    const ElfW(Ehdr) *ehdr = &__ehdr_start;
    const ElfW(Phdr) *phdr = (const ElfW(Phdr) *)((const char *)ehdr + ehdr->e_phoff);
    uintptr_t bias = icebox_load_bias(ehdr);
    const uintptr_t page = 4096;  // the smallest page; madvise rounds the length up itself
    for (int i = 0; i < ehdr->e_phnum; i++) {
        // The code only. The read-only data and .data gained nothing: the kernel reads the ELF
        // header and clears the end of .data in exec, before this runs, so the first 2 MiB of each
        // is in 4 KiB pages already (and a 2 MiB read-ahead that starts in such a stretch fills the
        // next one with 4 KiB pages too).
        if (phdr[i].p_type != PT_LOAD || !(phdr[i].p_flags & PF_X) || phdr[i].p_filesz == 0) continue;
        uintptr_t start = (bias + phdr[i].p_vaddr) & ~(page - 1);
        uintptr_t end = bias + phdr[i].p_vaddr + phdr[i].p_filesz;
        (void)icebox_raw_madvise(start, end - start, ICEBOX_MADV_HUGEPAGE);
    }
}

// The ELF entry point of the release build: advise, then glibc's _start with the stack and
// the register the kernel (rdx / x0: a function for atexit, 0 for a static program) left.
#if defined(__x86_64__)
__asm__(".pushsection icebox_early,\"ax\",@progbits\n"
        ".globl icebox_entry\n"
        ".type icebox_entry,@function\n"
        "icebox_entry:\n"
        "    mov %rdx, %r12\n"  // callee-saved; the stack is 16-byte aligned here, as a call wants
        "    call icebox_advise_image_folios\n"
        "    mov %r12, %rdx\n"
        "    jmp _start\n"
        ".size icebox_entry, .-icebox_entry\n"
        ".popsection\n");
#elif defined(__aarch64__)
__asm__(".pushsection icebox_early,\"ax\",@progbits\n"
        ".globl icebox_entry\n"
        ".type icebox_entry,%function\n"
        "icebox_entry:\n"
        "    mov x19, x0\n"
        "    bl icebox_advise_image_folios\n"
        "    mov x0, x19\n"
        "    b _start\n"
        ".size icebox_entry, .-icebox_entry\n"
        ".popsection\n");
#endif

// The hook of a build entered elsewhere. A build entered at icebox_entry has advised already:
// the entry point is read from the ELF header rather than a flag set there, as a flag in .bss
// cost the page it sat on two faults on every command.
#if defined(__x86_64__) || defined(__aarch64__)
extern const char icebox_entry[] __attribute__((visibility("hidden")));
#endif

ICEBOX_EARLY_CODE static void icebox_advise_image_folios_unless_entered(void) {
#if defined(__x86_64__) || defined(__aarch64__)
    const ElfW(Ehdr) *ehdr = &__ehdr_start;
    if (ehdr->e_entry + icebox_load_bias(ehdr) == (uintptr_t)icebox_entry) return;
#endif
    icebox_advise_image_folios();
}

__attribute__((section(".preinit_array"), used)) static void (*const icebox_advise_image_folios_hook)(void) =
    icebox_advise_image_folios_unless_entered;
