/* A persistent pool of worker threads. run() executes fn on every thread (the caller
 * is thread 0) and returns when all are done; barrier() syncs them inside fn. */
#ifndef SDC_CORE_THREADPOOL_H
#define SDC_CORE_THREADPOOL_H

typedef struct sdc_threadpool sdc_threadpool;
typedef void (*sdc_task_fn)(void *arg, int ith, int nth);

sdc_threadpool *sdc_threadpool_create(int n_threads); /* <= 0: sdc_cpu_physical_cores() */
void sdc_threadpool_free(sdc_threadpool *p);
int sdc_threadpool_size(const sdc_threadpool *p);
void sdc_threadpool_run(sdc_threadpool *p, sdc_task_fn fn, void *arg);
/* Only valid inside a run(); every thread of the pool must call it. */
void sdc_threadpool_barrier(sdc_threadpool *p);
/* One step of a spin wait on another pool thread: a CPU pause, and every 1000th step (the
 * awaited thread may be descheduled) a yield to the OS. *spins starts at 0. */
void sdc_spin_wait_step(int *spins);
int sdc_cpu_count(void); /* online logical CPUs */
/* Physical cores (SMT siblings counted once) among the CPUs this process may use; the
 * default thread count, which never oversubscribes the machine. */
int sdc_cpu_physical_cores(void);

#endif
