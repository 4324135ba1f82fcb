#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getaffinity, CPU_ISSET */
#endif
#include "core/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Workers spin briefly on a generation counter (work arrives every few microseconds
 * during graph execution), then sleep on a condition variable. */
#define SPIN_ROUNDS 20000

typedef struct worker {
    struct sdc_threadpool *pool;
    int ith;
    pthread_t thread;
} worker;

struct sdc_threadpool {
    int n;
    worker *workers;
    _Atomic unsigned generation; /* bumped for each run */
    _Atomic int pending;         /* workers still running the current task */
    _Atomic int stop;
    sdc_task_fn fn;
    void *arg;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    _Atomic int sleepers;
    /* barrier */
    _Atomic int bar_count;
    _Atomic unsigned bar_phase;
};

int sdc_cpu_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

#if defined(__linux__)
static int read_int(const char *path) {
    FILE *f = fopen(path, "r");
    int v = -1;
    if (f) {
        if (fscanf(f, "%d", &v) != 1) v = -1;
        fclose(f);
    }
    return v;
}
#endif

/* Cores (not SMT siblings) among the CPUs this process may run on: the GEMM kernels keep
 * both FMA pipes of a core busy, so a second thread per core only adds contention. */
int sdc_cpu_physical_cores(void) {
    int logical = sdc_cpu_count();
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return logical;
    enum { MAX_IDS = 1024 };
    int ids[MAX_IDS];
    int n = 0, allowed = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && n < MAX_IDS; cpu++) {
        if (!CPU_ISSET(cpu, &set)) continue;
        allowed++;
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
        int core = read_int(path);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id",
                 cpu);
        int pkg = read_int(path);
        if (core < 0 || pkg < 0) return allowed < logical ? allowed : logical; /* no topology */
        int id = pkg * 65536 + core, seen = 0;
        for (int i = 0; i < n && !seen; i++) seen = ids[i] == id;
        if (!seen) ids[n++] = id;
    }
    if (n < 1) return logical;
    return n < logical ? n : logical;
#else
    return logical;
#endif
}

static void *worker_main(void *p) {
    worker *w = p;
    sdc_threadpool *pool = w->pool;
    unsigned seen = 0;
    for (;;) {
        unsigned gen;
        int spins = 0;
        while ((gen = atomic_load_explicit(&pool->generation, memory_order_acquire)) == seen &&
               !atomic_load(&pool->stop)) {
            if (++spins < SPIN_ROUNDS) {
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
                continue;
            }
            pthread_mutex_lock(&pool->mu);
            atomic_fetch_add(&pool->sleepers, 1);
            while (atomic_load(&pool->generation) == seen && !atomic_load(&pool->stop))
                pthread_cond_wait(&pool->wake, &pool->mu);
            atomic_fetch_sub(&pool->sleepers, 1);
            pthread_mutex_unlock(&pool->mu);
        }
        if (atomic_load(&pool->stop)) break;
        seen = gen;
        pool->fn(pool->arg, w->ith, pool->n);
        atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_release);
    }
    return NULL;
}

sdc_threadpool *sdc_threadpool_create(int n_threads) {
    if (n_threads <= 0) n_threads = sdc_cpu_physical_cores();
    if (n_threads > 512) n_threads = 512;
    sdc_threadpool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    p->workers = calloc((size_t)n_threads, sizeof(worker));
    if (!p->workers) {
        free(p);
        return NULL;
    }
    for (int i = 1; i < n_threads; i++) {
        p->workers[i].pool = p;
        p->workers[i].ith = i;
        if (pthread_create(&p->workers[i].thread, NULL, worker_main, &p->workers[i]) != 0) {
            p->n = i; /* run with the threads we got */
            break;
        }
    }
    return p;
}

void sdc_threadpool_free(sdc_threadpool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->workers[i].thread, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    free(p->workers);
    free(p);
}

int sdc_threadpool_size(const sdc_threadpool *p) {
    return p ? p->n : 1;
}

void sdc_threadpool_run(sdc_threadpool *p, sdc_task_fn fn, void *arg) {
    if (p->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    atomic_store(&p->pending, p->n - 1);
    atomic_store(&p->bar_count, 0);
    atomic_fetch_add(&p->generation, 1); /* seq_cst: pairs with the sleepers check */
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    fn(arg, 0, p->n);
    while (atomic_load_explicit(&p->pending, memory_order_acquire) > 0) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#else
        sched_yield();
#endif
    }
}

void sdc_threadpool_barrier(sdc_threadpool *p) {
    if (p->n == 1) return;
    unsigned phase = atomic_load_explicit(&p->bar_phase, memory_order_acquire);
    if (atomic_fetch_add_explicit(&p->bar_count, 1, memory_order_acq_rel) == p->n - 1) {
        atomic_store_explicit(&p->bar_count, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&p->bar_phase, 1, memory_order_release);
        return;
    }
    int spins = 0;
    while (atomic_load_explicit(&p->bar_phase, memory_order_acquire) == phase)
        sdc_spin_wait_step(&spins);
}

void sdc_spin_wait_step(int *spins) {
    if (++*spins > 1000) {
        sched_yield();
        *spins = 0;
    }
#if defined(__x86_64__) || defined(__i386__)
    else
        __builtin_ia32_pause();
#endif
}
