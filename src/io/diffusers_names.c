#include "io/model_loader.h"
sdc_status sdc_loader_add_diffusers_folder(sdc_loader *l, const char *dir) {
    return sdc_fail(SDC_ERR_UNSUPPORTED, "%s: todo", dir);
}
