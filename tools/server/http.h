/* The HTTP layer of sdc-server (libmicrohttpd, one thread per connection): routes,
 * authentication, body limits and JSON responses; generation goes through jobs.h. */
#ifndef SDC_SERVER_HTTP_H
#define SDC_SERVER_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "jobs.h"
#include "request.h"

typedef struct sdc_srv_http_config {
    const char *listen_ip; /* IPv4 or IPv6 literal */
    int port;              /* 0: any free port (see sdc_srv_http_port) */
    const char *html;      /* page served at "/" (NUL-terminated), NULL: the built-in one */
    const char *api_key;   /* NULL: no authentication */
    size_t max_body;       /* request bodies above this get 413 */
    int max_connections;
    const char *model_path; /* for the model listings */
    /* the checkpoints served (A1111 sd-models, sd_model_checkpoint); at least the loaded
     * one. switchable: requests may name another (in-memory queue with --model-dir) */
    const sdc_srv_model *models;
    int n_models;
    bool switchable;
    const sdc_srv_defaults *defaults;
    int max_queue;
    bool verbose; /* one stderr line per request */
} sdc_srv_http_config;

typedef struct sdc_srv_http sdc_srv_http;

/* Starts listening; NULL with a message in err on failure. */
sdc_srv_http *sdc_srv_http_start(const sdc_srv_http_config *cfg, sdc_srv_jobs *jobs, char *err,
                                 size_t err_size);
int sdc_srv_http_port(const sdc_srv_http *h);
/* Stops accepting, waits for connection threads, frees. */
void sdc_srv_http_stop(sdc_srv_http *h);

/* The built-in page at "/" (page.c). */
extern const char sdc_srv_index_html[];

#endif
