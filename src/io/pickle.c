/* Restricted pickle VM: see pickle.h. The machine is the standard one (a value stack,
 * a mark stack, a memo) but values are indices into an object array of our own, so
 * nothing is ever called: REDUCE only "applies" the few allowed torch callables by
 * building a tensor record from their arguments.
 *
 * Bounds: every object, stack slot, mark, memo entry and container item is created by
 * an opcode of at least one byte, so all counts are bounded by the pickle's size;
 * on top of that the pickle itself is at most SDC_PK_MAX_BYTES and the object count at
 * most PK_MAX_OBJECTS. */
#include "io/pickle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SDC_PK_MAX_BYTES ((size_t)256 << 20)
#define PK_MAX_OBJECTS   (1 << 22)
#define PK_MAX_MEMO      ((size_t)1 << 22)

struct sdc_pickle {
    const char *label;
    sdc_pk_obj *objs;
    int n, cap;
    char *strings; /* arena: every string's bytes + NUL (never more than the pickle) */
    size_t str_used, str_cap;
    int root;
    size_t end; /* bytes consumed, up to and including STOP */
};

typedef struct vm {
    sdc_pickle *p;
    const uint8_t *d;
    size_t size, pos;
    int *stack;
    size_t sp, stack_cap;
    size_t *marks;
    size_t n_marks, marks_cap;
    int *memo;
    size_t memo_cap;   /* slots allocated (grown on demand) */
    size_t memo_limit; /* memo indices are below the pickle size (one opcode each) */
    size_t memo_count; /* distinct slots set: where MEMOIZE stores */
} vm;

static const struct {
    const char *storage; /* torch.<storage> */
    const char *name;
    size_t size;
} k_dtypes[SDC_PK_NDTYPES] = {
    [SDC_PK_F64] = {"DoubleStorage", "F64", 8}, [SDC_PK_F32] = {"FloatStorage", "F32", 4},
    [SDC_PK_F16] = {"HalfStorage", "F16", 2},   [SDC_PK_BF16] = {"BFloat16Storage", "BF16", 2},
    [SDC_PK_I64] = {"LongStorage", "I64", 8},   [SDC_PK_I32] = {"IntStorage", "I32", 4},
    [SDC_PK_I16] = {"ShortStorage", "I16", 2},  [SDC_PK_I8] = {"CharStorage", "I8", 1},
    [SDC_PK_U8] = {"ByteStorage", "U8", 1},     [SDC_PK_BOOL8] = {"BoolStorage", "BOOL", 1},
};

const char *sdc_pk_dtype_name(sdc_pk_dtype d) {
    return (int)d >= 0 && d < SDC_PK_NDTYPES ? k_dtypes[d].name : "?";
}
size_t sdc_pk_dtype_size(sdc_pk_dtype d) {
    return (int)d >= 0 && d < SDC_PK_NDTYPES ? k_dtypes[d].size : 0;
}

static sdc_status verr(const vm *m, const char *what) {
    return sdc_fail(SDC_ERR_FORMAT, "%s: pickle: %s at byte %zu", m->p->label, what, m->pos);
}

/* ---- objects ------------------------------------------------------------------------- */

static sdc_status new_obj(vm *m, sdc_pk_kind kind, int *out) {
    sdc_pickle *p = m->p;
    if (p->n == p->cap) {
        if (p->cap >= PK_MAX_OBJECTS) return verr(m, "too many objects");
        int cap = p->cap ? p->cap * 2 : 64;
        sdc_pk_obj *o = realloc(p->objs, (size_t)cap * sizeof *o);
        if (!o) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", p->label);
        p->objs = o;
        p->cap = cap;
    }
    memset(&p->objs[p->n], 0, sizeof p->objs[0]);
    p->objs[p->n].kind = kind;
    *out = p->n++;
    return SDC_OK;
}

static sdc_status seq_add(vm *m, int obj, int item) {
    sdc_pk_obj *o = &m->p->objs[obj];
    if (o->v.seq.n == o->v.seq.cap) {
        int cap = o->v.seq.cap ? o->v.seq.cap * 2 : 4;
        int *it = realloc(o->v.seq.items, (size_t)cap * sizeof *it);
        if (!it) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", m->p->label);
        o->v.seq.items = it;
        o->v.seq.cap = cap;
    }
    o->v.seq.items[o->v.seq.n++] = item;
    return SDC_OK;
}

/* A string object from len bytes at the cursor (consumed). */
static sdc_status new_string(vm *m, sdc_pk_kind kind, uint64_t len, int *out) {
    if (len > m->size - m->pos) return verr(m, "string runs past the end");
    sdc_pickle *p = m->p;
    /* the arena grows with the strings actually read (a legacy checkpoint's pickles are
     * prefixes of a large image): strings are kept as offsets until the load ends */
    if (p->str_used + len + 1 > p->str_cap) {
        size_t cap = p->str_cap ? p->str_cap : 4096;
        while (cap < p->str_used + len + 1) cap *= 2;
        char *ns = realloc(p->strings, cap);
        if (!ns) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", p->label);
        p->strings = ns;
        p->str_cap = cap;
    }
    sdc_status st = new_obj(m, kind, out);
    if (st) return st;
    char *s = p->strings + p->str_used;
    memcpy(s, m->d + m->pos, (size_t)len);
    s[len] = '\0';
    p->objs[*out].v.str.off = p->str_used;
    p->objs[*out].v.str.len = (size_t)len;
    p->str_used += (size_t)len + 1;
    m->pos += (size_t)len;
    return SDC_OK;
}

/* ---- stack --------------------------------------------------------------------------- */

static sdc_status push(vm *m, int obj) {
    if (m->sp == m->stack_cap) {
        size_t cap = m->stack_cap ? m->stack_cap * 2 : 64;
        int *s = realloc(m->stack, cap * sizeof *s);
        if (!s) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", m->p->label);
        m->stack = s;
        m->stack_cap = cap;
    }
    m->stack[m->sp++] = obj;
    return SDC_OK;
}

/* Lowest stack slot usable by the current opcode: above the innermost mark. */
static size_t floor_sp(const vm *m) {
    return m->n_marks ? m->marks[m->n_marks - 1] : 0;
}

static sdc_status pop(vm *m, int *obj) {
    if (m->sp <= floor_sp(m)) return verr(m, "stack underflow");
    *obj = m->stack[--m->sp];
    return SDC_OK;
}

static sdc_status top(vm *m, int *obj) {
    if (m->sp <= floor_sp(m)) return verr(m, "stack underflow");
    *obj = m->stack[m->sp - 1];
    return SDC_OK;
}

static sdc_status push_new(vm *m, sdc_pk_kind kind, int *out) {
    int o = -1;
    sdc_status st = new_obj(m, kind, &o);
    if (!st) st = push(m, o);
    if (out) *out = o;
    return st;
}

/* Pops everything above the innermost mark (and the mark): *base is its first slot. */
static sdc_status pop_mark(vm *m, size_t *base) {
    if (!m->n_marks) return verr(m, "no MARK on the stack");
    *base = m->marks[--m->n_marks];
    return SDC_OK;
}

/* ---- reading ------------------------------------------------------------------------- */

static sdc_status need(vm *m, size_t n) {
    return n <= m->size - m->pos ? SDC_OK : verr(m, "truncated opcode argument");
}

static uint64_t rd_le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* A "module\nname\n"-style text line at the cursor (GLOBAL's arguments). */
static sdc_status read_line(vm *m, char *buf, size_t cap) {
    const uint8_t *nl = memchr(m->d + m->pos, '\n', m->size - m->pos);
    if (!nl) return verr(m, "GLOBAL without a newline");
    size_t len = (size_t)(nl - (m->d + m->pos));
    if (len >= cap) return verr(m, "GLOBAL name too long");
    memcpy(buf, m->d + m->pos, len);
    buf[len] = '\0';
    if (strlen(buf) != len) return verr(m, "GLOBAL name with a NUL byte");
    m->pos += len + 1;
    return SDC_OK;
}

/* The allowed global module.name, or an error naming it. */
static sdc_status global(vm *m, const char *mod, const char *name) {
    int o = -1;
    sdc_status st;
    if (strcmp(mod, "collections") == 0 && strcmp(name, "OrderedDict") == 0) {
        if ((st = push_new(m, SDC_PK_GLOBAL, &o))) return st;
        m->p->objs[o].v.global.which = SDC_PKG_ORDERED_DICT;
        return SDC_OK;
    }
    static const struct {
        const char *name;
        sdc_pk_global which;
    } k_utils[] = {{"_rebuild_tensor", SDC_PKG_REBUILD_TENSOR},
                   {"_rebuild_tensor_v2", SDC_PKG_REBUILD_TENSOR_V2},
                   {"_rebuild_parameter", SDC_PKG_REBUILD_PARAM},
                   {"_rebuild_parameter_with_state", SDC_PKG_REBUILD_PARAM_ST}};
    if (strcmp(mod, "torch._utils") == 0)
        for (size_t i = 0; i < sizeof k_utils / sizeof k_utils[0]; i++)
            if (strcmp(name, k_utils[i].name) == 0) {
                if ((st = push_new(m, SDC_PK_GLOBAL, &o))) return st;
                m->p->objs[o].v.global.which = k_utils[i].which;
                return SDC_OK;
            }
    if (strcmp(mod, "torch") == 0)
        for (int d = 0; d < SDC_PK_NDTYPES; d++)
            if (strcmp(name, k_dtypes[d].storage) == 0) {
                if ((st = push_new(m, SDC_PK_GLOBAL, &o))) return st;
                m->p->objs[o].v.global.which = SDC_PKG_STORAGE_TYPE;
                m->p->objs[o].v.global.dtype = (sdc_pk_dtype)d;
                return SDC_OK;
            }
    return sdc_fail(SDC_ERR_UNSUPPORTED,
                    "%s: pickle global '%s.%s' is not allowed (only tensors, storages and "
                    "collections.OrderedDict are): refusing to load it, since unpickling it "
                    "could run code; convert the file to safetensors with a tool you trust",
                    m->p->label, mod, name);
}

/* ---- REDUCE / BINPERSID ------------------------------------------------------------- */

static const sdc_pk_obj *obj(const vm *m, int i) {
    return &m->p->objs[i];
}

/* A string object's text while loading (the arena may still move). */
static const char *sv(const vm *m, int i) {
    return m->p->strings + m->p->objs[i].v.str.off;
}

static bool is_int(const vm *m, int i) {
    return obj(m, i)->kind == SDC_PK_INT || obj(m, i)->kind == SDC_PK_BOOL;
}

/* A tuple of ints (tensor size or stride) into dims[]. */
static sdc_status int_tuple(vm *m, int t, int64_t *dims, int *n, const char *what) {
    const sdc_pk_obj *o = obj(m, t);
    char msg[96];
    if (o->kind != SDC_PK_TUPLE) {
        snprintf(msg, sizeof msg, "tensor %s is not a tuple", what);
        return verr(m, msg);
    }
    if (o->v.seq.n > SDC_PK_MAX_DIMS) {
        snprintf(msg, sizeof msg, "tensor %s has %d dimensions (at most %d)", what, o->v.seq.n,
                 SDC_PK_MAX_DIMS);
        return verr(m, msg);
    }
    for (int i = 0; i < o->v.seq.n; i++) {
        if (!is_int(m, o->v.seq.items[i])) {
            snprintf(msg, sizeof msg, "tensor %s holds a non-integer", what);
            return verr(m, msg);
        }
        dims[i] = obj(m, o->v.seq.items[i])->v.i;
    }
    *n = o->v.seq.n;
    return SDC_OK;
}

/* _rebuild_tensor(_v2)(storage, offset, size, stride, ...) -> a tensor object. */
static sdc_status rebuild_tensor(vm *m, const sdc_pk_obj *args, int min_args, int *out) {
    if (args->v.seq.n < min_args) return verr(m, "tensor rebuild with too few arguments");
    const int *a = args->v.seq.items;
    if (obj(m, a[0])->kind != SDC_PK_STORAGE) return verr(m, "tensor rebuild without a storage");
    if (!is_int(m, a[1])) return verr(m, "tensor storage offset is not an integer");
    int64_t size[SDC_PK_MAX_DIMS], stride[SDC_PK_MAX_DIMS];
    int nd, ns;
    sdc_status st;
    if ((st = int_tuple(m, a[2], size, &nd, "size"))) return st;
    if ((st = int_tuple(m, a[3], stride, &ns, "stride"))) return st;
    if (nd != ns) return verr(m, "tensor size and stride differ in length");
    int storage = a[0];
    int64_t off = obj(m, a[1])->v.i;
    if ((st = new_obj(m, SDC_PK_TENSOR, out))) return st;
    sdc_pk_obj *t = &m->p->objs[*out];
    t->v.tensor.storage = storage;
    t->v.tensor.offset = off;
    t->v.tensor.ndim = nd;
    memcpy(t->v.tensor.size, size, sizeof size);
    memcpy(t->v.tensor.stride, stride, sizeof stride);
    return SDC_OK;
}

static sdc_status reduce(vm *m) {
    int fn = -1, args = -1, res = -1;
    sdc_status st;
    if ((st = pop(m, &args)) || (st = pop(m, &fn))) return st;
    if (obj(m, fn)->kind != SDC_PK_GLOBAL) return verr(m, "REDUCE on something not callable");
    if (obj(m, args)->kind != SDC_PK_TUPLE) return verr(m, "REDUCE arguments are not a tuple");
    const sdc_pk_obj *a = obj(m, args);
    switch (obj(m, fn)->v.global.which) {
    case SDC_PKG_ORDERED_DICT:
        if (a->v.seq.n != 0) return verr(m, "OrderedDict() with arguments");
        st = new_obj(m, SDC_PK_DICT, &res);
        break;
    case SDC_PKG_REBUILD_TENSOR:
        st = rebuild_tensor(m, a, 4, &res);
        break;
    case SDC_PKG_REBUILD_TENSOR_V2:
        st = rebuild_tensor(m, a, 6, &res);
        break;
    case SDC_PKG_REBUILD_PARAM:
    case SDC_PKG_REBUILD_PARAM_ST:
        if (a->v.seq.n < 3 || obj(m, a->v.seq.items[0])->kind != SDC_PK_TENSOR)
            return verr(m, "parameter rebuild without a tensor");
        res = a->v.seq.items[0];
        break;
    case SDC_PKG_STORAGE_TYPE:
        return verr(m, "a storage class called directly");
    }
    if (st) return st;
    return push(m, res);
}

/* BINPERSID: ('storage', torch.<T>Storage, key, location, numel) -> a storage object. */
static sdc_status persistent(vm *m) {
    int pid = -1, o = -1;
    sdc_status st;
    if ((st = pop(m, &pid))) return st;
    const sdc_pk_obj *t = obj(m, pid);
    if (t->kind != SDC_PK_TUPLE || t->v.seq.n < 5) return verr(m, "persistent id is not a tuple");
    const int *a = t->v.seq.items;
    if (obj(m, a[0])->kind != SDC_PK_STR || strcmp(sv(m, a[0]), "storage") != 0)
        return verr(m, "persistent id is not a storage");
    if (obj(m, a[1])->kind != SDC_PK_GLOBAL || obj(m, a[1])->v.global.which != SDC_PKG_STORAGE_TYPE)
        return verr(m, "storage without a torch storage type");
    if (obj(m, a[2])->kind != SDC_PK_STR) return verr(m, "storage key is not a string");
    if (!is_int(m, a[4]) || obj(m, a[4])->v.i < 0) return verr(m, "bad storage element count");
    sdc_pk_dtype dt = obj(m, a[1])->v.global.dtype;
    int key = a[2];
    int64_t numel = obj(m, a[4])->v.i;
    if ((st = new_obj(m, SDC_PK_STORAGE, &o))) return st;
    sdc_pk_obj *s = &m->p->objs[o];
    s->v.storage.dtype = dt;
    s->v.storage.key_str = key;
    s->v.storage.numel = numel;
    return push(m, o);
}

/* ---- the opcode loop ------------------------------------------------------------------ */

static sdc_status memo_put(vm *m, uint64_t idx, int o) {
    if (idx >= m->memo_limit) return verr(m, "memo index out of range");
    if (idx >= m->memo_cap) {
        size_t cap = m->memo_cap ? m->memo_cap * 2 : 256;
        if (cap <= idx) cap = (size_t)idx + 1;
        if (cap > m->memo_limit) cap = m->memo_limit;
        int *nm = realloc(m->memo, cap * sizeof *nm);
        if (!nm) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", m->p->label);
        for (size_t i = m->memo_cap; i < cap; i++) nm[i] = -1;
        m->memo = nm;
        m->memo_cap = cap;
    }
    if (m->memo[idx] < 0) m->memo_count++;
    m->memo[idx] = o;
    return SDC_OK;
}

static sdc_status memo_get(vm *m, uint64_t idx) {
    if (idx >= m->memo_cap || m->memo[idx] < 0) return verr(m, "memo index not set");
    return push(m, m->memo[idx]);
}

static sdc_status tuple_of(vm *m, size_t base) {
    int t;
    sdc_status st = new_obj(m, SDC_PK_TUPLE, &t);
    for (size_t i = base; !st && i < m->sp; i++) st = seq_add(m, t, m->stack[i]);
    if (st) return st;
    m->sp = base;
    return push(m, t);
}

static sdc_status add_items(vm *m, size_t base, bool dict) {
    if (base == 0) return verr(m, "no container below the MARK");
    int c = m->stack[base - 1];
    sdc_pk_kind want = dict ? SDC_PK_DICT : SDC_PK_LIST;
    if (obj(m, c)->kind != want)
        return verr(m, dict ? "SETITEMS on a non-dict" : "APPENDS on a non-list");
    if (dict && (m->sp - base) % 2) return verr(m, "SETITEMS with an odd item count");
    sdc_status st = SDC_OK;
    for (size_t i = base; !st && i < m->sp; i++) st = seq_add(m, c, m->stack[i]);
    m->sp = base;
    return st;
}

static sdc_status op_int(vm *m, int nbytes, bool is_signed) {
    sdc_status st = need(m, (size_t)nbytes);
    if (st) return st;
    uint64_t u = rd_le(m->d + m->pos, nbytes);
    m->pos += (size_t)nbytes;
    int64_t v = (int64_t)u;
    if (is_signed && nbytes == 4) v = (int32_t)(uint32_t)u;
    int o = -1;
    if ((st = push_new(m, SDC_PK_INT, &o))) return st;
    m->p->objs[o].v.i = v;
    return SDC_OK;
}

/* LONG1: n little-endian two's complement bytes; only values that fit 64 bits. */
static sdc_status op_long1(vm *m) {
    sdc_status st = need(m, 1);
    if (st) return st;
    size_t n = m->d[m->pos++];
    if ((st = need(m, n))) return st;
    if (n > 8) return verr(m, "integer wider than 64 bits");
    uint64_t u = n ? rd_le(m->d + m->pos, (int)n) : 0;
    if (n && n < 8 && (m->d[m->pos + n - 1] & 0x80)) u |= ~0ull << (8 * n);
    m->pos += n;
    int o = -1;
    if ((st = push_new(m, SDC_PK_INT, &o))) return st;
    m->p->objs[o].v.i = (int64_t)u;
    return SDC_OK;
}

static sdc_status op_string(vm *m, sdc_pk_kind kind, int len_bytes) {
    sdc_status st = need(m, (size_t)len_bytes);
    if (st) return st;
    uint64_t len = rd_le(m->d + m->pos, len_bytes);
    m->pos += (size_t)len_bytes;
    int o = -1;
    if ((st = new_string(m, kind, len, &o))) return st;
    return push(m, o);
}

static sdc_status op_global(vm *m) {
    char mod[256], name[256];
    sdc_status st;
    if ((st = read_line(m, mod, sizeof mod)) || (st = read_line(m, name, sizeof name))) return st;
    return global(m, mod, name);
}

static sdc_status op_stack_global(vm *m) {
    int mod = -1, name = -1;
    sdc_status st;
    if ((st = pop(m, &name)) || (st = pop(m, &mod))) return st;
    if (obj(m, mod)->kind != SDC_PK_STR || obj(m, name)->kind != SDC_PK_STR)
        return verr(m, "STACK_GLOBAL on non-strings");
    return global(m, sv(m, mod), sv(m, name));
}

/* BUILD: the state of an OrderedDict (e.g. its _metadata) or a tensor is dropped. */
static sdc_status op_build(vm *m) {
    int state = -1, target = -1;
    sdc_status st;
    if ((st = pop(m, &state)) || (st = top(m, &target))) return st;
    sdc_pk_kind k = obj(m, target)->kind;
    if (k != SDC_PK_DICT && k != SDC_PK_TENSOR) return verr(m, "BUILD on an unsupported object");
    return SDC_OK;
}

/* Opcodes that push one plain value (None, bools, ints, floats, strings, bytes). */
static sdc_status step_scalar(vm *m, uint8_t op) {
    sdc_status st;
    int o = -1;
    switch (op) {
    case 'N':
        return push_new(m, SDC_PK_NONE, NULL);
    case 0x88: /* NEWTRUE */
    case 0x89: /* NEWFALSE */
        if ((st = push_new(m, SDC_PK_BOOL, &o))) return st;
        m->p->objs[o].v.i = op == 0x88;
        return SDC_OK;
    case 'K': /* BININT1 */
        return op_int(m, 1, false);
    case 'M': /* BININT2 */
        return op_int(m, 2, false);
    case 'J': /* BININT */
        return op_int(m, 4, true);
    case 0x8a: /* LONG1 */
        return op_long1(m);
    case 'G': { /* BINFLOAT: big-endian double */
        if ((st = need(m, 8))) return st;
        uint64_t u = 0;
        for (int i = 0; i < 8; i++) u = u << 8 | m->d[m->pos + i];
        m->pos += 8;
        double f;
        memcpy(&f, &u, 8);
        if ((st = push_new(m, SDC_PK_FLOAT, &o))) return st;
        m->p->objs[o].v.f = f;
        return SDC_OK;
    }
    case 'X': /* BINUNICODE */
        return op_string(m, SDC_PK_STR, 4);
    case 0x8c: /* SHORT_BINUNICODE */
        return op_string(m, SDC_PK_STR, 1);
    case 0x8d: /* BINUNICODE8 */
        return op_string(m, SDC_PK_STR, 8);
    case 'T': /* BINSTRING */
        return op_string(m, SDC_PK_STR, 4);
    case 'U': /* SHORT_BINSTRING */
        return op_string(m, SDC_PK_STR, 1);
    case 'B': /* BINBYTES */
        return op_string(m, SDC_PK_BYTES, 4);
    case 'C': /* SHORT_BINBYTES */
        return op_string(m, SDC_PK_BYTES, 1);
    case 0x8e: /* BINBYTES8 */
        return op_string(m, SDC_PK_BYTES, 8);
    default: {
        char msg[64];
        snprintf(msg, sizeof msg, "unsupported opcode 0x%02x", op);
        m->pos--;
        return verr(m, msg);
    }
    }
}

static sdc_status step(vm *m, uint8_t op, bool *stop) {
    sdc_status st = SDC_OK;
    int o = -1;
    size_t base = 0;
    switch (op) {
    case 0x80: /* PROTO */
        if ((st = need(m, 1))) return st;
        if (m->d[m->pos] > 5) return verr(m, "pickle protocol above 5");
        m->pos++;
        return SDC_OK;
    case 0x95: /* FRAME: an 8-byte length; the frame's opcodes follow inline */
        if ((st = need(m, 8))) return st;
        m->pos += 8;
        return SDC_OK;
    case '.': /* STOP */
        *stop = true;
        return SDC_OK;
    case '(': /* MARK */
        if (m->n_marks == m->marks_cap) {
            size_t cap = m->marks_cap ? m->marks_cap * 2 : 16;
            size_t *mk = realloc(m->marks, cap * sizeof *mk);
            if (!mk) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", m->p->label);
            m->marks = mk;
            m->marks_cap = cap;
        }
        m->marks[m->n_marks++] = m->sp;
        return SDC_OK;
    case '0': /* POP */
        return pop(m, &o);
    case '1': /* POP_MARK */
        if ((st = pop_mark(m, &base))) return st;
        m->sp = base;
        return SDC_OK;
    case '2': /* DUP */
        if ((st = top(m, &o))) return st;
        return push(m, o);
    case ')':
        return push_new(m, SDC_PK_TUPLE, NULL);
    case ']':
        return push_new(m, SDC_PK_LIST, NULL);
    case '}':
        return push_new(m, SDC_PK_DICT, NULL);
    case 't': /* TUPLE */
        if ((st = pop_mark(m, &base))) return st;
        return tuple_of(m, base);
    case 0x85: /* TUPLE1..3 */
    case 0x86:
    case 0x87: {
        size_t k = (size_t)(op - 0x84);
        if (m->sp < floor_sp(m) + k) return verr(m, "stack underflow");
        return tuple_of(m, m->sp - k);
    }
    case 'l': /* LIST */
    case 'd': /* DICT */
        if ((st = pop_mark(m, &base))) return st;
        if (op == 'd' && (m->sp - base) % 2) return verr(m, "DICT with an odd item count");
        if ((st = new_obj(m, op == 'l' ? SDC_PK_LIST : SDC_PK_DICT, &o))) return st;
        for (size_t i = base; !st && i < m->sp; i++) st = seq_add(m, o, m->stack[i]);
        if (st) return st;
        m->sp = base;
        return push(m, o);
    case 'a': { /* APPEND */
        int v = -1, c = -1;
        if ((st = pop(m, &v)) || (st = top(m, &c))) return st;
        if (obj(m, c)->kind != SDC_PK_LIST) return verr(m, "APPEND on a non-list");
        return seq_add(m, c, v);
    }
    case 'e': /* APPENDS */
        if ((st = pop_mark(m, &base))) return st;
        return add_items(m, base, false);
    case 's': { /* SETITEM */
        int k = -1, v = -1, c = -1;
        if ((st = pop(m, &v)) || (st = pop(m, &k)) || (st = top(m, &c))) return st;
        if (obj(m, c)->kind != SDC_PK_DICT) return verr(m, "SETITEM on a non-dict");
        if ((st = seq_add(m, c, k))) return st;
        return seq_add(m, c, v);
    }
    case 'u': /* SETITEMS */
        if ((st = pop_mark(m, &base))) return st;
        return add_items(m, base, true);
    case 'q':   /* BINPUT */
    case 'r':   /* LONG_BINPUT */
    case 'h':   /* BINGET */
    case 'j': { /* LONG_BINGET */
        int w = op == 'q' || op == 'h' ? 1 : 4;
        if ((st = need(m, (size_t)w))) return st;
        uint64_t idx = rd_le(m->d + m->pos, w);
        m->pos += (size_t)w;
        if (op == 'h' || op == 'j') return memo_get(m, idx);
        if ((st = top(m, &o))) return st;
        return memo_put(m, idx, o);
    }
    case 0x94: { /* MEMOIZE: the next free memo index */
        if ((st = top(m, &o))) return st;
        return memo_put(m, m->memo_count, o);
    }
    case 'c': /* GLOBAL */
        return op_global(m);
    case 0x93: /* STACK_GLOBAL */
        return op_stack_global(m);
    case 'R':
        return reduce(m);
    case 'Q': /* BINPERSID */
        return persistent(m);
    case 'b':
        return op_build(m);
    default:
        return step_scalar(m, op);
    }
}

sdc_status sdc_pickle_load(const uint8_t *data, size_t size, const char *label, sdc_pickle **out) {
    *out = NULL;
    if (!label) label = "<pickle>";
    /* a pickle may be the head of a larger image (legacy checkpoints): it must end
     * within SDC_PK_MAX_BYTES ("ends without STOP" otherwise) */
    if (size > SDC_PK_MAX_BYTES) size = SDC_PK_MAX_BYTES;
    sdc_pickle *p = calloc(1, sizeof *p);
    vm m = {.p = p, .d = data, .size = size};
    sdc_status st = SDC_OK;
    if (p) {
        p->label = label;
        p->root = -1;
        m.memo_limit = size < PK_MAX_MEMO ? size : PK_MAX_MEMO;
    }
    if (!p) {
        st = sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", label);
        goto done;
    }
    bool stop = false;
    while (!stop) {
        if (m.pos >= size) {
            st = verr(&m, "pickle ends without STOP");
            goto done;
        }
        uint8_t op = data[m.pos++];
        if ((st = step(&m, op, &stop))) goto done;
    }
    if (m.sp != 1 || m.n_marks) {
        st = verr(&m, "STOP with a stack that does not hold exactly one value");
        goto done;
    }
    p->root = m.stack[0];
    p->end = m.pos;
    /* the arena is final: strings and storage keys become pointers */
    for (int i = 0; i < p->n; i++)
        if (p->objs[i].kind == SDC_PK_STR || p->objs[i].kind == SDC_PK_BYTES)
            p->objs[i].v.str.s = p->strings + p->objs[i].v.str.off;
    for (int i = 0; i < p->n; i++)
        if (p->objs[i].kind == SDC_PK_STORAGE)
            p->objs[i].v.storage.key = p->objs[p->objs[i].v.storage.key_str].v.str.s;
done:
    free(m.stack);
    free(m.marks);
    free(m.memo);
    if (st) {
        sdc_pickle_free(p);
        return st;
    }
    /* the label belongs to the caller; errors after load do not need it */
    p->label = NULL;
    *out = p;
    return SDC_OK;
}

void sdc_pickle_free(sdc_pickle *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) {
        sdc_pk_kind k = p->objs[i].kind;
        if (k == SDC_PK_TUPLE || k == SDC_PK_LIST || k == SDC_PK_DICT) free(p->objs[i].v.seq.items);
    }
    free(p->objs);
    free(p->strings);
    free(p);
}

int sdc_pickle_root(const sdc_pickle *p) {
    return p->root;
}
const sdc_pk_obj *sdc_pickle_obj(const sdc_pickle *p, int i) {
    return i >= 0 && i < p->n ? &p->objs[i] : NULL;
}
int sdc_pickle_obj_count(const sdc_pickle *p) {
    return p->n;
}
size_t sdc_pickle_end(const sdc_pickle *p) {
    return p->end;
}
