/*
 * abi32.c: makes one i386 system call (getpid, number 20, through int $0x80) from a 64-bit
 * process, for the sandbox tests: under egress-launch's workload filter the process must be
 * killed (SIGSYS), never served by the i386 table, whose numbers mean other things.
 *
 * usage: abi32
 *
 * Prints "pid N" and exits 0 when the call was served (the kernel has i386 emulation and no
 * filter stopped it), prints "no-ia32 E" and exits 77 when the kernel answered without
 * serving it (ENOSYS: emulation compiled out), exits 78 on an architecture other than
 * x86-64. A kernel with emulation disabled at boot (ia32_emulation=0) raises SIGSEGV instead:
 * the caller checks this program outside the sandbox first, and skips when it is not
 * "pid N" there.
 */
#include <stdio.h>

int
main(void)
{
#if defined(__x86_64__)
	long r;

	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
	if (r < 0) {
		printf("no-ia32 %ld\n", -r);
		return 77;
	}
	printf("pid %ld\n", r);
	return 0;
#else
	puts("not-x86_64");
	return 78;
#endif
}
