/*
 * Built against Debian's UCX 1.13 and run with our libuct.so.0 preloaded, so
 * UCX's libucs.so.0 is in the process: a log handler pushed with UCX's
 * ucs_log_push_handler (as UCX's gtest does to catch expected errors) sees
 * the lines our library logs for parameter errors, at UCX's ERROR level,
 * and no line above the level UCX is configured for.
 *
 * Opens an rc_mlx5 iface and an ep connected to itself, then posts an
 * active message with an invalid id and a put_short one byte too long: each
 * must fail with UCS_ERR_INVALID_PARAM and reach the handler as one ERROR
 * line naming the problem ("active message id", "length").
 * Then, as UCX's gtest does, raises ucs_global_opts' level to TRACE_DATA:
 * a valid put_short and an am_short must each reach the handler as one
 * data-path line at TRACE_DATA (one per posted WQE), and at the default
 * level none may be produced. (Received AMs and AM tracers are checked by
 * tests/rc_data_trace.rs.)
 * Prints one line per check; exits 1 at the first failure.
 */
#include <uct/api/uct.h>
#include <ucs/debug/log_def.h>
#include <ucs/config/global_opts.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            printf("FAIL: " __VA_ARGS__); \
            printf("\n"); \
            return 1; \
        } \
    } while (0)

/* What the handler saw since the last reset. */
static struct {
    unsigned errors;
    unsigned above_configured;
    char     last_error[512];
} seen;

static ucs_log_func_rc_t
catch_log(const char *file, unsigned line, const char *function,
          ucs_log_level_t level, const ucs_log_component_config_t *comp_conf,
          const char *format, va_list ap)
{
    va_list copy;

    (void)line;
    (void)function;
    if (level > comp_conf->log_level) {
        ++seen.above_configured;
    }
    if ((level != UCS_LOG_LEVEL_ERROR) || (strstr(file, ".rs") == NULL)) {
        return UCS_LOG_FUNC_RC_CONTINUE; /* not one of our parameter errors */
    }
    ++seen.errors;
    va_copy(copy, ap);
    vsnprintf(seen.last_error, sizeof(seen.last_error), format, copy);
    va_end(copy);
    return UCS_LOG_FUNC_RC_STOP; /* expected: keep it off the output */
}

/* Data-path lines seen by count_data_lines. */
static unsigned data_lines;

static ucs_log_func_rc_t
count_data_lines(const char *file, unsigned line, const char *function,
                 ucs_log_level_t level, const ucs_log_component_config_t *comp_conf,
                 const char *format, va_list ap)
{
    (void)file;
    (void)line;
    (void)function;
    (void)comp_conf;
    (void)format;
    (void)ap;
    if (level == UCS_LOG_LEVEL_TRACE_DATA) {
        ++data_lines;
        return UCS_LOG_FUNC_RC_STOP; /* keep the output quiet */
    }
    return UCS_LOG_FUNC_RC_CONTINUE;
}

/* Posts a put_short and an am_short on the ep (connected to its own iface)
 * and returns the data lines the handler saw meanwhile. */
static int data_lines_of_two_posts(uct_ep_h ep, char *buffer, uct_rkey_t rkey,
                                   unsigned *lines)
{
    ucs_status_t status;

    data_lines = 0;
    status = uct_ep_put_short(ep, buffer, 8, (uintptr_t)(buffer + 8), rkey);
    CHECK(status == UCS_OK, "put_short: %s", ucs_status_string(status));
    status = uct_ep_am_short(ep, 0, 0, buffer, 8);
    CHECK(status == UCS_OK, "am_short: %s", ucs_status_string(status));
    *lines = data_lines;
    return 0;
}

static void reset_seen(void)
{
    memset(&seen, 0, sizeof(seen));
}

static int expect_error_line(const char *operation, ucs_status_t status,
                             const char *wanted)
{
    CHECK(status == UCS_ERR_INVALID_PARAM, "%s returned %s, expected %s", operation,
          ucs_status_string(status), ucs_status_string(UCS_ERR_INVALID_PARAM));
    CHECK(seen.errors == 1, "%s: the pushed handler saw %u error lines, expected 1",
          operation, seen.errors);
    CHECK(strstr(seen.last_error, wanted) != NULL,
          "%s: the error line '%s' does not mention '%s'", operation, seen.last_error,
          wanted);
    CHECK(seen.above_configured == 0, "%s: %u lines above UCX's configured level",
          operation, seen.above_configured);
    printf("ok: %s: the handler saw '%s'\n", operation, seen.last_error);
    return 0;
}

static uct_component_h ib_component;

static uct_md_h open_ib_md(void)
{
    uct_component_h *components;
    unsigned num_components, i;
    uct_md_config_t *md_config;
    uct_md_h md = NULL;

    if (uct_query_components(&components, &num_components) != UCS_OK) {
        return NULL;
    }
    for (i = 0; (i < num_components) && (md == NULL); ++i) {
        uct_component_attr_t attr = {.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME};
        uct_component_query(components[i], &attr);
        if (strcmp(attr.name, "ib") != 0) {
            continue;
        }
        if (uct_md_config_read(components[i], NULL, NULL, &md_config) == UCS_OK) {
            uct_md_open(components[i], "mlx5_0", md_config, &md);
            ib_component = components[i];
            uct_config_release(md_config);
        }
    }
    uct_release_component_list(components);
    return md;
}

static ucs_status_t ignore_am(void *arg, void *data, size_t length, unsigned flags)
{
    (void)arg;
    (void)data;
    (void)length;
    (void)flags;
    return UCS_OK;
}

int main(void)
{
    ucs_async_context_t *async;
    uct_iface_config_t *iface_config;
    uct_iface_params_t iface_params;
    uct_ep_params_t ep_params;
    uct_iface_attr_t attr;
    uct_worker_h worker;
    uct_iface_h iface;
    uct_ep_h ep;
    uct_md_h md;
    ucs_status_t status;
    uct_device_addr_t *dev_addr;
    uct_iface_addr_t *iface_addr;
    uct_ep_addr_t *ep_addr;
    char *buffer;

    status = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async);
    CHECK(status == UCS_OK, "ucs_async_context_create: %s", ucs_status_string(status));
    status = uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker);
    CHECK(status == UCS_OK, "uct_worker_create: %s", ucs_status_string(status));
    md = open_ib_md();
    CHECK(md != NULL, "no ib component with an mlx5_0 memory domain");
    status = uct_md_iface_config_read(md, "rc_mlx5", NULL, NULL, &iface_config);
    CHECK(status == UCS_OK, "uct_md_iface_config_read: %s", ucs_status_string(status));
    memset(&iface_params, 0, sizeof(iface_params));
    iface_params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                        UCT_IFACE_PARAM_FIELD_DEVICE;
    iface_params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    iface_params.mode.device.tl_name  = "rc_mlx5";
    iface_params.mode.device.dev_name = "mlx5_0:1";
    status = uct_iface_open(md, worker, &iface_params, iface_config, &iface);
    uct_config_release(iface_config);
    CHECK(status == UCS_OK, "uct_iface_open(rc_mlx5): %s", ucs_status_string(status));
    status = uct_iface_set_am_handler(iface, 0, ignore_am, NULL, 0);
    CHECK(status == UCS_OK, "uct_iface_set_am_handler: %s", ucs_status_string(status));
    status = uct_iface_query(iface, &attr);
    CHECK(status == UCS_OK, "uct_iface_query: %s", ucs_status_string(status));

    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    ep_params.iface      = iface;
    status = uct_ep_create(&ep_params, &ep);
    CHECK(status == UCS_OK, "uct_ep_create: %s", ucs_status_string(status));
    dev_addr   = calloc(1, attr.device_addr_len);
    iface_addr = calloc(1, attr.iface_addr_len + 1);
    ep_addr    = calloc(1, attr.ep_addr_len);
    buffer     = calloc(1, attr.cap.put.max_short + 1);
    CHECK((dev_addr != NULL) && (iface_addr != NULL) && (ep_addr != NULL) &&
          (buffer != NULL), "out of memory");
    CHECK(uct_iface_get_device_address(iface, dev_addr) == UCS_OK, "device address");
    CHECK(uct_iface_get_address(iface, iface_addr) == UCS_OK, "iface address");
    CHECK(uct_ep_get_address(ep, ep_addr) == UCS_OK, "ep address");
    status = uct_ep_connect_to_ep(ep, dev_addr, ep_addr);
    CHECK(status == UCS_OK, "uct_ep_connect_to_ep: %s", ucs_status_string(status));
    printf("ok: rc_mlx5 ep connected to itself\n");

    ucs_log_push_handler(catch_log);
    reset_seen();
    status = uct_ep_am_short(ep, UCT_AM_ID_MAX, 0, buffer, 8);
    if (expect_error_line("am_short with id UCT_AM_ID_MAX", status,
                          "active message id") != 0) {
        return 1;
    }
    reset_seen();
    status = uct_ep_put_short(ep, buffer, attr.cap.put.max_short + 1,
                              (uintptr_t)buffer, 0);
    if (expect_error_line("put_short one byte above max_short", status, "length") != 0) {
        return 1;
    }
    ucs_log_pop_handler();

    {
        ucs_log_level_t configured = ucs_global_opts.log_component.log_level;
        unsigned lines;
        uct_md_attr_t md_attr;
        uct_rkey_bundle_t rkey;
        uct_mem_h memh;
        void *packed;

        status = uct_md_mem_reg(md, buffer, 16, UCT_MD_MEM_ACCESS_ALL, &memh);
        CHECK(status == UCS_OK, "uct_md_mem_reg: %s", ucs_status_string(status));
        CHECK(uct_md_query(md, &md_attr) == UCS_OK, "uct_md_query");
        packed = calloc(1, md_attr.rkey_packed_size);
        CHECK(packed != NULL, "out of memory");
        CHECK(uct_md_mkey_pack(md, memh, packed) == UCS_OK, "uct_md_mkey_pack");
        status = uct_rkey_unpack(ib_component, packed, &rkey);
        CHECK(status == UCS_OK, "uct_rkey_unpack: %s", ucs_status_string(status));
        free(packed);
        ucs_log_push_handler(count_data_lines);
        if (data_lines_of_two_posts(ep, buffer, rkey.rkey, &lines) != 0) {
            return 1;
        }
        CHECK(lines == 0, "%u data-path lines at UCX's level %d", lines, configured);
        ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_TRACE_DATA;
        if (data_lines_of_two_posts(ep, buffer, rkey.rkey, &lines) != 0) {
            return 1;
        }
        ucs_global_opts.log_component.log_level = configured;
        /* one per posted WQE */
        CHECK(lines == 2, "%u data-path lines at TRACE_DATA, expected 2", lines);
        ucs_log_pop_handler();
        uct_rkey_release(ib_component, &rkey);
        uct_md_mem_dereg(md, memh);
        printf("ok: %u data-path lines at TRACE_DATA for a put_short and an am_short\n",
               lines);
    }

    uct_ep_destroy(ep);
    uct_iface_close(iface);
    uct_md_close(md);
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    free(dev_addr);
    free(iface_addr);
    free(ep_addr);
    free(buffer);
    printf("PASS\n");
    return 0;
}
