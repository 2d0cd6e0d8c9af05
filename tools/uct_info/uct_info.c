/*
 * uct_info: what a UCT library offers, read through the public UCT API only
 * (the same calls any UCX 1.13 caller makes), in the style of `ucx_info -d`
 * and `ucx_info -c`.
 *
 *   uct_info [-d]    components, memory domains, transports and the
 *                    attributes of an interface opened on each of them
 *   uct_info -d -r   the same, every attribute by its C field name (exact
 *                    numbers, flags in hex): for comparing two builds
 *   uct_info -c      the UCT configuration (memory domain and transport
 *                    variables) with the values the environment gives
 *   uct_info -f      -c with each variable's documentation
 *   uct_info -h      usage
 *
 * The program compiles against our headers and against UCX's own; flags that
 * only newer headers define are printed when the headers define them.
 * UCX 1.13's headers do not declare uct_config_print (UCX dropped it from its
 * API); they define the UCS_CONFIG_PRINT_* flags as enum values where ours
 * define macros, which is how -c/-f know whether the call is available.
 */

#include <uct/api/uct.h>
#include <uct/api/version.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LABEL_WIDTH 22

/* One flag bit and the word ucx_info-style output uses for it. */
typedef struct {
    uint64_t    bit;
    const char *name;
} flag_name_t;

#define FLAG_NAME(_prefix, _flag, _name) { (uint64_t)(_prefix##_flag), _name }
#define ARRAY_LENGTH(_array) (sizeof(_array) / sizeof((_array)[0]))

/* "#<right-aligned label>: " */
static void print_label(const char *label)
{
    printf("#%*s: ", LABEL_WIDTH, label);
}

/* Sizes as ucx_info shows them: "unlimited" for SIZE_MAX, K/M/G when the
 * value is an exact multiple, otherwise the plain number. */
static const char *size_string(uint64_t value, char *buf, size_t max)
{
    static const char suffixes[] = { 'K', 'M', 'G', 'T' };
    uint64_t scaled = value;
    int unit        = -1;

    if ((value == SIZE_MAX) || (value == UINT64_MAX)) {
        snprintf(buf, max, "unlimited");
        return buf;
    }
    while ((scaled >= 1024) && ((scaled % 1024) == 0) &&
           (unit + 1 < (int)sizeof(suffixes))) {
        scaled /= 1024;
        ++unit;
    }
    if (unit < 0) {
        snprintf(buf, max, "%" PRIu64, value);
    } else {
        snprintf(buf, max, "%" PRIu64 "%c", scaled, suffixes[unit]);
    }
    return buf;
}

/* Comma-separated names of the bits of `flags` found in `names`. With
 * `show_unnamed`, the other bits are appended in hex, so that a line meant to
 * cover every remaining bit hides nothing the library sets. */
static void print_flag_names(uint64_t flags, const flag_name_t *names,
                             size_t count, int show_unnamed, const char *none)
{
    uint64_t unnamed = show_unnamed ? flags : 0;
    int printed      = 0;
    size_t i;

    for (i = 0; i < count; ++i) {
        if (flags & names[i].bit) {
            printf("%s%s", printed ? ", " : "", names[i].name);
            unnamed &= ~names[i].bit;
            printed  = 1;
        }
    }
    if (unnamed != 0) {
        printf("%sunknown 0x%" PRIx64, printed ? ", " : "", unnamed);
        printed = 1;
    }
    if (!printed) {
        printf("%s", none);
    }
    printf("\n");
}

static void print_limit(const char *label, uint64_t value)
{
    char buf[32];

    print_label(label);
    if ((value == SIZE_MAX) || (value == UINT64_MAX)) {
        printf("unlimited\n");
    } else {
        printf("<= %s\n", size_string(value, buf, sizeof(buf)));
    }
}

/* A linear cost c + m * x given in seconds, shown in nanoseconds. */
static void print_linear_nsec(ucs_linear_func_t func)
{
    if (func.m == 0) {
        printf("%.0f nsec\n", func.c * 1e9);
    } else {
        printf("%.0f + %.3f * N nsec\n", func.c * 1e9, func.m * 1e9);
    }
}

/* ------------------------------------------------------------------------ */
/* Memory domains                                                           */

static const flag_name_t md_flag_names[] = {
    FLAG_NAME(UCT_MD_FLAG_, ALLOC, "alloc"),
    FLAG_NAME(UCT_MD_FLAG_, REG, "register"),
    FLAG_NAME(UCT_MD_FLAG_, NEED_MEMH, "need memh"),
    FLAG_NAME(UCT_MD_FLAG_, NEED_RKEY, "need rkey"),
    FLAG_NAME(UCT_MD_FLAG_, ADVISE, "advise"),
    FLAG_NAME(UCT_MD_FLAG_, FIXED, "fixed address"),
    FLAG_NAME(UCT_MD_FLAG_, RKEY_PTR, "rkey_ptr"),
    FLAG_NAME(UCT_MD_FLAG_, SOCKADDR, "sockaddr"),
    FLAG_NAME(UCT_MD_FLAG_, INVALIDATE, "invalidate"),
#ifdef UCT_MD_FLAG_EXPORTED_MKEY
    FLAG_NAME(UCT_MD_FLAG_, EXPORTED_MKEY, "exported mkey"),
#endif
#ifdef UCT_MD_FLAG_REG_DMABUF
    FLAG_NAME(UCT_MD_FLAG_, REG_DMABUF, "dmabuf register"),
#endif
};

/* "host (reg, access, detect)" for every memory type any mask mentions. */
static void print_md_memory_types(const uct_md_attr_t *attr)
{
    const char *sep = "";
    unsigned type;

    print_label("memory types");
    for (type = 0; type < UCS_MEMORY_TYPE_LAST; ++type) {
        uint64_t bit   = UINT64_C(1) << type;
        const char *in = "";
        if (!((attr->cap.reg_mem_types | attr->cap.alloc_mem_types |
               attr->cap.access_mem_types | attr->cap.detect_mem_types) & bit)) {
            continue;
        }
        printf("%s%s (", sep, ucs_memory_type_names[type]);
        if (attr->cap.reg_mem_types & bit) {
            printf("%sreg", in);
            in = ", ";
        }
        if (attr->cap.alloc_mem_types & bit) {
            printf("%salloc", in);
            in = ", ";
        }
        if (attr->cap.access_mem_types & bit) {
            printf("%saccess", in);
            in = ", ";
        }
        if (attr->cap.detect_mem_types & bit) {
            printf("%sdetect", in);
        }
        printf(")");
        sep = ", ";
    }
    printf("%s\n", (*sep == '\0') ? "none" : "");
}

static void print_cpu_set(const ucs_cpu_set_t *cpus)
{
    const size_t bits_per_word = 8 * sizeof(cpus->ucs_bits[0]);
    const size_t total         = sizeof(cpus->ucs_bits) * 8;
    const char *sep            = "";
    size_t cpu, last;

    for (cpu = 0; cpu < total; ++cpu) {
        if (!((cpus->ucs_bits[cpu / bits_per_word] >> (cpu % bits_per_word)) & 1)) {
            continue;
        }
        last = cpu;
        while ((last + 1 < total) &&
               ((cpus->ucs_bits[(last + 1) / bits_per_word] >>
                 ((last + 1) % bits_per_word)) & 1)) {
            ++last;
        }
        if (last == cpu) {
            printf("%s%zu", sep, cpu);
        } else {
            printf("%s%zu-%zu", sep, cpu, last);
        }
        sep = ",";
        cpu = last;
    }
    printf("%s\n", (*sep == '\0') ? "none" : "");
}

static void print_md_attr(const char *md_name, const uct_md_attr_t *attr)
{
    char buf[32];

    printf("#\n# Memory domain: %s\n", md_name);
    printf("#     Component: %s\n", attr->component_name);
    if (attr->cap.flags & UCT_MD_FLAG_ALLOC) {
        print_limit("allocate", attr->cap.max_alloc);
    }
    if (attr->cap.flags & UCT_MD_FLAG_REG) {
        print_label("register");
        if (attr->cap.max_reg != SIZE_MAX) {
            printf("<= ");
        }
        printf("%s, cost: ", size_string(attr->cap.max_reg, buf, sizeof(buf)));
        print_linear_nsec(attr->reg_cost);
    }
    print_label("remote key");
    printf("%zu bytes\n", attr->rkey_packed_size);
    print_label("flags");
    print_flag_names(attr->cap.flags, md_flag_names, ARRAY_LENGTH(md_flag_names), 1,
                     "none");
    print_md_memory_types(attr);
    print_label("local cpus");
    print_cpu_set(&attr->local_cpus);
}

/* ------------------------------------------------------------------------ */
/* Interfaces                                                               */

static const flag_name_t connection_flag_names[] = {
    FLAG_NAME(UCT_IFACE_FLAG_, CONNECT_TO_EP, "to ep"),
    FLAG_NAME(UCT_IFACE_FLAG_, CONNECT_TO_IFACE, "to iface"),
    FLAG_NAME(UCT_IFACE_FLAG_, CONNECT_TO_SOCKADDR, "to sockaddr"),
};

static const flag_name_t error_flag_names[] = {
    FLAG_NAME(UCT_IFACE_FLAG_, ERRHANDLE_SHORT_BUF, "short buf"),
    FLAG_NAME(UCT_IFACE_FLAG_, ERRHANDLE_BCOPY_BUF, "bcopy buf"),
    FLAG_NAME(UCT_IFACE_FLAG_, ERRHANDLE_ZCOPY_BUF, "zcopy buf"),
    FLAG_NAME(UCT_IFACE_FLAG_, ERRHANDLE_AM_ID, "am id"),
    FLAG_NAME(UCT_IFACE_FLAG_, ERRHANDLE_REMOTE_MEM, "remote access"),
    FLAG_NAME(UCT_IFACE_FLAG_, ERRHANDLE_BCOPY_LEN, "bcopy len"),
    FLAG_NAME(UCT_IFACE_FLAG_, ERRHANDLE_PEER_FAILURE, "peer failure"),
    FLAG_NAME(UCT_IFACE_FLAG_, EP_CHECK, "ep_check"),
    FLAG_NAME(UCT_IFACE_FLAG_, EP_KEEPALIVE, "keepalive"),
};

/* The capability flags that have no line of their own above. */
static const flag_name_t other_flag_names[] = {
    FLAG_NAME(UCT_IFACE_FLAG_, PENDING, "pending"),
    FLAG_NAME(UCT_IFACE_FLAG_, AM_DUP, "am dup"),
    FLAG_NAME(UCT_IFACE_FLAG_, CB_SYNC, "cb sync"),
    FLAG_NAME(UCT_IFACE_FLAG_, CB_ASYNC, "cb async"),
#ifdef UCT_IFACE_FLAG_INTER_NODE
    FLAG_NAME(UCT_IFACE_FLAG_, INTER_NODE, "inter-node"),
#endif
#ifdef UCT_IFACE_FLAG_DEVICE_EP
    FLAG_NAME(UCT_IFACE_FLAG_, DEVICE_EP, "device ep"),
#endif
#ifdef UCT_IFACE_FLAG_DEVICE_LKEY
    FLAG_NAME(UCT_IFACE_FLAG_, DEVICE_LKEY, "device lkey"),
#endif
};

/* Bits shown on the lines of their operation (or in the lists above). */
static const uint64_t op_flags =
    UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY | UCT_IFACE_FLAG_AM_ZCOPY |
    UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_PUT_BCOPY | UCT_IFACE_FLAG_PUT_ZCOPY |
    UCT_IFACE_FLAG_GET_SHORT | UCT_IFACE_FLAG_GET_BCOPY | UCT_IFACE_FLAG_GET_ZCOPY |
    UCT_IFACE_FLAG_ATOMIC_CPU | UCT_IFACE_FLAG_ATOMIC_DEVICE |
    UCT_IFACE_FLAG_TAG_EAGER_SHORT | UCT_IFACE_FLAG_TAG_EAGER_BCOPY |
    UCT_IFACE_FLAG_TAG_EAGER_ZCOPY | UCT_IFACE_FLAG_TAG_RNDV_ZCOPY;

static const flag_name_t event_flag_names[] = {
    FLAG_NAME(UCT_IFACE_FLAG_, EVENT_SEND_COMP, "send completion"),
    FLAG_NAME(UCT_IFACE_FLAG_, EVENT_RECV, "tag and active message receive"),
    FLAG_NAME(UCT_IFACE_FLAG_, EVENT_RECV_SIG, "signaled message receive"),
    FLAG_NAME(UCT_IFACE_FLAG_, EVENT_FD, "file descriptor"),
    FLAG_NAME(UCT_IFACE_FLAG_, EVENT_ASYNC_CB, "asynchronous callback"),
};

static const char *device_type_name(uct_device_type_t type)
{
    switch (type) {
    case UCT_DEVICE_TYPE_NET:
        return "network";
    case UCT_DEVICE_TYPE_SHM:
        return "intra-node";
    case UCT_DEVICE_TYPE_ACC:
        return "accelerator";
    case UCT_DEVICE_TYPE_SELF:
        return "loopback";
    default:
        return "unknown";
    }
}

static void print_zcopy(const char *op, size_t min, size_t max, size_t max_iov,
                        size_t opt_align, size_t align_mtu)
{
    char label[64], lo[32], hi[32];

    snprintf(label, sizeof(label), "%s_zcopy", op);
    print_label(label);
    if (min > 0) {
        printf("%s..", size_string(min, lo, sizeof(lo)));
    } else if ((max != SIZE_MAX) && (max != UINT64_MAX)) {
        printf("<= ");
    }
    printf("%s, up to %zu iov\n", size_string(max, hi, sizeof(hi)), max_iov);
    snprintf(label, sizeof(label), "%s_opt_zcopy_align", op);
    print_limit(label, opt_align);
    snprintf(label, sizeof(label), "%s_align_mtu", op);
    print_limit(label, align_mtu);
}

/* The limits of one operation family. UCX declares the members of
 * uct_iface_attr_t.cap as anonymous structs, so they are copied into this
 * one type to be printed by one function. */
typedef struct {
    size_t max_short;
    size_t max_bcopy;
    size_t min_zcopy;
    size_t max_zcopy;
    size_t opt_zcopy_align;
    size_t align_mtu;
    size_t max_iov;
} op_limits_t;

#define OP_LIMITS(_cap) \
    { (_cap).max_short, (_cap).max_bcopy, (_cap).min_zcopy, (_cap).max_zcopy, \
      (_cap).opt_zcopy_align, (_cap).align_mtu, (_cap).max_iov }

static void print_op_caps(const char *op, const op_limits_t *limits, uint64_t flags,
                          uint64_t short_flag, uint64_t bcopy_flag, uint64_t zcopy_flag)
{
    char label[32];

    if (flags & short_flag) {
        snprintf(label, sizeof(label), "%s_short", op);
        print_limit(label, limits->max_short);
    }
    if (flags & bcopy_flag) {
        snprintf(label, sizeof(label), "%s_bcopy", op);
        print_limit(label, limits->max_bcopy);
    }
    if (flags & zcopy_flag) {
        print_zcopy(op, limits->min_zcopy, limits->max_zcopy, limits->max_iov,
                    limits->opt_zcopy_align, limits->align_mtu);
    }
}

static void print_tag_caps(const uct_iface_attr_t *attr)
{
    uint64_t flags = attr->cap.flags;
    char buf[32];

    if (flags & UCT_IFACE_FLAG_TAG_EAGER_SHORT) {
        print_limit("tag_eager_short", attr->cap.tag.eager.max_short);
    }
    if (flags & UCT_IFACE_FLAG_TAG_EAGER_BCOPY) {
        print_limit("tag_eager_bcopy", attr->cap.tag.eager.max_bcopy);
    }
    if (flags & UCT_IFACE_FLAG_TAG_EAGER_ZCOPY) {
        print_label("tag_eager_zcopy");
        printf("<= %s, up to %zu iov\n",
               size_string(attr->cap.tag.eager.max_zcopy, buf, sizeof(buf)),
               attr->cap.tag.eager.max_iov);
    }
    if (flags & UCT_IFACE_FLAG_TAG_RNDV_ZCOPY) {
        print_label("tag_rndv_zcopy");
        printf("<= %s, up to %zu iov\n",
               size_string(attr->cap.tag.rndv.max_zcopy, buf, sizeof(buf)),
               attr->cap.tag.rndv.max_iov);
        print_limit("rndv private header", attr->cap.tag.rndv.max_hdr);
    }
    if (flags & (UCT_IFACE_FLAG_TAG_EAGER_SHORT | UCT_IFACE_FLAG_TAG_EAGER_BCOPY |
                 UCT_IFACE_FLAG_TAG_EAGER_ZCOPY | UCT_IFACE_FLAG_TAG_RNDV_ZCOPY)) {
        print_label("tag_recv");
        printf("%s.., up to %zu iov, %zu outstanding\n",
               size_string(attr->cap.tag.recv.min_recv, buf, sizeof(buf)),
               attr->cap.tag.recv.max_iov, attr->cap.tag.recv.max_outstanding);
    }
}

/* "atomic_add: 32, 64 bit" for each operation either width supports. */
static void print_atomic_caps(const uct_iface_attr_t *attr)
{
    static const struct {
        unsigned    op;
        const char *name;
    } ops[] = {
        { UCT_ATOMIC_OP_ADD, "add" },   { UCT_ATOMIC_OP_AND, "and" },
        { UCT_ATOMIC_OP_OR, "or" },     { UCT_ATOMIC_OP_XOR, "xor" },
        { UCT_ATOMIC_OP_SWAP, "swap" }, { UCT_ATOMIC_OP_CSWAP, "cswap" },
    };
    uint64_t flags = attr->cap.flags;
    char label[32];
    int fetching;
    size_t i;

    if (flags & (UCT_IFACE_FLAG_ATOMIC_CPU | UCT_IFACE_FLAG_ATOMIC_DEVICE)) {
        print_label("domain");
        printf("%s%s%s\n", (flags & UCT_IFACE_FLAG_ATOMIC_CPU) ? "cpu" : "",
               ((flags & UCT_IFACE_FLAG_ATOMIC_CPU) &&
                (flags & UCT_IFACE_FLAG_ATOMIC_DEVICE)) ? ", " : "",
               (flags & UCT_IFACE_FLAG_ATOMIC_DEVICE) ? "device" : "");
    }
    for (fetching = 0; fetching <= 1; ++fetching) {
        for (i = 0; i < ARRAY_LENGTH(ops); ++i) {
            uint64_t bit = UINT64_C(1) << ops[i].op;
            int has32    = !!((fetching ? attr->cap.atomic32.fop_flags :
                                          attr->cap.atomic32.op_flags) & bit);
            int has64    = !!((fetching ? attr->cap.atomic64.fop_flags :
                                          attr->cap.atomic64.op_flags) & bit);
            if (!has32 && !has64) {
                continue;
            }
            /* swap and cswap only exist as fetching operations */
            snprintf(label, sizeof(label), "atomic_%s%s",
                     (fetching && (ops[i].op != UCT_ATOMIC_OP_SWAP) &&
                      (ops[i].op != UCT_ATOMIC_OP_CSWAP)) ? "f" : "",
                     ops[i].name);
            print_label(label);
            printf("%s%s%s bit\n", has32 ? "32" : "", (has32 && has64) ? ", " : "",
                   has64 ? "64" : "");
        }
    }
}

static void print_iface_attr(const uct_iface_attr_t *attr)
{
    uint64_t flags = attr->cap.flags;
    char buf[32];

    printf("#\n#      capabilities:\n");
    print_label("bandwidth");
    printf("%.2f/ppn + %.2f MB/sec\n", attr->bandwidth.shared / (1024.0 * 1024.0),
           attr->bandwidth.dedicated / (1024.0 * 1024.0));
    print_label("latency");
    print_linear_nsec(attr->latency);
    print_label("overhead");
    printf("%.0f nsec\n", attr->overhead * 1e9);

    {
        const op_limits_t put = OP_LIMITS(attr->cap.put);
        const op_limits_t get = OP_LIMITS(attr->cap.get);
        const op_limits_t am  = OP_LIMITS(attr->cap.am);
        print_op_caps("put", &put, flags, UCT_IFACE_FLAG_PUT_SHORT,
                      UCT_IFACE_FLAG_PUT_BCOPY, UCT_IFACE_FLAG_PUT_ZCOPY);
        print_op_caps("get", &get, flags, UCT_IFACE_FLAG_GET_SHORT,
                      UCT_IFACE_FLAG_GET_BCOPY, UCT_IFACE_FLAG_GET_ZCOPY);
        print_op_caps("am", &am, flags, UCT_IFACE_FLAG_AM_SHORT,
                      UCT_IFACE_FLAG_AM_BCOPY, UCT_IFACE_FLAG_AM_ZCOPY);
        if (flags & UCT_IFACE_FLAG_AM_ZCOPY) {
            print_limit("am header", attr->cap.am.max_hdr);
        }
    }
    print_tag_caps(attr);
    print_atomic_caps(attr);

    print_label("connection");
    print_flag_names(flags, connection_flag_names, ARRAY_LENGTH(connection_flag_names), 0,
                     "none");
    print_label("device priority");
    printf("%u\n", (unsigned)attr->priority);
    print_label("device num paths");
    printf("%u\n", attr->dev_num_paths);
    print_label("max eps");
    printf("%s\n", (attr->max_num_eps == SIZE_MAX) ? "inf" :
                   size_string(attr->max_num_eps, buf, sizeof(buf)));
    print_label("device address");
    printf("%zu bytes\n", attr->device_addr_len);
    print_label("iface address");
    printf("%zu bytes\n", attr->iface_addr_len);
    if (flags & UCT_IFACE_FLAG_CONNECT_TO_EP) {
        print_label("ep address");
        printf("%zu bytes\n", attr->ep_addr_len);
    }
    if (flags & UCT_IFACE_FLAG_CONNECT_TO_SOCKADDR) {
        print_label("max conn priv");
        printf("%zu bytes\n", attr->max_conn_priv);
    }
    print_label("error handling");
    print_flag_names(flags, error_flag_names, ARRAY_LENGTH(error_flag_names), 0, "none");

    /* Everything else, so that every bit the interface reports is named. */
    {
        uint64_t shown = op_flags;
        size_t i;
        for (i = 0; i < ARRAY_LENGTH(connection_flag_names); ++i) {
            shown |= connection_flag_names[i].bit;
        }
        for (i = 0; i < ARRAY_LENGTH(error_flag_names); ++i) {
            shown |= error_flag_names[i].bit;
        }
        print_label("other flags");
        print_flag_names(flags & ~shown, other_flag_names,
                         ARRAY_LENGTH(other_flag_names), 1, "none");
    }
    print_label("event flags");
    print_flag_names(attr->cap.event_flags, event_flag_names,
                     ARRAY_LENGTH(event_flag_names), 1, "none");
}

/* ------------------------------------------------------------------------ */
/* Raw output (-r): every field by its C name, numbers exact and flags in    */
/* hex, independent of which flag names the headers know. A program built    */
/* against UCX's headers and one built against ours must print the same      */
/* text for the same library: that compares the two struct layouts.           */

static int raw_output = 0;

#define RAW_SIZE(_prefix, _struct, _field) \
    printf("%s%s = %zu\n", _prefix, #_field, (size_t)(_struct)->_field)
#define RAW_HEX(_prefix, _struct, _field) \
    printf("%s%s = 0x%" PRIx64 "\n", _prefix, #_field, (uint64_t)(_struct)->_field)
#define RAW_DOUBLE(_prefix, _struct, _field) \
    printf("%s%s = %.17g\n", _prefix, #_field, (double)(_struct)->_field)

#define RAW_OP_LIMITS(_prefix, _cap) \
    do { \
        RAW_SIZE(_prefix, _cap, max_short); \
        RAW_SIZE(_prefix, _cap, max_bcopy); \
        RAW_SIZE(_prefix, _cap, min_zcopy); \
        RAW_SIZE(_prefix, _cap, max_zcopy); \
        RAW_SIZE(_prefix, _cap, opt_zcopy_align); \
        RAW_SIZE(_prefix, _cap, align_mtu); \
        RAW_SIZE(_prefix, _cap, max_iov); \
    } while (0)

static void print_md_attr_raw(const char *md_name, const uct_md_attr_t *attr)
{
    printf("md %s\n", md_name);
    RAW_HEX("  cap.", &attr->cap, max_alloc);
    RAW_HEX("  cap.", &attr->cap, max_reg);
    RAW_HEX("  cap.", &attr->cap, flags);
    RAW_HEX("  cap.", &attr->cap, reg_mem_types);
    RAW_HEX("  cap.", &attr->cap, detect_mem_types);
    RAW_HEX("  cap.", &attr->cap, alloc_mem_types);
    RAW_HEX("  cap.", &attr->cap, access_mem_types);
    RAW_DOUBLE("  reg_cost.", &attr->reg_cost, c);
    RAW_DOUBLE("  reg_cost.", &attr->reg_cost, m);
    printf("  component_name = %s\n", attr->component_name);
    RAW_SIZE("  ", attr, rkey_packed_size);
    printf("  local_cpus = ");
    print_cpu_set(&attr->local_cpus);
}

static void print_iface_attr_raw(const uct_iface_attr_t *attr)
{
    RAW_OP_LIMITS("    cap.put.", &attr->cap.put);
    RAW_OP_LIMITS("    cap.get.", &attr->cap.get);
    RAW_OP_LIMITS("    cap.am.", &attr->cap.am);
    RAW_SIZE("    cap.am.", &attr->cap.am, max_hdr);
    RAW_SIZE("    cap.tag.recv.", &attr->cap.tag.recv, min_recv);
    RAW_SIZE("    cap.tag.recv.", &attr->cap.tag.recv, max_zcopy);
    RAW_SIZE("    cap.tag.recv.", &attr->cap.tag.recv, max_iov);
    RAW_SIZE("    cap.tag.recv.", &attr->cap.tag.recv, max_outstanding);
    RAW_SIZE("    cap.tag.eager.", &attr->cap.tag.eager, max_short);
    RAW_SIZE("    cap.tag.eager.", &attr->cap.tag.eager, max_bcopy);
    RAW_SIZE("    cap.tag.eager.", &attr->cap.tag.eager, max_zcopy);
    RAW_SIZE("    cap.tag.eager.", &attr->cap.tag.eager, max_iov);
    RAW_SIZE("    cap.tag.rndv.", &attr->cap.tag.rndv, max_zcopy);
    RAW_SIZE("    cap.tag.rndv.", &attr->cap.tag.rndv, max_hdr);
    RAW_SIZE("    cap.tag.rndv.", &attr->cap.tag.rndv, max_iov);
    RAW_HEX("    cap.atomic32.", &attr->cap.atomic32, op_flags);
    RAW_HEX("    cap.atomic32.", &attr->cap.atomic32, fop_flags);
    RAW_HEX("    cap.atomic64.", &attr->cap.atomic64, op_flags);
    RAW_HEX("    cap.atomic64.", &attr->cap.atomic64, fop_flags);
    RAW_HEX("    cap.", &attr->cap, flags);
    RAW_HEX("    cap.", &attr->cap, event_flags);
    RAW_SIZE("    ", attr, device_addr_len);
    RAW_SIZE("    ", attr, iface_addr_len);
    RAW_SIZE("    ", attr, ep_addr_len);
    RAW_SIZE("    ", attr, max_conn_priv);
    RAW_DOUBLE("    ", attr, overhead);
    RAW_DOUBLE("    bandwidth.", &attr->bandwidth, dedicated);
    RAW_DOUBLE("    bandwidth.", &attr->bandwidth, shared);
    RAW_DOUBLE("    latency.", &attr->latency, c);
    RAW_DOUBLE("    latency.", &attr->latency, m);
    RAW_SIZE("    ", attr, priority);
    RAW_HEX("    ", attr, max_num_eps);
    RAW_SIZE("    ", attr, dev_num_paths);
}

/* Opens an interface on the resource as ucx_info does (device mode, default
 * configuration), prints its attributes and closes it again. A failure is
 * one line: the other resources are still listed. */
static void print_resource(uct_md_h md, uct_worker_h worker,
                           const uct_tl_resource_desc_t *resource)
{
    uct_iface_config_t *config = NULL;
    uct_iface_params_t params;
    uct_iface_attr_t attr;
    uct_iface_h iface;
    ucs_status_t status;

    if (raw_output) {
        printf("  resource %s/%s dev_type = %u sys_device = %u\n", resource->tl_name,
               resource->dev_name, (unsigned)resource->dev_type,
               (unsigned)resource->sys_device);
    } else {
        printf("#\n#      Transport: %s\n", resource->tl_name);
        printf("#         Device: %s\n", resource->dev_name);
        printf("#           Type: %s\n", device_type_name(resource->dev_type));
        if (resource->sys_device == UCS_SYS_DEVICE_ID_UNKNOWN) {
            printf("#  System device: <unknown>\n");
        } else {
            printf("#  System device: %u\n", (unsigned)resource->sys_device);
        }
    }

    status = uct_md_iface_config_read(md, resource->tl_name, NULL, NULL, &config);
    if (status != UCS_OK) {
        printf("#   < failed to read the interface configuration: %s >\n",
               ucs_status_string(status));
        return;
    }

    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE |
                                  UCT_IFACE_PARAM_FIELD_STATS_ROOT |
                                  UCT_IFACE_PARAM_FIELD_RX_HEADROOM |
                                  UCT_IFACE_PARAM_FIELD_CPU_MASK;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = resource->tl_name;
    params.mode.device.dev_name = resource->dev_name;
    params.stats_root           = NULL;
    params.rx_headroom          = 0;

    status = uct_iface_open(md, worker, &params, config, &iface);
    uct_config_release(config);
    if (status != UCS_OK) {
        printf("#   < failed to open interface: %s >\n", ucs_status_string(status));
        return;
    }

    /* Zeroed first: a field the library leaves alone reads as 0, not noise. */
    memset(&attr, 0, sizeof(attr));
    status = uct_iface_query(iface, &attr);
    if (status != UCS_OK) {
        printf("#   < failed to query interface: %s >\n", ucs_status_string(status));
    } else if (raw_output) {
        print_iface_attr_raw(&attr);
    } else {
        print_iface_attr(&attr);
    }
    uct_iface_close(iface);
}

/* ------------------------------------------------------------------------ */
/* Walking the components                                                   */

typedef enum {
    MODE_DEVICES,
    MODE_CONFIG
} info_mode_t;

static const flag_name_t component_flag_names[] = {
    FLAG_NAME(UCT_COMPONENT_FLAG_, CM, "connection manager"),
#ifdef UCT_COMPONENT_FLAG_RKEY_PTR
    FLAG_NAME(UCT_COMPONENT_FLAG_, RKEY_PTR, "rkey_ptr"),
#endif
};

static int print_md_resources(uct_component_h component, const char *md_name,
                              uct_worker_h worker)
{
    uct_tl_resource_desc_t *resources = NULL;
    unsigned num_resources            = 0;
    uct_md_config_t *md_config;
    uct_md_attr_t md_attr;
    ucs_status_t status;
    uct_md_h md;
    unsigned i;

    status = uct_md_config_read(component, NULL, NULL, &md_config);
    if (status != UCS_OK) {
        printf("#\n# Memory domain: %s\n#   < failed to read its configuration: %s >\n",
               md_name, ucs_status_string(status));
        return -1;
    }
    status = uct_md_open(component, md_name, md_config, &md);
    uct_config_release(md_config);
    if (status != UCS_OK) {
        printf("#\n# Memory domain: %s\n#   < failed to open: %s >\n", md_name,
               ucs_status_string(status));
        return -1;
    }

    memset(&md_attr, 0, sizeof(md_attr));
    status = uct_md_query(md, &md_attr);
    if (status != UCS_OK) {
        printf("#\n# Memory domain: %s\n#   < failed to query: %s >\n", md_name,
               ucs_status_string(status));
        uct_md_close(md);
        return -1;
    }
    if (raw_output) {
        print_md_attr_raw(md_name, &md_attr);
    } else {
        print_md_attr(md_name, &md_attr);
    }

    status = uct_md_query_tl_resources(md, &resources, &num_resources);
    if (status != UCS_OK) {
        printf("#   < failed to query transport resources: %s >\n",
               ucs_status_string(status));
        uct_md_close(md);
        return -1;
    }
    if (num_resources == 0) {
        printf("#   < no supported devices found >\n");
    }
    for (i = 0; i < num_resources; ++i) {
        print_resource(md, worker, &resources[i]);
    }
    uct_release_tl_resource_list(resources);
    uct_md_close(md);
    return 0;
}

/* uct_config_print is declared (see the top of the file) */
#ifdef UCS_CONFIG_PRINT_CONFIG
static int print_md_config(uct_component_h component, const char *component_name,
                           const char *md_name, ucs_config_print_flags_t flags,
                           char (*printed_tls)[UCT_TL_NAME_MAX], unsigned *num_printed)
{
    uct_tl_resource_desc_t *resources = NULL;
    unsigned num_resources            = 0;
    uct_iface_config_t *iface_config;
    uct_md_config_t *md_config;
    ucs_status_t status;
    char title[128];
    unsigned i, j;
    uct_md_h md;
    int result = 0;

    status = uct_md_config_read(component, NULL, NULL, &md_config);
    if (status != UCS_OK) {
        fprintf(stderr, "uct_info: uct_md_config_read(%s): %s\n", component_name,
                ucs_status_string(status));
        return -1;
    }
    status = uct_md_open(component, md_name, md_config, &md);
    uct_config_release(md_config);
    if (status != UCS_OK) {
        fprintf(stderr, "uct_info: uct_md_open(%s): %s\n", md_name,
                ucs_status_string(status));
        return -1;
    }
    status = uct_md_query_tl_resources(md, &resources, &num_resources);
    if (status != UCS_OK) {
        fprintf(stderr, "uct_info: uct_md_query_tl_resources(%s): %s\n", md_name,
                ucs_status_string(status));
        uct_md_close(md);
        return -1;
    }
    for (i = 0; i < num_resources; ++i) {
        /* A transport's variables do not depend on the device: once each. */
        for (j = 0; j < *num_printed; ++j) {
            if (strcmp(printed_tls[j], resources[i].tl_name) == 0) {
                break;
            }
        }
        if ((j < *num_printed) || (*num_printed >= 64)) {
            continue;
        }
        status = uct_md_iface_config_read(md, resources[i].tl_name, NULL, NULL,
                                          &iface_config);
        if (status != UCS_OK) {
            fprintf(stderr, "uct_info: uct_md_iface_config_read(%s): %s\n",
                    resources[i].tl_name, ucs_status_string(status));
            result = -1;
            continue;
        }
        snprintf(title, sizeof(title), "%s transport configuration", resources[i].tl_name);
        uct_config_print(iface_config, stdout, title, flags);
        uct_config_release(iface_config);
        snprintf(printed_tls[(*num_printed)++], UCT_TL_NAME_MAX, "%s",
                 resources[i].tl_name);
    }
    uct_release_tl_resource_list(resources);
    uct_md_close(md);
    return result;
}

static int print_component_config(uct_component_h component, const char *name,
                                  const uct_component_attr_t *attr,
                                  ucs_config_print_flags_t flags)
{
    static char printed_tls[64][UCT_TL_NAME_MAX];
    static unsigned num_printed = 0;
    uct_md_config_t *md_config;
    ucs_status_t status;
    char title[128];
    unsigned i;
    int result = 0;

    status = uct_md_config_read(component, NULL, NULL, &md_config);
    if (status != UCS_OK) {
        fprintf(stderr, "uct_info: uct_md_config_read(%s): %s\n", name,
                ucs_status_string(status));
        return -1;
    }
    snprintf(title, sizeof(title), "%s memory domain configuration", name);
    uct_config_print(md_config, stdout, title, flags);
    uct_config_release(md_config);

    for (i = 0; i < attr->md_resource_count; ++i) {
        if (print_md_config(component, name, attr->md_resources[i].md_name, flags,
                            printed_tls, &num_printed) != 0) {
            result = -1;
        }
    }
    return result;
}

#else
static int print_component_config(uct_component_h component, const char *name,
                                  const uct_component_attr_t *attr,
                                  ucs_config_print_flags_t flags)
{
    (void)component;
    (void)attr;
    (void)flags;
    fprintf(stderr, "uct_info: these UCT headers do not declare uct_config_print; "
                    "cannot print the configuration of %s\n", name);
    return -1;
}
#endif

static int walk_components(info_mode_t mode, ucs_config_print_flags_t print_flags)
{
    uct_component_h *components = NULL;
    unsigned num_components     = 0;
    ucs_async_context_t *async  = NULL;
    uct_worker_h worker         = NULL;
    ucs_status_t status;
    unsigned i, j;
    int result = 0;

    status = uct_query_components(&components, &num_components);
    if (status != UCS_OK) {
        fprintf(stderr, "uct_info: uct_query_components: %s\n", ucs_status_string(status));
        return -1;
    }

    if (mode == MODE_DEVICES) {
        status = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async);
        if (status != UCS_OK) {
            fprintf(stderr, "uct_info: ucs_async_context_create: %s\n",
                    ucs_status_string(status));
            uct_release_component_list(components);
            return -1;
        }
        status = uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker);
        if (status != UCS_OK) {
            fprintf(stderr, "uct_info: uct_worker_create: %s\n", ucs_status_string(status));
            ucs_async_context_destroy(async);
            uct_release_component_list(components);
            return -1;
        }
        if (!raw_output) {
            printf("#\n# UCT library information (headers: UCT %s)\n", UCT_VERNO_STRING);
            printf("#\n# %u component(s)\n", num_components);
        }
    }

    for (i = 0; i < num_components; ++i) {
        uct_component_attr_t attr;

        memset(&attr, 0, sizeof(attr));
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                          UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT |
                          UCT_COMPONENT_ATTR_FIELD_FLAGS;
        status = uct_component_query(components[i], &attr);
        if (status != UCS_OK) {
            fprintf(stderr, "uct_info: uct_component_query: %s\n", ucs_status_string(status));
            result = -1;
            continue;
        }
        attr.md_resources = calloc(attr.md_resource_count + 1, sizeof(*attr.md_resources));
        if (attr.md_resources == NULL) {
            fprintf(stderr, "uct_info: out of memory\n");
            result = -1;
            break;
        }
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        status          = uct_component_query(components[i], &attr);
        if (status != UCS_OK) {
            fprintf(stderr, "uct_info: uct_component_query(%s): %s\n", attr.name,
                    ucs_status_string(status));
            free(attr.md_resources);
            result = -1;
            continue;
        }

        if ((mode == MODE_DEVICES) && raw_output) {
            printf("component %s flags = 0x%" PRIx64 " md_resource_count = %u\n",
                   attr.name, (uint64_t)attr.flags, attr.md_resource_count);
            for (j = 0; j < attr.md_resource_count; ++j) {
                if (print_md_resources(components[i], attr.md_resources[j].md_name,
                                       worker) != 0) {
                    result = -1;
                }
            }
        } else if (mode == MODE_DEVICES) {
            printf("#\n# Component: %s\n", attr.name);
            print_label("flags");
            print_flag_names(attr.flags, component_flag_names,
                             ARRAY_LENGTH(component_flag_names), 1, "none");
            print_label("memory domains");
            for (j = 0; j < attr.md_resource_count; ++j) {
                printf("%s%s", (j > 0) ? ", " : "", attr.md_resources[j].md_name);
            }
            printf("%s\n", (attr.md_resource_count == 0) ? "none" : "");
            for (j = 0; j < attr.md_resource_count; ++j) {
                if (print_md_resources(components[i], attr.md_resources[j].md_name,
                                       worker) != 0) {
                    result = -1;
                }
            }
        } else if (print_component_config(components[i], attr.name, &attr,
                                          print_flags) != 0) {
            result = -1;
        }
        free(attr.md_resources);
    }
    if (mode == MODE_DEVICES) {
        if (!raw_output) {
            printf("#\n");
        }
        uct_worker_destroy(worker);
        ucs_async_context_destroy(async);
    }
    uct_release_component_list(components);
    return result;
}

static void usage(FILE *stream)
{
    fprintf(stream,
            "Usage: uct_info [-d [-r] | -c | -f | -h]\n"
            "Shows what the UCT library offers, through the public UCT API.\n"
            "  -d  components, memory domains, transports and the attributes of an\n"
            "      interface opened on each (the default)\n"
            "  -r  with -d: every attribute by its C field name, flags in hex\n"
            "  -c  the UCT configuration: memory domain and transport variables\n"
            "  -f  as -c, with each variable's documentation\n"
            "  -h  this help\n");
}

int main(int argc, char **argv)
{
    info_mode_t mode                     = MODE_DEVICES;
    ucs_config_print_flags_t print_flags = (ucs_config_print_flags_t)UCS_CONFIG_PRINT_CONFIG;
    int c;

    while ((c = getopt(argc, argv, "dcfrh")) != -1) {
        switch (c) {
        case 'd':
            mode = MODE_DEVICES;
            break;
        case 'c':
            mode        = MODE_CONFIG;
            print_flags = (ucs_config_print_flags_t)UCS_CONFIG_PRINT_CONFIG;
            break;
        case 'f':
            mode        = MODE_CONFIG;
            print_flags = (ucs_config_print_flags_t)(UCS_CONFIG_PRINT_CONFIG |
                                                     UCS_CONFIG_PRINT_HEADER |
                                                     UCS_CONFIG_PRINT_DOC);
            break;
        case 'r':
            raw_output = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "uct_info: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    return (walk_components(mode, print_flags) == 0) ? 0 : 1;
}
