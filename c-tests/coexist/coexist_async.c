/*
 * Built against Debian's UCX 1.13 (headers, libuct, libucs) and run with
 * our libuct.so.0 preloaded, so UCX's libucs.so.0 is loaded beside ours:
 *  - uct_worker_create takes async contexts UCX's libucs made, both
 *    initialised in the caller's storage (ucs_async_context_init, as
 *    ucx_perftest and libucp do) and created (ucs_async_context_create);
 *  - an event handler set on UCX's context (through the ucs_* name we also
 *    export) is delivered by UCX's async thread;
 *  - ucs_event_set_* and ucs_callbackq_* (with 1.13's inline dispatch) work,
 *    also ucs_callbackq_remove_if on a worker's progress_q (as libucp does);
 *  - an rc_mlx5 interface opens on such a worker.
 * Prints one line per check; exits 1 at the first failure.
 */
#include <uct/api/uct.h>
#include <ucs/sys/event_set.h>
#include <ucs/datastruct/callbackq.h>
#include <sys/eventfd.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Exported by UCX's libucs, declared in its async.h, which Debian does not
 * install; the context is opaque storage here (1.13's is far smaller). */
ucs_status_t ucs_async_context_init(void *async, ucs_async_mode_t mode);
void ucs_async_context_cleanup(void *async);

#define CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            printf("FAIL: " __VA_ARGS__); \
            printf("\n"); \
            return 1; \
        } \
    } while (0)

static volatile int handler_calls;

static void on_event(int id, ucs_event_set_types_t events, void *arg)
{
    uint64_t value;

    (void)events;
    (void)arg;
    if (read(id, &value, sizeof(value)) == sizeof(value)) {
        handler_calls++;
    }
}

static void on_ready(void *data, ucs_event_set_types_t events, void *arg)
{
    (void)events;
    *(void**)arg = data;
}

static unsigned progress_calls;

static unsigned count_progress(void *arg)
{
    (void)arg;
    return ++progress_calls, 1;
}

static int is_count_progress(const ucs_callbackq_elem_t *elem, void *arg)
{
    (void)arg;
    return elem->cb == count_progress;
}

/*
 * As UCX 1.13's libucp does on endpoint and worker cleanup: remove progress
 * callbacks straight from the worker's progress_q (tl.h's struct uct_worker)
 * with ucs_callbackq_remove_if.
 */
static int remove_from_worker_queue(uct_worker_h worker)
{
    uct_worker_cb_id_t id = UCS_CALLBACKQ_ID_NULL;
    unsigned before;

    progress_calls = 0;
    uct_worker_progress_register_safe(worker, count_progress, NULL, 0, &id);
    uct_worker_progress(worker);
    CHECK(progress_calls == 1, "the worker ran its callback %u times, expected 1",
          progress_calls);
    ucs_callbackq_remove_if(&worker->progress_q, is_count_progress, NULL);
    before = progress_calls;
    uct_worker_progress(worker);
    CHECK(progress_calls == before, "the callback ran after ucs_callbackq_remove_if");
    progress_calls = 0;
    printf("ok: ucs_callbackq_remove_if on the worker's progress_q\n");
    return 0;
}

static int open_rc_iface(uct_worker_h worker)
{
    uct_md_config_t *md_config;
    uct_iface_config_t *iface_config;
    uct_component_h *components;
    unsigned num_components, i;
    uct_iface_params_t params;
    uct_md_h md = NULL;
    uct_iface_h iface;
    ucs_status_t status;

    status = uct_query_components(&components, &num_components);
    CHECK(status == UCS_OK, "uct_query_components: %s", ucs_status_string(status));
    for (i = 0; (i < num_components) && (md == NULL); ++i) {
        uct_component_attr_t attr = {.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME};
        uct_component_query(components[i], &attr);
        if (strcmp(attr.name, "ib") != 0) {
            continue;
        }
        status = uct_md_config_read(components[i], NULL, NULL, &md_config);
        CHECK(status == UCS_OK, "uct_md_config_read: %s", ucs_status_string(status));
        status = uct_md_open(components[i], "mlx5_0", md_config, &md);
        uct_config_release(md_config);
        CHECK(status == UCS_OK, "uct_md_open(mlx5_0): %s", ucs_status_string(status));
    }
    uct_release_component_list(components);
    CHECK(md != NULL, "no ib component");
    status = uct_md_iface_config_read(md, "rc_mlx5", NULL, NULL, &iface_config);
    CHECK(status == UCS_OK, "uct_md_iface_config_read: %s", ucs_status_string(status));
    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "rc_mlx5";
    params.mode.device.dev_name = "mlx5_0:1";
    status = uct_iface_open(md, worker, &params, iface_config, &iface);
    uct_config_release(iface_config);
    CHECK(status == UCS_OK, "uct_iface_open(rc_mlx5): %s", ucs_status_string(status));
    uct_worker_progress(worker);
    uct_iface_close(iface);
    uct_md_close(md);
    printf("ok: rc_mlx5 iface opened and progressed on that worker\n");
    return 0;
}

int main(void)
{
    /* Storage for UCX's context, as a caller embeds it in its own struct. */
    static uint64_t storage[512];
    ucs_async_context_t *created;
    ucs_sys_event_set_t *event_set;
    ucs_callbackq_t cbq;
    uct_worker_h worker;
    ucs_status_t status;
    uint64_t one = 1;
    void *ready = NULL;
    unsigned num_events;
    int fd, id, i;

    status = ucs_async_context_init(storage, UCS_ASYNC_MODE_THREAD_SPINLOCK);
    CHECK(status == UCS_OK, "ucs_async_context_init: %s", ucs_status_string(status));
    status = uct_worker_create((ucs_async_context_t*)storage, UCS_THREAD_MODE_SINGLE,
                               &worker);
    CHECK(status == UCS_OK, "uct_worker_create(UCX's context in caller storage): %s",
          ucs_status_string(status));
    printf("ok: worker on UCX's context initialised in caller storage\n");
    if ((remove_from_worker_queue(worker) != 0) || (open_rc_iface(worker) != 0)) {
        return 1;
    }
    uct_worker_destroy(worker);

    status = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &created);
    CHECK(status == UCS_OK, "ucs_async_context_create: %s", ucs_status_string(status));
    status = uct_worker_create(created, UCS_THREAD_MODE_SINGLE, &worker);
    CHECK(status == UCS_OK, "uct_worker_create(created context): %s",
          ucs_status_string(status));
    uct_worker_destroy(worker);
    printf("ok: worker on a created context\n");

    fd = eventfd(0, EFD_NONBLOCK);
    CHECK(fd >= 0, "eventfd");
    status = ucs_async_set_event_handler(UCS_ASYNC_MODE_THREAD_SPINLOCK, fd,
                                         UCS_EVENT_SET_EVREAD, on_event, NULL,
                                         created);
    CHECK(status == UCS_OK, "ucs_async_set_event_handler: %s", ucs_status_string(status));
    CHECK(write(fd, &one, sizeof(one)) == sizeof(one), "write eventfd");
    for (i = 0; (i < 5000) && (handler_calls == 0); ++i) {
        usleep(1000);
    }
    CHECK(handler_calls == 1, "the async handler ran %d times, expected 1", handler_calls);
    status = ucs_async_remove_handler(fd, 1);
    CHECK(status == UCS_OK, "ucs_async_remove_handler: %s", ucs_status_string(status));
    ucs_async_context_destroy(created);
    ucs_async_context_cleanup(storage);
    printf("ok: event handler on UCX's context delivered\n");

    status = ucs_event_set_create(&event_set);
    CHECK(status == UCS_OK, "ucs_event_set_create: %s", ucs_status_string(status));
    status = ucs_event_set_add(event_set, fd, UCS_EVENT_SET_EVREAD, &fd);
    CHECK(status == UCS_OK, "ucs_event_set_add: %s", ucs_status_string(status));
    CHECK(write(fd, &one, sizeof(one)) == sizeof(one), "write eventfd");
    num_events = 4;
    status = ucs_event_set_wait(event_set, &num_events, 5000, on_ready, &ready);
    CHECK((status == UCS_OK) && (num_events == 1) && (ready == &fd),
          "ucs_event_set_wait: %s, %u events", ucs_status_string(status), num_events);
    ucs_event_set_cleanup(event_set);
    close(fd);
    printf("ok: event set reported the ready fd\n");

    status = ucs_callbackq_init(&cbq);
    CHECK(status == UCS_OK, "ucs_callbackq_init: %s", ucs_status_string(status));
    id = ucs_callbackq_add_safe(&cbq, count_progress, NULL, 0);
    CHECK(id >= 0, "ucs_callbackq_add_safe: %d", id);
    for (i = 0; i < 3; ++i) {
        ucs_callbackq_dispatch(&cbq);
    }
    ucs_callbackq_remove_safe(&cbq, id);
    for (i = 0; i < 3; ++i) {
        ucs_callbackq_dispatch(&cbq);
    }
    ucs_callbackq_cleanup(&cbq);
    CHECK(progress_calls == 3, "the callback ran %u times, expected 3", progress_calls);
    printf("ok: callback queue with the header's inline dispatch\n");
    printf("coexist_async: PASS\n");
    return 0;
}
