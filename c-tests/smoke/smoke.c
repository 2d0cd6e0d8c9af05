/*
 * The control path a UCT 1.13 caller walks, with nothing but the public UCT
 * API: async context, worker, components, the `ib` memory domain, its
 * transport resources. The same source builds against Debian's UCX 1.13
 * headers and against ours, and runs against either library; options say
 * what it must find and which shared object must provide the symbols.
 *
 * Exit status 0 only if every step succeeded and every expectation held.
 */
#define _GNU_SOURCE
#include <uct/api/uct.h>

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct smoke_options {
    const char *component; /* component whose md we open */
    const char *md;        /* memory domain to open */
    const char *tl;        /* transport that must be listed on it */
    const char *device;    /* device that transport must be on */
    const char *expect_lib;      /* file that must define the API symbols */
    const char *forbid_lib_dir;  /* no libuct/libucs/libucm may map from here */
};

static int failures;

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "smoke: FAIL: %s%s%s\n", what, detail ? ": " : "",
            detail ? detail : "");
    ++failures;
}

static int check_status(const char *call, ucs_status_t status)
{
    if (status == UCS_OK) {
        return 1;
    }
    fail(call, ucs_status_string(status));
    return 0;
}

/* Symbols a UCT caller binds to; each must come from --expect-lib. */
static const char *const api_symbols[] = {
    "uct_query_components", "uct_component_query", "uct_md_open",
    "uct_md_query_tl_resources", "uct_worker_create",
    "ucs_async_context_create", "ucs_status_string",
};

static void check_symbol_provider(const char *expect_lib)
{
    char expected[PATH_MAX], actual[PATH_MAX];
    size_t i;

    if (realpath(expect_lib, expected) == NULL) {
        fail("--expect-lib does not exist", expect_lib);
        return;
    }
    for (i = 0; i < sizeof(api_symbols) / sizeof(api_symbols[0]); ++i) {
        void *address = dlsym(RTLD_DEFAULT, api_symbols[i]);
        Dl_info info;

        if (address == NULL || dladdr(address, &info) == 0 ||
            info.dli_fname == NULL) {
            fail("symbol not resolvable", api_symbols[i]);
            continue;
        }
        if (realpath(info.dli_fname, actual) == NULL ||
            strcmp(actual, expected) != 0) {
            fprintf(stderr, "smoke: %s comes from %s, expected %s\n",
                    api_symbols[i], info.dli_fname, expected);
            fail("symbol from the wrong library", api_symbols[i]);
        }
    }
    printf("smoke: API symbols resolve to %s\n", expected);
}

static int is_ucx_library_name(const char *base)
{
    return strncmp(base, "libuct", 6) == 0 || strncmp(base, "libucs", 6) == 0 ||
           strncmp(base, "libucm", 6) == 0;
}

/* No UCX library from `dir` may be mapped: the program must run on ours alone. */
static void check_nothing_mapped_from(const char *dir)
{
    char forbidden[PATH_MAX], line[PATH_MAX + 256], mapped_dir[PATH_MAX];
    FILE *maps;

    if (realpath(dir, forbidden) == NULL) {
        fail("--forbid-lib-dir does not exist", dir);
        return;
    }
    maps = fopen("/proc/self/maps", "r");
    if (maps == NULL) {
        fail("cannot read /proc/self/maps", NULL);
        return;
    }
    while (fgets(line, sizeof(line), maps) != NULL) {
        char *path = strchr(line, '/');
        char *base;

        if (path == NULL) {
            continue;
        }
        path[strcspn(path, "\n")] = '\0';
        base = strrchr(path, '/');
        if (!is_ucx_library_name(base + 1)) {
            continue;
        }
        *base = '\0';
        if (realpath(path, mapped_dir) != NULL && strcmp(mapped_dir, forbidden) == 0) {
            *base = '/';
            fail("a UCX library from the forbidden directory is mapped", path);
            break;
        }
    }
    fclose(maps);
    printf("smoke: no UCX library mapped from %s\n", forbidden);
}

/* Lists the md's transports; counts a match of --tl on --device. */
static void list_tl_resources(uct_md_h md, const struct smoke_options *opts)
{
    uct_tl_resource_desc_t *resources = NULL;
    unsigned num_resources = 0, i;
    int found = 0;

    if (!check_status("uct_md_query_tl_resources",
                      uct_md_query_tl_resources(md, &resources, &num_resources))) {
        return;
    }
    printf("md %s: %u transport resource(s)\n", opts->md, num_resources);
    for (i = 0; i < num_resources; ++i) {
        printf("  %s on %s (device type %d)\n", resources[i].tl_name,
               resources[i].dev_name, (int)resources[i].dev_type);
        if (strcmp(resources[i].tl_name, opts->tl) == 0 &&
            strcmp(resources[i].dev_name, opts->device) == 0) {
            ++found;
            if (resources[i].dev_type != UCT_DEVICE_TYPE_NET) {
                fail("transport resource is not a network device", opts->tl);
            }
        }
    }
    if (found != 1) {
        fprintf(stderr, "smoke: %s on %s listed %d times, expected once\n",
                opts->tl, opts->device, found);
        fail("expected transport resource missing", opts->tl);
    }
    uct_release_tl_resource_list(resources);
}

static void open_md(uct_component_h component, const struct smoke_options *opts)
{
    uct_md_config_t *md_config = NULL;
    uct_md_h md = NULL;

    if (!check_status("uct_md_config_read",
                      uct_md_config_read(component, NULL, NULL, &md_config))) {
        return;
    }
    if (check_status("uct_md_open", uct_md_open(component, opts->md, md_config, &md))) {
        list_tl_resources(md, opts);
        uct_md_close(md);
    }
    uct_config_release(md_config);
}

/* Prints one component and its mds; returns 1 if it is --component and
 * lists --md. */
static int query_component(uct_component_h component, const struct smoke_options *opts)
{
    uct_component_attr_t attr;
    uct_md_resource_desc_t *md_resources;
    int has_md = 0;
    unsigned i;

    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                      UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    if (!check_status("uct_component_query (name, count)",
                      uct_component_query(component, &attr))) {
        return 0;
    }
    md_resources = calloc(attr.md_resource_count + 1, sizeof(*md_resources));
    if (md_resources == NULL) {
        fail("out of memory", NULL);
        return 0;
    }
    attr.field_mask  = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = md_resources;
    if (check_status("uct_component_query (md resources)",
                     uct_component_query(component, &attr))) {
        printf("component %s: %u memory domain(s)", attr.name, attr.md_resource_count);
        for (i = 0; i < attr.md_resource_count; ++i) {
            printf(" %s", md_resources[i].md_name);
            if (strcmp(attr.name, opts->component) == 0 &&
                strcmp(md_resources[i].md_name, opts->md) == 0) {
                has_md = 1;
            }
        }
        printf("\n");
    }
    free(md_resources);
    return has_md;
}

static unsigned progress_calls;

static unsigned count_progress(void *arg)
{
    (void)arg;
    ++progress_calls;
    return 1; /* "made progress": uct_worker_progress must add it up */
}

/* Progress the worker `rounds` times; returns the sum of the results. */
static unsigned progress(uct_worker_h worker, int rounds)
{
    unsigned total = 0;

    while (rounds-- > 0) {
        total += uct_worker_progress(worker);
    }
    return total;
}

/* A callback registered with the worker must be called by
 * uct_worker_progress, which UCX's headers inline: they walk the worker's
 * callback queue themselves. Once unregistered, it must stop being called. */
static void check_worker_progress(uct_worker_h worker)
{
    uct_worker_cb_id_t id = UCS_CALLBACKQ_ID_NULL;
    unsigned reported, calls_after_unregister;

    if (progress(worker, 1) != 0) {
        fail("uct_worker_progress on an idle worker reported progress", NULL);
    }
    uct_worker_progress_register_safe(worker, count_progress, NULL,
                                      UCS_CALLBACKQ_FLAG_FAST, &id);
    if (id == UCS_CALLBACKQ_ID_NULL) {
        fail("uct_worker_progress_register_safe returned no id", NULL);
        return;
    }
    reported = progress(worker, 3);
    printf("smoke: registered progress callback: %u call(s), %u reported by "
           "uct_worker_progress\n", progress_calls, reported);
    if (progress_calls == 0 || reported != progress_calls) {
        fail("uct_worker_progress did not call the registered callback", NULL);
    }
    uct_worker_progress_unregister_safe(worker, &id);
    if (id != UCS_CALLBACKQ_ID_NULL) {
        fail("uct_worker_progress_unregister_safe did not reset the id", NULL);
    }
    progress(worker, 2); /* lets a deferred removal take effect */
    calls_after_unregister = progress_calls;
    progress(worker, 3);
    if (progress_calls != calls_after_unregister) {
        fail("an unregistered progress callback is still called", NULL);
    }
}

static void run(const struct smoke_options *opts)
{
    ucs_async_context_t *async = NULL;
    uct_worker_h worker = NULL;
    uct_component_h *components = NULL;
    uct_component_h md_component = NULL;
    unsigned num_components = 0, i;

    if (!check_status("ucs_async_context_create",
                      ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async))) {
        return;
    }
    if (!check_status("uct_worker_create",
                      uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker))) {
        goto out_async;
    }
    check_worker_progress(worker);

    if (!check_status("uct_query_components",
                      uct_query_components(&components, &num_components))) {
        goto out_worker;
    }
    printf("smoke: %u component(s)\n", num_components);
    for (i = 0; i < num_components; ++i) {
        if (query_component(components[i], opts)) {
            md_component = components[i];
        }
    }
    if (md_component == NULL) {
        fprintf(stderr, "smoke: no component %s with memory domain %s\n",
                opts->component, opts->md);
        fail("expected memory domain missing", opts->md);
    } else {
        open_md(md_component, opts);
    }
    uct_release_component_list(components);
out_worker:
    uct_worker_destroy(worker);
out_async:
    ucs_async_context_destroy(async);
}

static void usage(const char *program)
{
    fprintf(stderr,
            "usage: %s [--component NAME] [--md NAME] [--tl NAME] [--device NAME]\n"
            "          [--expect-lib FILE] [--forbid-lib-dir DIR]\n"
            "defaults: --component ib --md mlx5_0 --tl rc_mlx5 --device mlx5_0:1\n",
            program);
}

int main(int argc, char **argv)
{
    struct smoke_options opts = {"ib", "mlx5_0", "rc_mlx5", "mlx5_0:1", NULL, NULL};
    int i;

    /* Keeps stdout and stderr lines in order in CTest logs. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (i = 1; i < argc; ++i) {
        const char **value = NULL;

        if (strcmp(argv[i], "--component") == 0) {
            value = &opts.component;
        } else if (strcmp(argv[i], "--md") == 0) {
            value = &opts.md;
        } else if (strcmp(argv[i], "--tl") == 0) {
            value = &opts.tl;
        } else if (strcmp(argv[i], "--device") == 0) {
            value = &opts.device;
        } else if (strcmp(argv[i], "--expect-lib") == 0) {
            value = &opts.expect_lib;
        } else if (strcmp(argv[i], "--forbid-lib-dir") == 0) {
            value = &opts.forbid_lib_dir;
        }
        if (value == NULL || i + 1 >= argc) {
            usage(argv[0]);
            return 2;
        }
        *value = argv[++i];
    }

    run(&opts);
    if (opts.expect_lib != NULL) {
        check_symbol_provider(opts.expect_lib);
    }
    if (opts.forbid_lib_dir != NULL) {
        check_nothing_mapped_from(opts.forbid_lib_dir);
    }
    printf("smoke: %s (%d failure(s))\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
