/*
 * Built against UCX 1.13's headers: references UCX's exported name tables
 * as data, so the executable gets its own copies of them at load time (copy
 * relocation, with the sizes 1.13 declares) from whichever library defines
 * them first: ours when preloaded. Prints each table up to its NULL end (or
 * its known length) as the binary sees it.
 */
#include <uct/api/uct.h>
#include <ucs/memory/memory_type.h>
#include <ucs/type/thread_mode.h>
#include <ucs/config/types.h>
#include <ucs/stats/stats_fwd.h>
#include <stdio.h>

extern const char *ucs_async_mode_names[];

static void print_table(const char *name, const char **table, int max)
{
    int i;

    printf("%s:", name);
    for (i = 0; i < max; ++i) {
        if (table[i] == NULL) {
            printf(" (end)");
            break;
        }
        printf(" %s", table[i]);
    }
    printf("\n");
}

int main(void)
{
    print_table("ucs_memory_type_names", ucs_memory_type_names, UCS_MEMORY_TYPE_LAST + 2);
    print_table("ucs_memory_type_descs", ucs_memory_type_descs, UCS_MEMORY_TYPE_LAST + 1);
    print_table("uct_alloc_method_names", uct_alloc_method_names, UCT_ALLOC_METHOD_LAST + 1);
    print_table("uct_device_type_names", uct_device_type_names, UCT_DEVICE_TYPE_LAST);
    print_table("ucs_thread_mode_names", ucs_thread_mode_names, UCS_THREAD_MODE_LAST);
    print_table("ucs_async_mode_names", ucs_async_mode_names, UCS_ASYNC_MODE_LAST + 1);
    print_table("ucs_stats_formats_names", ucs_stats_formats_names, 4);
    printf("ucs_topo_default_distance: latency %g bandwidth %g\n",
           ucs_topo_default_distance.latency, ucs_topo_default_distance.bandwidth);
    return 0;
}
