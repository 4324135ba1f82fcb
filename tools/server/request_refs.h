/* Reference images of a server request (sd.cpp's sdcpp `ref_images`, A1111 `extra_images`,
 * OpenAI edit `image[]`): decoding, limits and resizing. Pure, as request.c. Every function
 * returns 0, or an HTTP status (400, 500 when memory is short) with a message in err. */
#ifndef SDC_SERVER_REQUEST_REFS_H
#define SDC_SERVER_REQUEST_REFS_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "request.h"

/* Decodes one image (base64 or a data URL when is_base64, else PNG/JPEG bytes) and appends
 * it to r->refs; label names it in messages ("'ref_images'[1]"). */
int sdc_srv_ref_add(sdc_srv_request *r, const char *label, const void *data, size_t n,
                    bool is_base64, char *err, size_t err_size);

/* A JSON field holding an array of base64 strings (null or absent: none). Replaces the
 * refs held so far, as sd.cpp's ref_images does (a later sd_cpp_extra_args block wins). */
int sdc_srv_refs_from_json(sdc_srv_request *r, const cJSON *obj, const char *field, char *err,
                           size_t err_size);

/* Resizes every reference to w x h as sd.cpp's server loads them when the size is known:
 * a centred crop to the w:h aspect, then a box filter (sdc_image_resize). */
int sdc_srv_refs_fit(sdc_srv_request *r, int w, int h, char *err, size_t err_size);

void sdc_srv_refs_free(sdc_srv_request *r);

#endif
