/*
 * The soft HCA fault switches through their C declarations: argument
 * checking, and that a configured device (UCX_SOFT_HCA_DEVICES, set by the
 * test registration) accepts link and loss changes.
 */
#include <uct/soft/soft_hca.h>

#include <stdio.h>

static int failures = 0;

static void expect(const char *what, ucs_status_t got, ucs_status_t want)
{
    if (got != want) {
        fprintf(stderr, "FAIL %s: got %d, want %d\n", what, (int)got, (int)want);
        ++failures;
    }
}

int main(void)
{
    expect("link_set(NULL)", uct_soft_hca_link_set(NULL, 0), UCS_ERR_INVALID_PARAM);
    expect("loss_set(NULL)", uct_soft_hca_loss_set(NULL, 0.5), UCS_ERR_INVALID_PARAM);
    expect("link_set(unknown)", uct_soft_hca_link_set("nosuchdev", 0), UCS_ERR_NO_DEVICE);
    expect("loss_set(unknown)", uct_soft_hca_loss_set("nosuchdev", 0.5), UCS_ERR_NO_DEVICE);
    expect("loss_set(-0.1)", uct_soft_hca_loss_set("softhca_c0", -0.1), UCS_ERR_INVALID_PARAM);
    expect("loss_set(1.5)", uct_soft_hca_loss_set("softhca_c0", 1.5), UCS_ERR_INVALID_PARAM);
    expect("link_set(down)", uct_soft_hca_link_set("softhca_c0", 0), UCS_OK);
    expect("link_set(up)", uct_soft_hca_link_set("softhca_c0", 1), UCS_OK);
    expect("loss_set(0.05)", uct_soft_hca_loss_set("softhca_c0", 0.05), UCS_OK);
    expect("loss_set(0)", uct_soft_hca_loss_set("softhca_c1", 0.0), UCS_OK);
    expect("drop_next(NULL)", uct_soft_hca_drop_next(NULL, 1), UCS_ERR_INVALID_PARAM);
    expect("drop_next(unknown)", uct_soft_hca_drop_next("nosuchdev", 1), UCS_ERR_NO_DEVICE);
    expect("drop_next(2)", uct_soft_hca_drop_next("softhca_c0", 2), UCS_OK);
    expect("drop_next(0)", uct_soft_hca_drop_next("softhca_c0", 0), UCS_OK);
    if (failures == 0) {
        printf("soft HCA fault API: ok\n");
    }
    return failures == 0 ? 0 : 1;
}
