/*
 * rc_ops group `caps`: the iface advertises every op the suite runs. Run
 * alone with `rc_ops -g caps`.
 */
#include "rc_ops.h"

void test_caps(struct ctx *c)
{
    static const struct {
        uint64_t flag;
        const char *name;
    } caps[] = {
        { UCT_IFACE_FLAG_AM_SHORT, "AM_SHORT" },   { UCT_IFACE_FLAG_AM_BCOPY, "AM_BCOPY" },
        { UCT_IFACE_FLAG_AM_ZCOPY, "AM_ZCOPY" },   { UCT_IFACE_FLAG_PUT_SHORT, "PUT_SHORT" },
        { UCT_IFACE_FLAG_PUT_BCOPY, "PUT_BCOPY" }, { UCT_IFACE_FLAG_PUT_ZCOPY, "PUT_ZCOPY" },
        { UCT_IFACE_FLAG_GET_BCOPY, "GET_BCOPY" },
        { UCT_IFACE_FLAG_GET_ZCOPY, "GET_ZCOPY" }, { UCT_IFACE_FLAG_PENDING, "PENDING" },
        { UCT_IFACE_FLAG_CONNECT_TO_EP, "CONNECT_TO_EP" }, { UCT_IFACE_FLAG_CB_SYNC, "CB_SYNC" },
    };
    char missing[256] = "";
    unsigned i;
    for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
        if (!(c->attr.cap.flags & caps[i].flag)) {
            strncat(missing, " ", sizeof(missing) - strlen(missing) - 1);
            strncat(missing, caps[i].name, sizeof(missing) - strlen(missing) - 1);
        }
    }
    /* GET_SHORT has its own check (get_short) */
    check(c, missing[0] == '\0', "iface advertises every op of the suite", "%s%s",
          missing[0] ? "missing:" : "", missing);
}
