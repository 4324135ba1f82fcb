/* Layer split: one module's repeated blocks (transformer layers) spread over several
 * devices in contiguous ranges ("--backend diffusion=cpu0&cpu1").
 *
 * The partitioner sizes the ranges from the blocks' weight bytes and each device's budget
 * (--max-vram, else its memory) minus a compute headroom; the first device is the main one
 * and also holds everything outside the blocks. The split backend implements the backend
 * interface over the devices' backends: it cuts each graph at the range boundaries (the
 * `block` tags builders set with sdc_graph_set_block), runs each segment on its device and
 * copies the tensors that cross a cut, so models and stages run unchanged. */
#ifndef SDC_PLACEMENT_SPLIT_H
#define SDC_PLACEMENT_SPLIT_H

#include <stdint.h>

#include "core/backend.h"
#include "placement/placement.h"

/* Contiguous block ranges: device d gets blocks first[d] .. first[d+1]-1 (first has n_dev+1
 * entries, first[0] = 0, first[n_dev] = n_blocks). Device d can hold
 *   cap_d = budget[d] - headroom[d] - (d == 0 ? main_bytes : 0)
 * of block weights. Blocks are shared out in proportion to cap_d: block i goes to the first
 * device whose cumulative share of the total block bytes lies beyond the block's middle,
 * as long as the device's cap allows it; if that leaves blocks over, each device in turn
 * takes as many as its cap holds. Errors: the main device cannot hold the weights outside
 * the blocks, or the blocks do not fit in the caps (named with the bytes). */
sdc_status sdc_split_partition(const uint64_t *block_bytes, int n_blocks, uint64_t main_bytes,
                               const uint64_t *budget, const uint64_t *headroom, int n_dev,
                               int *first);

/* "512 bytes", "3.5 KiB", "1.50 MiB" for messages. */
const char *sdc_split_bytes_str(uint64_t b, char *buf, size_t size);

/* What the last split compute did, per device (in the order given at creation). */
typedef struct sdc_split_device_stats {
    int first_block, n_blocks; /* its range (n_blocks 0: none) */
    uint64_t budget;           /* what the partition planned with */
    uint64_t headroom;         /* compute headroom it reserved (planned peak + imports) */
    uint64_t weights;          /* weight bytes of its blocks (+ non-block ones on the main) */
    uint64_t scratch_peak;     /* the largest planned scratch of its segments (allocator's) */
    uint64_t transit;          /* bytes of imported tensors it holds */
    double row_share;          /* row split: its share of every split matmul's rows */
} sdc_split_device_stats;

typedef struct sdc_split_stats {
    int n_devices;
    int n_segments;         /* cuts = n_segments - 1; 0: the last graph ran unsplit */
    uint64_t bytes_copied;  /* per compute: every tensor copied across a cut */
    uint64_t headroom;      /* compute headroom the partition reserved per device */
    double seconds_copying; /* of the last compute */
    int n_row_matmuls;      /* row split: matmuls sliced in the last graph */
    sdc_split_device_stats dev[SDC_MAX_SPLIT];
} sdc_split_stats;

/* A backend running graphs over children[0..n) (children[0] the main device; not owned,
 * they must outlive it) on registry devices devices[0..n). `label` ("diffusion", "te")
 * names the module in the partition's log line. NULL (with sdc_fail) for n outside
 * 2..SDC_MAX_SPLIT or a child whose memory is not host memory (no accelerator split yet). */
sdc_backend *sdc_split_backend_create(const char *label, sdc_backend *const *children,
                                      const int *devices, int n);
/* Layer split (whole blocks per device, the default) or row split: every block matmul
 * whose weight is a plain 2-D weight with at least one row per device is computed as row
 * slices of the weight, one per device in proportion to the budgets, joined (concatenated)
 * on the main device; everything else runs on the main device. */
typedef enum sdc_split_mode { SDC_SPLIT_LAYER = 0, SDC_SPLIT_ROW = 1 } sdc_split_mode;
void sdc_split_backend_set_mode(sdc_backend *b, sdc_split_mode mode);

/* --split-mode: "layer" or "row" for every module, or comma-separated "MODULE=MODE" entries
 * (module names and aliases of placement.h; a module's own entry beats a bare mode wherever
 * it stands; a later entry for the same key wins). NULL or "": layer everywhere. Errors name
 * the bad piece; on error `modes` (SDC_MODULE_COUNT entries) is left as it was. */
sdc_status sdc_split_mode_parse(const char *spec, sdc_split_mode *modes);

/* Stats of the last compute; false when b is not a split backend. */
bool sdc_split_backend_stats(const sdc_backend *b, sdc_split_stats *out);
/* The last partition's description ("diffusion: blocks 0-8 on cpu0, ..."), "" before one. */
const char *sdc_split_backend_describe(const sdc_backend *b);

#endif
