/*
 * citeval._v2020: decode a chunk of S2ORC v2020 metadata lines straight into Arrow buffers.
 *
 * Parse spent most of its CPU turning each record into Python objects (msgspec) and those
 * into Arrow arrays. This decoder walks the chunk once and copies the seven fields ingest
 * reads into the buffers of the staged papers columns, without a Python object per value.
 *
 * It is an accelerator, not a second definition of the format: it accepts only chunks it
 * is sure of, and returns None for any other, which ingest then decodes the exact way
 * (msgspec), so results, errors and skip counts never depend on which path ran. A chunk is
 * refused when any line is not exactly one JSON object followed by optional whitespace,
 * when a field ingest reads has a type V2020Paper would reject or that this decoder does
 * not handle (a year that is not a plain integer in int32, an empty or missing paper_id, a
 * key with an escape, a key given twice, a lone surrogate escape), when the chunk is not
 * valid UTF-8, or when nesting is deeper than MAX_DEPTH. Everything else in a record
 * (authors, venue, ids...) is checked for JSON syntax and skipped.
 *
 * decode(chunk, n_lines) returns None, or a tuple of one entry per staged column, in
 * STAGE_PAPERS_SCHEMA order without _line:
 *   paper_id, title, abstract: (validity or None, null_count, offsets, data)
 *   year:                      (validity or None, null_count, values)
 *   fields, outbound, inbound: (validity or None, null_count, list offsets,
 *                               value offsets, value data)
 * Offsets are int32, validity is an LSB-first bitmap, as Arrow lays them out.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

/* ------------------------------------------------------------------------------------ */
/* Growable buffers */

typedef struct {
    char *data;
    size_t len, cap;
} Buffer;

static int reserve(Buffer *b, size_t extra) {
    if (b->len + extra <= b->cap) return 0;
    size_t cap = b->len + extra > 2 * b->cap ? b->len + extra : 2 * b->cap;
    char *grown = realloc(b->data, cap);
    if (!grown) return -1;
    b->data = grown;
    b->cap = cap;
    return 0;
}

static int push_i32(Buffer *b, int32_t value) {
    if (reserve(b, sizeof value)) return -1;
    memcpy(b->data + b->len, &value, sizeof value);
    b->len += sizeof value;
    return 0;
}

static PyObject *to_bytes(const Buffer *b) {
    return PyBytes_FromStringAndSize(b->data ? b->data : "", (Py_ssize_t)b->len);
}

/* A validity bitmap for n rows, all valid until cleared. */
typedef struct {
    uint8_t *bits;
    Py_ssize_t nulls;
} Validity;

static int validity_init(Validity *v, Py_ssize_t n) {
    v->bits = malloc((size_t)(n + 7) / 8 + 1);
    if (!v->bits) return -1;
    memset(v->bits, 0xff, (size_t)(n + 7) / 8 + 1);
    v->nulls = 0;
    return 0;
}

static void set_null(Validity *v, Py_ssize_t row) {
    v->bits[row >> 3] &= (uint8_t)~(1u << (row & 7));
    v->nulls++;
}

static PyObject *validity_object(const Validity *v, Py_ssize_t n) {
    if (!v->nulls) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)v->bits, (n + 7) / 8);
}

/* ------------------------------------------------------------------------------------ */
/* Columns */

typedef struct {
    Validity valid;
    Buffer offsets; /* int32, n + 1 */
    Buffer data;    /* sized to the chunk up front: decoded text never exceeds its JSON */
} StringColumn;

typedef struct {
    Validity valid;
    Buffer list_offsets;  /* int32, n + 1 */
    Buffer value_offsets; /* int32, one per string + 1 */
    Buffer data;
} ListColumn;

typedef struct {
    Validity valid;
    Buffer values; /* int32 */
} IntColumn;

enum { PAPER_ID, TITLE, ABSTRACT, YEAR, FIELDS, OUTBOUND, INBOUND, N_KEYS };

typedef struct {
    const char *end; /* of the chunk */
    int out_of_memory;
    StringColumn strings[3]; /* paper_id, title, abstract */
    IntColumn year;
    ListColumn lists[3]; /* fields, outbound, inbound */
} Decoder;

/* ------------------------------------------------------------------------------------ */
/* Scanning, without the GIL. Every function returns the position after what it read, or
 * NULL to refuse the chunk; running out of memory also returns NULL, with out_of_memory
 * set. */

static inline const char *skip_space(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
    return p;
}

static inline int is_space_or_newline(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static inline uint64_t load64(const char *p) {
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* Strings are scanned a block at a time for the bytes that end a plain ASCII run: a quote,
 * a backslash, a control character (< 0x20, which JSON forbids raw) or the first byte of a
 * multi-byte UTF-8 sequence, which is validated on the spot. special_bits gives one bit per
 * byte of the block (lowest bit, first byte) that may be such a byte; the lowest set bit is
 * always exact, higher ones may be false alarms, which only cost a rescan. */
#if defined(__SSE2__)
#include <emmintrin.h>
#define BLOCK 16
static inline uint32_t special_bits(const char *p) {
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    __m128i quote = _mm_cmpeq_epi8(v, _mm_set1_epi8('"'));
    __m128i slash = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));
    __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
    __m128i found = _mm_or_si128(_mm_or_si128(quote, slash), _mm_or_si128(control, v));
    return (uint32_t)_mm_movemask_epi8(found);
}
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define BLOCK 8
static inline uint64_t special_bits(const char *p) {
    uint64_t x = load64(p);
    uint64_t quote = x ^ (ONES * '"');
    uint64_t slash = x ^ (ONES * '\\');
    uint64_t found = ((quote - ONES) & ~quote) | ((slash - ONES) & ~slash) | (x - ONES * 0x20);
    return ((found & ~x) | x) & HIGHS;
}
#else
#define BLOCK 1
static inline uint32_t special_bits(const char *p) {
    unsigned char c = (unsigned char)*p;
    return c == '"' || c == '\\' || c < 0x20 || c >= 0x80;
}
#endif

/* Which byte of the block special_bits flags first. */
static inline int first_special(uint64_t bits) {
#if BLOCK == 8
    return __builtin_ctzll(bits) >> 3;
#elif BLOCK == 16
    return __builtin_ctzll(bits);
#else
    (void)bits;
    return 0;
#endif
}

static int hex4(const char *p, const char *end, uint32_t *out) {
    if (end - p < 4) return -1;
    uint32_t value = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        value <<= 4;
        if (c >= '0' && c <= '9') value |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') value |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') value |= (uint32_t)(c - 'A' + 10);
        else return -1;
    }
    *out = value;
    return 0;
}

static char *put_utf8(char *out, uint32_t cp) {
    if (cp < 0x80) {
        *out++ = (char)cp;
    } else if (cp < 0x800) {
        *out++ = (char)(0xC0 | (cp >> 6));
        *out++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *out++ = (char)(0xE0 | (cp >> 12));
        *out++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *out++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *out++ = (char)(0xF0 | (cp >> 18));
        *out++ = (char)(0x80 | ((cp >> 12) & 0x3F));
        *out++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *out++ = (char)(0x80 | (cp & 0x3F));
    }
    return out;
}

/* The escape after a backslash at p (p points past the backslash). Writes its UTF-8 to
 * *out when out is not NULL. */
static const char *read_escape(const char *p, const char *end, char **out) {
    if (p >= end) return NULL;
    char c = *p++, decoded;
    switch (c) {
    case '"': decoded = '"'; break;
    case '\\': decoded = '\\'; break;
    case '/': decoded = '/'; break;
    case 'b': decoded = '\b'; break;
    case 'f': decoded = '\f'; break;
    case 'n': decoded = '\n'; break;
    case 'r': decoded = '\r'; break;
    case 't': decoded = '\t'; break;
    case 'u': {
        uint32_t cp, low;
        if (hex4(p, end, &cp)) return NULL;
        p += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return NULL; /* lone low surrogate */
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, end, &low))
                return NULL;
            if (low < 0xDC00 || low > 0xDFFF) return NULL;
            p += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        if (out) *out = put_utf8(*out, cp);
        return p;
    }
    default: return NULL;
    }
    if (out) *(*out)++ = decoded;
    return p;
}

/* The length of the valid UTF-8 sequence at p, whose first byte is not ASCII, or 0 when it
 * is invalid (overlong, a surrogate, past U+10FFFF or cut short). */
static int utf8_sequence(const unsigned char *p, const unsigned char *end) {
    unsigned char c = p[0];
    int need;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) need = 1, cp = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) need = 2, cp = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) need = 3, cp = c & 0x07, min = 0x10000;
    else return 0;
    if (end - p <= need) return 0;
    for (int k = 1; k <= need; k++) {
        if ((p[k] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return need + 1;
}

/* A string's content (p is past the opening quote), decoded into out when out is not
 * NULL; returns the position past the closing quote. Plain runs are copied a block at a
 * time, overshooting into room the column's buffer keeps for that. */
static const char *read_string(const char *p, const char *end, Buffer *out) {
    char *dst = out ? out->data + out->len : NULL;
    for (;;) {
        while (end - p >= BLOCK) {
            uint64_t bits = special_bits(p);
            if (dst) memcpy(dst, p, BLOCK);
            if (bits) {
                int k = first_special(bits);
                p += k;
                if (dst) dst += k;
                break;
            }
            p += BLOCK;
            if (dst) dst += BLOCK;
        }
        if (p >= end) return NULL;
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            if (out) out->len = (size_t)(dst - out->data);
            return p + 1;
        }
        if (c < 0x20) return NULL;
        if (c == '\\') {
            p = read_escape(p + 1, end, dst ? &dst : NULL);
            if (!p) return NULL;
            continue;
        }
        int n = 1;
        if (c >= 0x80 && !(n = utf8_sequence((const unsigned char *)p, (const unsigned char *)end)))
            return NULL;
        if (dst) {
            memcpy(dst, p, (size_t)n);
            dst += n;
        }
        p += n;
    }
}

static const char *skip_value(const char *p, const char *end, int depth);

static const char *skip_number(const char *p, const char *end) {
    if (p < end && *p == '-') p++;
    if (p >= end) return NULL;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') p++;
    } else {
        return NULL;
    }
    if (p < end && *p == '.') {
        const char *digits = ++p;
        while (p < end && *p >= '0' && *p <= '9') p++;
        if (p == digits) return NULL;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        const char *digits = p;
        while (p < end && *p >= '0' && *p <= '9') p++;
        if (p == digits) return NULL;
    }
    return p;
}

static const char *skip_literal(const char *p, const char *end, const char *word, size_t n) {
    if ((size_t)(end - p) < n || memcmp(p, word, n)) return NULL;
    return p + n;
}

static const char *skip_container(const char *p, const char *end, int depth, char close) {
    if (depth > MAX_DEPTH) return NULL;
    p = skip_space(p + 1, end);
    if (p < end && *p == close) return p + 1;
    for (;;) {
        if (close == '}') {
            if (p >= end || *p != '"') return NULL;
            p = read_string(p + 1, end, NULL);
            if (!p) return NULL;
            p = skip_space(p, end);
            if (p >= end || *p != ':') return NULL;
            p = skip_space(p + 1, end);
        }
        p = skip_value(p, end, depth + 1);
        if (!p) return NULL;
        p = skip_space(p, end);
        if (p >= end) return NULL;
        if (*p == close) return p + 1;
        if (*p != ',') return NULL;
        p = skip_space(p + 1, end);
    }
}

static const char *skip_value(const char *p, const char *end, int depth) {
    if (p >= end) return NULL;
    switch (*p) {
    case '"': return read_string(p + 1, end, NULL);
    case '{': return skip_container(p, end, depth, '}');
    case '[': return skip_container(p, end, depth, ']');
    case 't': return skip_literal(p, end, "true", 4);
    case 'f': return skip_literal(p, end, "false", 5);
    case 'n': return skip_literal(p, end, "null", 4);
    default: return skip_number(p, end);
    }
}

static inline int is_null(const char *p, const char *end) {
    return end - p >= 4 && memcmp(p, "null", 4) == 0;
}

/* ------------------------------------------------------------------------------------ */
/* The fields ingest reads */

static const char *read_string_field(const char *p, const char *end, StringColumn *column,
                                     Py_ssize_t row, int nullable) {
    if (nullable && is_null(p, end)) {
        set_null(&column->valid, row);
        return p + 4;
    }
    if (p >= end || *p != '"') return NULL;
    size_t before = column->data.len;
    p = read_string(p + 1, end, &column->data);
    if (!p || (!nullable && column->data.len == before)) return NULL; /* paper_id: min 1 */
    return p;
}

static const char *read_year(const char *p, const char *end, IntColumn *column,
                             Py_ssize_t row) {
    if (is_null(p, end)) {
        set_null(&column->valid, row);
        return p + 4;
    }
    int negative = p < end && *p == '-';
    const char *digits = p + negative;
    const char *q = digits;
    int64_t value = 0;
    while (q < end && *q >= '0' && *q <= '9' && q - digits < 11) value = value * 10 + (*q++ - '0');
    size_t n = (size_t)(q - digits);
    if (n == 0 || n > 10 || (n > 1 && *digits == '0')) return NULL;
    /* A fraction or exponent makes it a float, which an int field refuses. */
    if (q < end && (*q == '.' || *q == 'e' || *q == 'E' || (*q >= '0' && *q <= '9')))
        return NULL;
    if (negative) value = -value;
    if (value < INT32_MIN || value > INT32_MAX) return NULL;
    int32_t year = (int32_t)value;
    memcpy(column->values.data + (size_t)row * 4, &year, 4);
    return q;
}

static const char *read_list_field(const char *p, const char *end, ListColumn *column,
                                   Py_ssize_t row, int null_is_empty, int *out_of_memory) {
    if (is_null(p, end)) {
        if (!null_is_empty) set_null(&column->valid, row);
        return p + 4;
    }
    if (p >= end || *p != '[') return NULL;
    p = skip_space(p + 1, end);
    if (p < end && *p == ']') return p + 1;
    for (;;) {
        if (p >= end || *p != '"') return NULL;
        p = read_string(p + 1, end, &column->data);
        if (!p) return NULL;
        if (push_i32(&column->value_offsets, (int32_t)column->data.len)) {
            *out_of_memory = 1;
            return NULL;
        }
        p = skip_space(p, end);
        if (p >= end) return NULL;
        if (*p == ']') return p + 1;
        if (*p != ',') return NULL;
        p = skip_space(p + 1, end);
    }
}

static int key_of(const char *key, size_t n) {
    switch (n) {
    case 4: return memcmp(key, "year", 4) ? -1 : YEAR;
    case 5: return memcmp(key, "title", 5) ? -1 : TITLE;
    case 8:
        if (!memcmp(key, "paper_id", 8)) return PAPER_ID;
        if (!memcmp(key, "abstract", 8)) return ABSTRACT;
        return -1;
    case 17: return memcmp(key, "inbound_citations", 17) ? -1 : INBOUND;
    case 18:
        if (!memcmp(key, "mag_field_of_study", 18)) return FIELDS;
        if (!memcmp(key, "outbound_citations", 18)) return OUTBOUND;
        return -1;
    default: return -1;
    }
}

static const char *read_record(Decoder *d, const char *p, Py_ssize_t row) {
    const char *end = d->end;
    int seen[N_KEYS] = {0};
    p = skip_space(p, end);
    if (p >= end || *p != '{') return NULL;
    p = skip_space(p + 1, end);
    if (p < end && *p != '}') {
        for (;;) {
            if (p >= end || *p != '"') return NULL;
            const char *key = p + 1;
            p = read_string(key, end, NULL);
            if (!p) return NULL;
            size_t key_length = (size_t)(p - 1 - key);
            if (memchr(key, '\\', key_length)) return NULL; /* an escaped key: refuse */
            int which = key_of(key, key_length);
            p = skip_space(p, end);
            if (p >= end || *p != ':') return NULL;
            p = skip_space(p + 1, end);
            if (which >= 0) {
                if (seen[which]) return NULL;
                seen[which] = 1;
            }
            switch (which) {
            case PAPER_ID:
            case TITLE:
            case ABSTRACT:
                p = read_string_field(p, end, &d->strings[which], row, which != PAPER_ID);
                break;
            case YEAR: p = read_year(p, end, &d->year, row); break;
            case FIELDS:
                p = read_list_field(p, end, &d->lists[0], row, 1, &d->out_of_memory);
                break;
            case OUTBOUND:
                p = read_list_field(p, end, &d->lists[1], row, 0, &d->out_of_memory);
                break;
            case INBOUND:
                p = read_list_field(p, end, &d->lists[2], row, 0, &d->out_of_memory);
                break;
            default: p = skip_value(p, end, 1);
            }
            if (!p) return NULL;
            p = skip_space(p, end);
            if (p >= end) return NULL;
            if (*p == '}') break;
            if (*p != ',') return NULL;
            p = skip_space(p + 1, end);
        }
    }
    if (!seen[PAPER_ID]) return NULL;
    if (!seen[TITLE]) set_null(&d->strings[1].valid, row);
    if (!seen[ABSTRACT]) set_null(&d->strings[2].valid, row);
    if (!seen[YEAR]) set_null(&d->year.valid, row);
    if (!seen[OUTBOUND]) set_null(&d->lists[1].valid, row);
    if (!seen[INBOUND]) set_null(&d->lists[2].valid, row);
    /* The row's end offsets; an absent or null value adds nothing. */
    for (int i = 0; i < 3; i++) {
        int32_t offset = (int32_t)d->strings[i].data.len;
        memcpy(d->strings[i].offsets.data + (size_t)(row + 1) * 4, &offset, 4);
        int32_t items = (int32_t)(d->lists[i].value_offsets.len / 4 - 1);
        memcpy(d->lists[i].list_offsets.data + (size_t)(row + 1) * 4, &items, 4);
    }
    return skip_space(p + 1, end);
}

/* ------------------------------------------------------------------------------------ */
/* Setting up and handing over */

static int setup(Decoder *d, Py_ssize_t n, size_t text_bytes) {
    /* Zeroed offsets hold the first row's start; data buffers get the chunk's size, which
     * bounds what any column can decode from it, plus room for read_string's block copies. */
    for (int i = 0; i < 3; i++) {
        StringColumn *s = &d->strings[i];
        ListColumn *l = &d->lists[i];
        if (validity_init(&s->valid, n) || validity_init(&l->valid, n)) return -1;
        size_t offsets = (size_t)(n + 1) * 4, data = text_bytes + BLOCK;
        if (reserve(&s->offsets, offsets) || reserve(&s->data, data) ||
            reserve(&l->list_offsets, offsets) || reserve(&l->data, data) ||
            push_i32(&l->value_offsets, 0))
            return -1;
        memset(s->offsets.data, 0, offsets);
        s->offsets.len = offsets;
        memset(l->list_offsets.data, 0, offsets);
        l->list_offsets.len = offsets;
    }
    if (validity_init(&d->year.valid, n) || reserve(&d->year.values, (size_t)n * 4)) return -1;
    memset(d->year.values.data, 0, (size_t)n * 4);
    d->year.values.len = (size_t)n * 4;
    return 0;
}

static void release(Decoder *d) {
    for (int i = 0; i < 3; i++) {
        free(d->strings[i].valid.bits);
        free(d->strings[i].offsets.data);
        free(d->strings[i].data.data);
        free(d->lists[i].valid.bits);
        free(d->lists[i].list_offsets.data);
        free(d->lists[i].value_offsets.data);
        free(d->lists[i].data.data);
    }
    free(d->year.valid.bits);
    free(d->year.values.data);
}

static PyObject *hand_over(Decoder *d, Py_ssize_t n) {
    PyObject *columns[N_KEYS] = {NULL};
    for (int i = 0; i < 3; i++) {
        StringColumn *s = &d->strings[i];
        columns[i] = Py_BuildValue("(NnNN)", validity_object(&s->valid, n), s->valid.nulls,
                                   to_bytes(&s->offsets), to_bytes(&s->data));
    }
    columns[YEAR] = Py_BuildValue("(NnN)", validity_object(&d->year.valid, n),
                                  d->year.valid.nulls, to_bytes(&d->year.values));
    for (int i = 0; i < 3; i++) {
        ListColumn *l = &d->lists[i];
        columns[FIELDS + i] =
            Py_BuildValue("(NnNNN)", validity_object(&l->valid, n), l->valid.nulls,
                          to_bytes(&l->list_offsets), to_bytes(&l->value_offsets),
                          to_bytes(&l->data));
    }
    for (int i = 0; i < N_KEYS; i++) {
        if (!columns[i]) {
            for (int k = 0; k < N_KEYS; k++) Py_XDECREF(columns[k]);
            return NULL;
        }
    }
    return Py_BuildValue("(NNNNNNN)", columns[0], columns[1], columns[2], columns[3],
                         columns[4], columns[5], columns[6]);
}

/* 1: every line decoded; 0: refuse the chunk; -1: out of memory. */
static int decode_lines(Decoder *d, const char *p, Py_ssize_t n_lines) {
    Py_ssize_t row = 0;
    while (p < d->end) {
        if (row == n_lines) return 0;
        p = read_record(d, p, row++);
        if (!p) return d->out_of_memory ? -1 : 0;
        if (p < d->end && *p++ != '\n') return 0;
    }
    return row == n_lines;
}

static PyObject *decode(PyObject *module, PyObject *args) {
    (void)module;
    Py_buffer chunk;
    Py_ssize_t n_lines;
    if (!PyArg_ParseTuple(args, "y*n", &chunk, &n_lines)) return NULL;
    Decoder d;
    memset(&d, 0, sizeof d);
    d.end = (const char *)chunk.buf + chunk.len;
    int status = 0;
    /* int32 offsets: a chunk past 2 GiB is left to the exact path. Every line holds at
     * least a byte but the last, so a count past that is wrong: refused before setup
     * sizes anything by it. */
    if (n_lines > 0 && n_lines <= chunk.len + 1 && chunk.len <= INT32_MAX) {
        status = setup(&d, n_lines, (size_t)chunk.len) ? -1 : 1;
        if (status == 1) {
            Py_BEGIN_ALLOW_THREADS
            status = decode_lines(&d, chunk.buf, n_lines);
            Py_END_ALLOW_THREADS
        }
    }
    PyObject *result;
    if (status < 0) result = PyErr_NoMemory();
    else if (status == 0) result = Py_NewRef(Py_None);
    else result = hand_over(&d, n_lines);
    release(&d);
    PyBuffer_Release(&chunk);
    return result;
}

/* scan_lines(text): (newlines, offset of the last one or -1, whether a complete line
 * starts with whitespace), as ingest.scan_lines computes them with numpy, ~6x faster. */
static PyObject *scan_lines(PyObject *module, PyObject *args) {
    (void)module;
    Py_buffer text;
    if (!PyArg_ParseTuple(args, "y*", &text)) return NULL;
    const char *start = text.buf, *p = start, *stop = start + text.len, *newline;
    Py_ssize_t newlines = 0, last = -1;
    int starts_with_space = 0, next_starts_with_space = p < stop && is_space_or_newline(*p);
    Py_BEGIN_ALLOW_THREADS
    while ((newline = memchr(p, '\n', (size_t)(stop - p)))) {
        starts_with_space |= next_starts_with_space; /* of the line this newline ends */
        newlines++;
        last = newline - start;
        p = newline + 1;
        next_starts_with_space = p < stop && is_space_or_newline(*p);
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&text);
    return Py_BuildValue("(nnO)", newlines, last, starts_with_space ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
    {"decode", decode, METH_VARARGS,
     "decode(chunk, n_lines): the staged columns of a chunk of v2020 lines, or None to "
     "decode it the exact way."},
    {"scan_lines", scan_lines, METH_VARARGS,
     "scan_lines(text): (newlines, offset of the last one or -1, whether a complete line "
     "starts with whitespace)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "citeval._v2020",
    .m_doc = "Decode S2ORC v2020 metadata lines into Arrow buffers (an accelerator of ingest).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__v2020(void) { return PyModule_Create(&module); }
