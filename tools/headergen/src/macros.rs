//! C macros (and one inline helper) that UCX callers use and cbindgen cannot
//! produce from Rust items. Written for this project; names and meaning follow
//! UCX's headers so caller source compiles unchanged.

/// `ucs/sys/compiler_def.h`.
pub const COMPILER_DEF: &str = r#"
#ifdef __cplusplus
#  define BEGIN_C_DECLS extern "C" {
#  define END_C_DECLS   }
#else
#  define BEGIN_C_DECLS
#  define END_C_DECLS
#endif

/* A 64-bit mask with only bit _index set. */
#define UCS_BIT(_index)                 (1ul << (_index))
/* A mask of the _bits lowest bits. */
#define UCS_MASK(_bits)                 (((_bits) >= 64) ? ~0ul : (UCS_BIT(_bits) - 1))
/* _ptr moved by _offset bytes. */
#define UCS_PTR_BYTE_OFFSET(_ptr, _offset) \
    ((void*)((intptr_t)(_ptr) + (intptr_t)(_offset)))
/* Number of bytes from _start to _end. */
#define UCS_PTR_BYTE_DIFF(_start, _end) \
    ((ptrdiff_t)((uintptr_t)(_end) - (uintptr_t)(_start)))
#define ucs_static_array_size(_array)   (sizeof(_array) / sizeof((_array)[0]))

#define UCS_F_ALWAYS_INLINE             inline __attribute__((always_inline))
#define UCS_F_NOINLINE                  __attribute__((noinline))
#define UCS_F_MAYBE_UNUSED              __attribute__((unused))
#define UCS_S_PACKED                    __attribute__((packed))
#define ucs_likely(_cond)               __builtin_expect(!!(_cond), 1)
#define ucs_unlikely(_cond)             __builtin_expect(!!(_cond), 0)
"#;

/// `ucs/type/status.h`.
pub const STATUS: &str = r#"
/* Whether _code lies in the range reserved for link / endpoint failures. */
#define UCS_IS_LINK_ERROR(_code) \
    (((_code) <= UCS_ERR_FIRST_LINK_FAILURE) && ((_code) >= UCS_ERR_LAST_LINK_FAILURE))
#define UCS_IS_ENDPOINT_ERROR(_code) \
    (((_code) <= UCS_ERR_FIRST_ENDPOINT_FAILURE) && \
     ((_code) >= UCS_ERR_LAST_ENDPOINT_FAILURE))

/*
 * A ucs_status_ptr_t is either a real pointer or an error status stored in
 * the pointer value; statuses occupy the top 100 addresses.
 */
#define UCS_PTR_IS_ERR(_ptr)       (((uintptr_t)(_ptr)) >= ((uintptr_t)UCS_ERR_LAST))
#define UCS_PTR_IS_PTR(_ptr)       (((uintptr_t)(_ptr) - 1) < ((uintptr_t)UCS_ERR_LAST - 1))
#define UCS_PTR_RAW_STATUS(_ptr)   ((ucs_status_t)(intptr_t)(_ptr))
#define UCS_PTR_STATUS(_ptr) \
    (UCS_PTR_IS_PTR(_ptr) ? UCS_INPROGRESS : UCS_PTR_RAW_STATUS(_ptr))
#define UCS_STATUS_PTR(_status)    ((void*)(intptr_t)(_status))
#define UCS_STATUS_IS_ERR(_status) ((_status) < 0)
"#;

/// `ucs/type/cpu_set.h`.
pub const CPU_SET: &str = r#"
/* Bits per word of a ucs_cpu_set_t, and the word / bit of CPU _cpu. */
#define UCS_NCPUBITS      (8 * sizeof(ucs_cpu_mask_t))
#define UCS_CPUELT(_cpu)  ((_cpu) / UCS_NCPUBITS)
#define UCS_CPUMASK(_cpu) ((ucs_cpu_mask_t)1 << ((_cpu) % UCS_NCPUBITS))

/* Clear every CPU of the set. */
#define UCS_CPU_ZERO(_cpusetp) \
    do { \
        size_t _word; \
        for (_word = 0; _word < UCS_CPU_SETSIZE / UCS_NCPUBITS; ++_word) { \
            (_cpusetp)->ucs_bits[_word] = 0; \
        } \
    } while (0)

/* Add / remove CPU _cpu (ignored when out of range). */
#define UCS_CPU_SET(_cpu, _cpusetp) \
    do { \
        size_t _bit = (_cpu); \
        if (_bit < UCS_CPU_SETSIZE) { \
            (_cpusetp)->ucs_bits[UCS_CPUELT(_bit)] |= UCS_CPUMASK(_bit); \
        } \
    } while (0)
#define UCS_CPU_CLR(_cpu, _cpusetp) \
    do { \
        size_t _bit = (_cpu); \
        if (_bit < UCS_CPU_SETSIZE) { \
            (_cpusetp)->ucs_bits[UCS_CPUELT(_bit)] &= ~UCS_CPUMASK(_bit); \
        } \
    } while (0)

/* Whether CPU _cpu is in the set (0 when out of range). */
#define ucs_cpu_is_set(_cpu, _cpusetp) \
    ((((size_t)(_cpu)) < UCS_CPU_SETSIZE) && \
     (((_cpusetp)->ucs_bits[UCS_CPUELT((size_t)(_cpu))] & \
       UCS_CPUMASK((size_t)(_cpu))) != 0))
"#;

/// `ucs/memory/memory_type.h`.
pub const MEMORY_TYPE: &str = r#"
/* Loop _x over every real memory type. */
#define ucs_memory_type_for_each(_x) \
    for ((_x) = UCS_MEMORY_TYPE_HOST; (_x) < UCS_MEMORY_TYPE_LAST; (_x)++)

#ifdef __cplusplus
extern "C" {
#endif
/*
 * Short names and descriptions of the memory types, indexed by value. They
 * hold UCX 1.13's memory types only (up to UCS_MEMORY_TYPE_ROCM_MANAGED),
 * then "unknown" at index 5 (and a NULL after it in the names), with 1.13's
 * sizes: binaries built against 1.13 copy them at load time.
 */
extern const char *ucs_memory_type_names[];
extern const char *ucs_memory_type_descs[];
#ifdef __cplusplus
}
#endif
"#;

/// `uct/api/version.h`: the UCX API version this library implements.
pub const VERSION: &str = r#"
#define UCT_VERNO_MAJOR            1
#define UCT_VERNO_MINOR            23
#define UCT_VERNO_PATCH            0
#define UCT_VERNO_EXTRA            ""
#define UCT_VERNO_STRING           "1.23.0"

#define UCT_MINOR_BIT              (16UL)
#define UCT_MAJOR_BIT              (24UL)
/* Encode a (major, minor) API version for comparison with UCT_API. */
#define UCT_VERSION(_major, _minor) \
    (((_major) << UCT_MAJOR_BIT) | ((_minor) << UCT_MINOR_BIT))
#define UCT_API                    UCT_VERSION(1UL, 23UL)
"#;

/// `uct/api/uct_def.h`.
pub const UCT_DEF: &str = r#"
/* A memory handle that names no registration. */
#define UCT_MEM_HANDLE_NULL        NULL
/* A remote key value that names no key. */
#define UCT_INVALID_RKEY           ((uintptr_t)(-1))
#define UCT_INLINE_API             static UCS_F_ALWAYS_INLINE

/* A device-side memory element (GPU-initiated communication). */
typedef union uct_device_mem_elem uct_device_mem_elem_t;
"#;

/// `uct/api/tl.h`.
pub const TL: &str = r#"
/*
 * The release hook of a receive descriptor handed to an active-message
 * callback with UCT_CB_PARAM_FLAG_DESC: a uct_recv_desc_t pointer stored in
 * the bytes just before the data.
 */
#define uct_recv_desc(_desc) \
    (*(((uct_recv_desc_t**)(_desc)) - 1))
"#;

/// `uct/api/uct.h`.
pub const UCT: &str = r#"
/* printf format and arguments for "<transport>/<device>". */
#define UCT_TL_RESOURCE_DESC_FMT              "%s/%s"
#define UCT_TL_RESOURCE_DESC_ARG(_resource)   (_resource)->tl_name, (_resource)->dev_name

#ifdef __cplusplus
extern "C" {
#endif
/* Names of the uct_device_type_t values, indexed by value. */
extern const char *uct_device_type_names[];
/* Names of the uct_alloc_method_t values, indexed by value, then NULL. */
extern const char *uct_alloc_method_names[];
#ifdef __cplusplus
}
#endif
"#;

/// `ucs/type/thread_mode.h`: the name table of thread modes (data).
pub const THREAD_MODE: &str = r#"
#ifdef __cplusplus
extern "C" {
#endif
/* Names of the ucs_thread_mode_t values, indexed by value. */
extern const char *ucs_thread_mode_names[];
#ifdef __cplusplus
}
#endif
"#;

/// `ucs/stats/stats_fwd.h`: the name table of statistics formats (data).
pub const STATS: &str = r#"
#ifdef __cplusplus
extern "C" {
#endif
/* Names of the statistics output formats ("full", "agg", "summary"), then NULL. */
extern const char *ucs_stats_formats_names[];
#ifdef __cplusplus
}
#endif
"#;

/// `ucs/config/types.h`: the name table of async modes (exported as data).
pub const CONFIG_TYPES: &str = r#"
#ifdef __cplusplus
extern "C" {
#endif
/* Names of the ucs_async_mode_t values, indexed by value. */
extern const char *ucs_async_mode_names[];
#ifdef __cplusplus
}
#endif
"#;

/// `uct/api/v2/uct_v2.h`: the name table of endpoint operations (data).
pub const UCT_V2: &str = r#"
#ifdef __cplusplus
extern "C" {
#endif
/* Names of the uct_ep_operation_t values, indexed by value, then NULL (UCX
 * 1.13's table: UCT_EP_OP_FLUSH's entry is the NULL). */
extern const char *uct_ep_operation_names[];
#ifdef __cplusplus
}
#endif
"#;
