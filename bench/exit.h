/* bench/exit.h — slot-bench's exit statuses (documented in every --help). */
#ifndef SLOT_BENCH_EXIT_H
#define SLOT_BENCH_EXIT_H

#define BENCH_EXIT_OK 0
#define BENCH_EXIT_FAILED 1     /* verification failed, or the server refused the setup */
#define BENCH_EXIT_CONNECTION 2 /* the target could not be reached, or a connection broke */
#define BENCH_EXIT_USAGE 64     /* sysexits.h EX_USAGE */

#endif
