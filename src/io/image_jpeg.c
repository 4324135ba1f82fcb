/* JPEG input and output through libjpeg(-turbo).
 *
 * libjpeg's default error handler exit()s and its warnings only print: here errors
 * longjmp back to the entry point, and warnings that mean damaged data (premature end,
 * bad Huffman code, ...) are errors too, so a truncated file is refused instead of being
 * decoded into a partly grey image. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include <jerror.h>

#include "core/log.h"
#include "io/image.h"

/* Progressive files may hold any number of scans, each a pass over the whole image: a
 * few KB could keep the decoder busy for minutes. Real encoders use about 10. */
#define JPEG_MAX_SCANS 500
/* Safety net for libjpeg's own allocations (coefficient buffers of progressive files). */
#define JPEG_MAX_MEMORY (1024L << 20)
/* Largest marker payload: the 16-bit segment length counts itself. */
#define JPEG_MARKER_MAX 65533

typedef struct jpeg_err {
    struct jpeg_error_mgr pub;
    jmp_buf jmp;
    char msg[JMSG_LENGTH_MAX + 64];
} jpeg_err;

static void on_jpeg_error(j_common_ptr cinfo) {
    jpeg_err *e = (jpeg_err *)cinfo->err;
    char m[JMSG_LENGTH_MAX];
    cinfo->err->format_message(cinfo, m);
    snprintf(e->msg, sizeof e->msg, "%s", m);
    longjmp(e->jmp, 1);
}

/* Warnings that do not mean lost image data. */
static int benign_warning(int code) {
    return code == JWRN_ADOBE_XFORM || code == JWRN_JFIF_MAJOR || code == JWRN_BOGUS_ICC;
}

static void on_jpeg_message(j_common_ptr cinfo, int level) {
    if (level >= 0) return; /* trace messages */
    char m[JMSG_LENGTH_MAX];
    cinfo->err->format_message(cinfo, m);
    if (benign_warning(cinfo->err->msg_code)) {
        sdc_log(SDC_LOG_DEBUG, "libjpeg: %s", m);
        return;
    }
    jpeg_err *e = (jpeg_err *)cinfo->err;
    snprintf(e->msg, sizeof e->msg, "%s", m);
    longjmp(e->jmp, 1);
}

static void on_jpeg_output(j_common_ptr cinfo) {
    (void)cinfo; /* never print to stderr from the library */
}

static void init_err(jpeg_err *e) {
    memset(e, 0, sizeof *e);
    jpeg_std_error(&e->pub);
    e->pub.error_exit = on_jpeg_error;
    e->pub.emit_message = on_jpeg_message;
    e->pub.output_message = on_jpeg_output;
}

static void on_progress(j_common_ptr cinfo) {
    if (!cinfo->is_decompressor) return;
    j_decompress_ptr d = (j_decompress_ptr)cinfo;
    if (d->input_scan_number > JPEG_MAX_SCANS) {
        jpeg_err *e = (jpeg_err *)cinfo->err;
        snprintf(e->msg, sizeof e->msg, "more than %d scans", JPEG_MAX_SCANS);
        longjmp(e->jmp, 1);
    }
}

/* ---- reading ---- */

typedef struct jpeg_decoded {
    uint8_t *rgb;
    uint8_t *cmyk_row; /* one row of CMYK samples, converted to RGB by hand */
    int w, h;
} jpeg_decoded;

/* CMYK to RGB as ink on white: R = (1 - C)(1 - K). Adobe writers (Photoshop, libjpeg
 * for CMYK input as Pillow uses it) store inverted samples, 255 = no ink. */
static void cmyk_to_rgb(const uint8_t *cmyk, uint8_t *rgb, int w, int inverted) {
    for (int x = 0; x < w; x++, cmyk += 4, rgb += 3) {
        unsigned k = inverted ? cmyk[3] : 255u - cmyk[3];
        for (int c = 0; c < 3; c++) {
            unsigned v = inverted ? cmyk[c] : 255u - cmyk[c];
            rgb[c] = (uint8_t)((v * k + 127) / 255);
        }
    }
}

/* Everything libjpeg may longjmp out of; returns 0 on success. The caller destroys cinfo
 * and frees out->rgb / out->cmyk_row on failure. */
static int decode_jpeg(struct jpeg_decompress_struct *cinfo, jpeg_err *err, const uint8_t *data,
                       size_t size, jpeg_decoded *out) {
    if (setjmp(err->jmp)) return -1;
    jpeg_create_decompress(cinfo);
    cinfo->mem->max_memory_to_use = JPEG_MAX_MEMORY;
    struct jpeg_progress_mgr progress = {.progress_monitor = on_progress};
    cinfo->progress = &progress;
    jpeg_mem_src(cinfo, data, (unsigned long)size);
    jpeg_read_header(cinfo, TRUE);

    JDIMENSION w = cinfo->image_width, h = cinfo->image_height;
    /* a few bytes of header can claim gigapixels: cap the decoded size */
    if (w > SDC_PNG_MAX_SIDE || h > SDC_PNG_MAX_SIDE || (uint64_t)w * h > SDC_PNG_MAX_PIXELS) {
        snprintf(err->msg, sizeof err->msg,
                 "image size %ux%u exceeds the limit (%d per side, %llu pixels)", (unsigned)w,
                 (unsigned)h, SDC_PNG_MAX_SIDE, (unsigned long long)SDC_PNG_MAX_PIXELS);
        longjmp(err->jmp, 1);
    }
    int cmyk = cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK;
    cinfo->out_color_space = cmyk ? JCS_CMYK : JCS_RGB; /* gray expands to RGB */
    jpeg_start_decompress(cinfo);
    if (cinfo->output_components != (cmyk ? 4 : 3)) {
        snprintf(err->msg, sizeof err->msg, "unexpected %d output components",
                 cinfo->output_components);
        longjmp(err->jmp, 1);
    }

    out->rgb = malloc((size_t)w * h * 3);
    if (cmyk) out->cmyk_row = malloc((size_t)w * 4);
    if (!out->rgb || (cmyk && !out->cmyk_row)) {
        snprintf(err->msg, sizeof err->msg, "out of memory for %ux%u pixels", (unsigned)w,
                 (unsigned)h);
        longjmp(err->jmp, 1);
    }
    while (cinfo->output_scanline < h) {
        uint8_t *dst = out->rgb + (size_t)cinfo->output_scanline * w * 3;
        JSAMPROW row = cmyk ? out->cmyk_row : dst;
        if (jpeg_read_scanlines(cinfo, &row, 1) != 1) {
            snprintf(err->msg, sizeof err->msg, "decoder stopped at row %u of %u",
                     (unsigned)cinfo->output_scanline, (unsigned)h);
            longjmp(err->jmp, 1);
        }
        if (cmyk) cmyk_to_rgb(out->cmyk_row, dst, (int)w, cinfo->saw_Adobe_marker);
    }
    /* reads up to EOI: a file cut after the last scan line still fails here */
    jpeg_finish_decompress(cinfo);
    out->w = (int)w;
    out->h = (int)h;
    return 0;
}

sdc_status sdc_jpeg_read_memory(const void *data, size_t size, const char *label, uint8_t **rgb,
                                int *w, int *h) {
    if (!label) label = "<memory>";
    if (!rgb || !w || !h) return sdc_fail(SDC_ERR_INVALID_ARG, "%s: null output pointer", label);
    *rgb = NULL;
    *w = *h = 0;
    if (!data && size) return sdc_fail(SDC_ERR_INVALID_ARG, "%s: null data", label);
    const uint8_t *p = data;
    if (size < 3 || p[0] != 0xFF || p[1] != 0xD8 || p[2] != 0xFF)
        return sdc_fail(SDC_ERR_FORMAT, "%s: not a JPEG file (bad signature)", label);
    if (size > SDC_IMAGE_FILE_MAX)
        return sdc_fail(SDC_ERR_FORMAT, "%s: %zu bytes is too large for a JPEG image", label, size);

    struct jpeg_decompress_struct cinfo;
    jpeg_err err;
    init_err(&err);
    memset(&cinfo, 0, sizeof cinfo);
    cinfo.err = &err.pub;
    jpeg_decoded out = {NULL, NULL, 0, 0};
    int rc = decode_jpeg(&cinfo, &err, data, size, &out);
    jpeg_destroy_decompress(&cinfo);
    free(out.cmyk_row);
    if (rc != 0) {
        free(out.rgb);
        return sdc_fail(SDC_ERR_FORMAT, "%s: invalid JPEG: %s", label, err.msg);
    }
    *rgb = out.rgb;
    *w = out.w;
    *h = out.h;
    return SDC_OK;
}

/* ---- writing ---- */

static void put16be(uint8_t *p, unsigned v) {
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32be(uint8_t *p, uint32_t v) {
    put16be(p, v >> 16);
    put16be(p + 2, v & 0xFFFF);
}

/* APP1 "Exif" payload holding only an Exif IFD with UserComment = "UNICODE\0" + UTF-16BE,
 * as A1111 writes it (via piexif, big-endian TIFF). Text that does not fit in one
 * segment is cut at a code point. Returns the payload length. */
static size_t build_exif(const char *text, uint8_t *buf) {
    static const uint8_t head[] = {'E', 'x', 'i', 'f', 0, 0, 'M', 'M', 0, 42, 0, 0, 0, 8};
    memcpy(buf, head, sizeof head);
    uint8_t *tiff = buf + 6;
    /* IFD0 at 8: one entry, ExifIFD pointer -> 26 */
    put16be(tiff + 8, 1);
    put16be(tiff + 10, 0x8769), put16be(tiff + 12, 4), put32be(tiff + 14, 1);
    put32be(tiff + 18, 26), put32be(tiff + 22, 0);
    /* Exif IFD at 26: one entry, UserComment (UNDEFINED) whose bytes start at 44 */
    put16be(tiff + 26, 1);
    put16be(tiff + 28, 0x9286), put16be(tiff + 30, 7);
    put32be(tiff + 40, 0);
    uint8_t *uc = tiff + 44;
    memcpy(uc, "UNICODE\0", 8);
    size_t n = 8, cap = JPEG_MARKER_MAX - 6 - 44;
    size_t len = strlen(text), pos = 0;
    while (pos < len) {
        uint32_t cp = sdc_utf8_next((const unsigned char *)text, len, &pos);
        size_t need = cp >= 0x10000 ? 4 : 2;
        if (n + need > cap) break;
        if (cp >= 0x10000) {
            cp -= 0x10000;
            put16be(uc + n, 0xD800 | (cp >> 10));
            put16be(uc + n + 2, 0xDC00 | (cp & 0x3FF));
        } else {
            put16be(uc + n, cp);
        }
        n += need;
    }
    put32be(tiff + 32, (uint32_t)n); /* count */
    put32be(tiff + 36, 44);          /* offset */
    return 6 + 44 + n;
}

/* Everything libjpeg may longjmp out of; returns 0 on success. *buf belongs to the
 * caller (malloc'd by libjpeg's memory destination) also on failure. */
static int encode_jpeg(struct jpeg_compress_struct *cinfo, jpeg_err *err, const sdc_image *img,
                       int quality, const char *parameters, uint8_t *marker, unsigned char **buf,
                       unsigned long *len) {
    if (setjmp(err->jmp)) return -1;
    jpeg_create_compress(cinfo);
    jpeg_mem_dest(cinfo, buf, len);
    cinfo->image_width = img->width;
    cinfo->image_height = img->height;
    cinfo->input_components = (int)img->channels;
    cinfo->in_color_space = img->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(cinfo);
    jpeg_set_quality(cinfo, quality, TRUE);
    cinfo->optimize_coding = TRUE; /* smaller files, same pixels */
    if (img->channels == 3 && quality > 90) {
        /* full-resolution chroma above 90, as sd.cpp's (stb's) writer does */
        cinfo->comp_info[0].h_samp_factor = 1;
        cinfo->comp_info[0].v_samp_factor = 1;
    }
    jpeg_start_compress(cinfo, TRUE);
    if (parameters) {
        size_t n = build_exif(parameters, marker);
        jpeg_write_marker(cinfo, JPEG_APP0 + 1, marker, (unsigned)n);
        /* sd.cpp's -M metadata reads "parameters\0<text>\0" from a COM segment */
        static const char key[] = "parameters";
        size_t tl =
            sdc_utf8_prefix(parameters, strlen(parameters), JPEG_MARKER_MAX - sizeof key - 1);
        memcpy(marker, key, sizeof key);
        memcpy(marker + sizeof key, parameters, tl);
        marker[sizeof key + tl] = 0;
        jpeg_write_marker(cinfo, JPEG_COM, marker, (unsigned)(sizeof key + tl + 1));
    }
    size_t stride = (size_t)img->width * img->channels;
    while (cinfo->next_scanline < cinfo->image_height) {
        JSAMPROW row = img->data + (size_t)cinfo->next_scanline * stride;
        jpeg_write_scanlines(cinfo, &row, 1);
    }
    jpeg_finish_compress(cinfo);
    return 0;
}

sdc_status sdc_jpeg_encode(const sdc_image *img, int quality, const char *parameters,
                           const char *label, uint8_t **out, size_t *out_size) {
    if (!label) label = "<jpeg>";
    if (!out || !out_size) return sdc_fail(SDC_ERR_INVALID_ARG, "%s: null output pointer", label);
    *out = NULL;
    *out_size = 0;
    sdc_status st = sdc_image_check(label, img, true);
    if (st != SDC_OK) return st;
    if (img->width > JPEG_MAX_DIMENSION || img->height > JPEG_MAX_DIMENSION)
        return sdc_fail(SDC_ERR_INVALID_ARG, "%s: %ux%u is too large for JPEG", label, img->width,
                        img->height);
    if (quality <= 0) quality = 90;
    if (quality > 100) quality = 100;
    if (img->channels == 4) { /* as sd.cpp's stb writer: the colour channels, alpha dropped */
        SDC_LOGW("%s: JPEG has no alpha channel; writing the RGB channels only (use .png to keep "
                 "the alpha of RGBA layers)",
                 label);
        size_t n = (size_t)img->width * img->height;
        uint8_t *rgb = malloc(n * 3);
        if (!rgb) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", label);
        for (size_t i = 0; i < n; i++) memcpy(rgb + 3 * i, img->data + 4 * i, 3);
        sdc_image tmp = *img;
        tmp.channels = 3;
        tmp.data = rgb;
        st = sdc_jpeg_encode(&tmp, quality, parameters, label, out, out_size);
        free(rgb);
        return st;
    }

    uint8_t *marker = parameters ? malloc(JPEG_MARKER_MAX) : NULL;
    if (parameters && !marker)
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: cannot allocate the metadata segment", label);
    struct jpeg_compress_struct cinfo;
    jpeg_err err;
    init_err(&err);
    memset(&cinfo, 0, sizeof cinfo);
    cinfo.err = &err.pub;
    unsigned char *buf = NULL;
    unsigned long len = 0;
    int rc = encode_jpeg(&cinfo, &err, img, quality, parameters, marker, &buf, &len);
    jpeg_destroy_compress(&cinfo);
    free(marker);
    if (rc != 0) {
        free(buf);
        return sdc_fail(SDC_ERR_INTERNAL, "%s: cannot encode JPEG: %s", label, err.msg);
    }
    *out = buf;
    *out_size = len;
    return SDC_OK;
}
