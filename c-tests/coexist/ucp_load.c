/*
 * A small UCP program (built against Debian's UCX 1.13 libucp) run with our
 * libuct preloaded: ucp_init, ucp_worker_create, ucp_worker_get_address,
 * cleanup. Whatever UCP can do on our library must work; what it cannot
 * (UCP wire-up needs an auxiliary transport that rc_mlx5 alone is not) must
 * end in a UCS error status that is printed, never a crash or a hang (the
 * CTest's timeout and the exit-status check in run_ucp_load.sh catch those).
 *
 * Prints "ucp_load: <step>: <status text>" for a failed step and exits 3,
 * or "ucp_load: worker address of N bytes" and exits 0.
 */
#include <ucp/api/ucp.h>
#include <stdio.h>

static int report(const char *step, ucs_status_t status)
{
    printf("ucp_load: %s: %s\n", step, ucs_status_string(status));
    return 3;
}

int main(void)
{
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES,
        .features   = UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_AMO64,
    };
    ucp_worker_params_t worker_params = {
        .field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SINGLE,
    };
    ucp_config_t *config;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_address_t *address;
    size_t address_length;
    ucs_status_t status;
    int result = 0;

    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        return report("ucp_config_read", status);
    }
    status = ucp_init(&params, config, &context);
    ucp_config_release(config);
    if (status != UCS_OK) {
        return report("ucp_init", status);
    }
    status = ucp_worker_create(context, &worker_params, &worker);
    if (status != UCS_OK) {
        result = report("ucp_worker_create", status);
        goto out_context;
    }
    status = ucp_worker_get_address(worker, &address, &address_length);
    if (status != UCS_OK) {
        result = report("ucp_worker_get_address", status);
        goto out_worker;
    }
    printf("ucp_load: worker address of %zu bytes\n", address_length);
    ucp_worker_release_address(worker, address);
out_worker:
    ucp_worker_destroy(worker);
out_context:
    ucp_cleanup(context);
    return result;
}
