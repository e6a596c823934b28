/* GIL meter: CPU time that extension modules (numpy, BLAS) spend with the GIL released.
 *
 * Loaded with LD_PRELOAD (benchmarks/_gil.py builds it and re-runs the script), it wraps
 * PyEval_SaveThread / PyEval_RestoreThread, which Py_BEGIN/END_ALLOW_THREADS expand to, and
 * adds the calling thread's CPU time between the two to a process-wide counter.  The rest
 * of the process CPU time (time.process_time) was spent holding the GIL, or in libpython's own
 * blocking waits, which use almost no CPU.  Calls inside libpython itself bypass the
 * wrappers on builds with -fno-semantic-interposition; numpy's kernels do not.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <time.h>

typedef void *(*save_fn)(void);
typedef void (*restore_fn)(void *);

static save_fn real_save;
static restore_fn real_restore;
static __thread long long released_at; /* thread CPU ns when this thread released the GIL */
static _Atomic long long free_ns;      /* CPU ns spent with the GIL released, all threads */
static _Atomic long long sections;     /* completed release/acquire pairs */
static __thread long long thread_free; /* CPU ns this thread spent with the GIL released */

static long long thread_cpu_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return now.tv_sec * 1000000000LL + now.tv_nsec;
}

void *PyEval_SaveThread(void) {
    if (!real_save) real_save = (save_fn)dlsym(RTLD_NEXT, "PyEval_SaveThread");
    released_at = thread_cpu_ns();
    return real_save();
}

void PyEval_RestoreThread(void *state) {
    if (!real_restore) real_restore = (restore_fn)dlsym(RTLD_NEXT, "PyEval_RestoreThread");
    long long spent = thread_cpu_ns() - released_at;
    real_restore(state);
    atomic_fetch_add(&free_ns, spent);
    thread_free += spent;
    atomic_fetch_add(&sections, 1);
}

long long gil_meter_free_ns(void) { return free_ns; }
long long gil_meter_sections(void) { return sections; }
long long gil_meter_thread_free_ns(void) { return thread_free; }
