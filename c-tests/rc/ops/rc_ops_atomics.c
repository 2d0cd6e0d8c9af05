/*
 * rc_ops group `atomics`: atomics 32/64: post, fetch, swap, cswap hit and
 * miss, many in flight. Run alone with `rc_ops -g atomics`.
 */
#include "rc_ops.h"

static uint64_t apply_op(uct_atomic_op_t op, uint64_t old, uint64_t v, uint64_t mask)
{
    uint64_t r;
    switch (op) {
    case UCT_ATOMIC_OP_ADD: r = old + v; break;
    case UCT_ATOMIC_OP_AND: r = old & v; break;
    case UCT_ATOMIC_OP_OR: r = old | v; break;
    case UCT_ATOMIC_OP_XOR: r = old ^ v; break;
    case UCT_ATOMIC_OP_SWAP: r = v; break;
    default: r = old; break;
    }
    return (old & ~mask) | (r & mask);
}

static const char *const atomic_names[] = { "add", "and", "or", "xor", "swap", "cswap" };

/* One atomic on a fresh 16-byte target slot: the 64-bit words around the
 * operand hold known values, so a write to the wrong bytes shows. */
static void one_atomic(struct ctx *c, int bits, int fetch, uct_atomic_op_t op, int cswap_hit,
                       unsigned variant)
{
    uint64_t init  = oob_mix64(c->next_tag * 77u + variant) | 0x0101010101010101ull;
    uint64_t value = oob_mix64(init + 5), mask = bits == 64 ? ~0ull : 0xffffffffull;
    size_t slot    = talloc(c, 16);
    /* 32-bit ops at the upper half of the word once, to catch address slips */
    size_t shift   = (bits == 32 && (variant & 1)) ? 4 : 0;
    uint64_t word_mask = mask << (8 * shift), expect_word, expect_fetch, word;
    uint64_t *result64 = (uint64_t *)lalloc(c, 8);
    uint32_t *result32 = (uint32_t *)result64;
    uint64_t remote    = c->peer_base + slot + shift;
    uint64_t compare;
    struct comp cp;
    ucs_status_t st = UCS_ERR_UNSUPPORTED;
    char name[96], why[256] = "";
    int ok;
    uint64_t flags_have = bits == 32 ? (fetch ? c->attr.cap.atomic32.fop_flags
                                              : c->attr.cap.atomic32.op_flags)
                                     : (fetch ? c->attr.cap.atomic64.fop_flags
                                              : c->attr.cap.atomic64.op_flags);

    if (op == UCT_ATOMIC_OP_CSWAP) {
        snprintf(name, sizeof(name), "atomic_cswap%d (%s)", bits, cswap_hit ? "match" : "no match");
    } else {
        snprintf(name, sizeof(name), "atomic%d_%s %s%s", bits, fetch ? "fetch" : "post",
                 atomic_names[op], variant ? " (upper half)" : "");
    }
    if (!(flags_have & UCS_BIT(op))) {
        check(c, 0, name, "the iface does not advertise it");
        return;
    }
    rpc_args(c, CMD_SET64, slot, init, 0, 0);
    rpc_args(c, CMD_SET64, slot + 8, ~init, 0, 0);
    *result64 = 0x5a5a5a5a5a5a5a5aull;
    comp_init(&cp);
    compare = cswap_hit ? (init >> (8 * shift)) & mask : ((init >> (8 * shift)) & mask) ^ 1;
    if (bits == 64) {
        if (op == UCT_ATOMIC_OP_CSWAP) {
            st = POST(c, uct_ep_atomic_cswap64(c->ep, compare, value, remote, c->peer_rkey.rkey,
                                               result64, &cp.uc));
        } else if (fetch) {
            st = POST(c, uct_ep_atomic64_fetch(c->ep, op, value, result64, remote,
                                               c->peer_rkey.rkey, &cp.uc));
        } else {
            st = POST(c, uct_ep_atomic64_post(c->ep, op, value, remote, c->peer_rkey.rkey));
        }
    } else {
        if (op == UCT_ATOMIC_OP_CSWAP) {
            st = POST(c, uct_ep_atomic_cswap32(c->ep, (uint32_t)compare, (uint32_t)value, remote,
                                               c->peer_rkey.rkey, result32, &cp.uc));
        } else if (fetch) {
            st = POST(c, uct_ep_atomic32_fetch(c->ep, op, (uint32_t)value, result32, remote,
                                               c->peer_rkey.rkey, &cp.uc));
        } else {
            st = POST(c, uct_ep_atomic32_post(c->ep, op, (uint32_t)value, remote,
                                              c->peer_rkey.rkey));
        }
    }
    if (fetch && st == UCS_INPROGRESS) {
        wait_calls(c, &cp.calls, 1, c->wait_s);
    }
    if (st == UCS_OK || st == UCS_INPROGRESS) {
        ucs_status_t fst = flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
        if (fst != UCS_OK) {
            check(c, 0, name, "flush: %s", ucs_status_string(fst));
            return;
        }
    }
    progress_for(c, 1);
    if (!fetch && st != UCS_OK) {
        check(c, 0, name, "returned %s (a post completes at once)", ucs_status_string(st));
        return;
    }
    if (fetch && !comp_ok(&cp, st, why, sizeof(why))) {
        check(c, 0, name, "%s", why);
        return;
    }
    /* expected memory */
    {
        uint64_t old = (init >> (8 * shift)) & mask, next;
        if (op == UCT_ATOMIC_OP_CSWAP) {
            next = cswap_hit ? (value & mask) : old;
        } else {
            next = apply_op(op, old, value, mask);
        }
        expect_word  = (init & ~word_mask) | ((next & mask) << (8 * shift));
        expect_fetch = old;
    }
    word = rpc_args(c, CMD_READ64, slot, 0, 0, 0).a;
    ok   = word == expect_word;
    if (!ok) {
        snprintf(why, sizeof(why), "target word 0x%016" PRIx64 ", expected 0x%016" PRIx64
                 " (initial 0x%016" PRIx64 ", operand 0x%" PRIx64 ")",
                 word, expect_word, init, value & mask);
    }
    if (ok && rpc_args(c, CMD_READ64, slot + 8, 0, 0, 0).a != ~init) {
        ok = 0;
        snprintf(why, sizeof(why), "the next word at the target changed");
    }
    if (ok && fetch) {
        uint64_t got = bits == 64 ? *result64 : *result32;
        if (got != expect_fetch) {
            ok = 0;
            snprintf(why, sizeof(why), "fetched 0x%" PRIx64 ", the old value was 0x%" PRIx64,
                     got, expect_fetch);
        } else if (bits == 32 && result32[1] != 0x5a5a5a5au) {
            ok = 0;
            snprintf(why, sizeof(why), "the 32-bit result wrote past its 4 bytes");
        }
    }
    check(c, ok, name, "%s", why);
}

/* Many fetch-adds in flight at once: each fetches the sum of those before. */
static void atomic_chain(struct ctx *c, int bits)
{
    enum { N = 200 };
    size_t slot = talloc(c, 8);
    uint64_t *res = (uint64_t *)lalloc(c, N * 8);
    struct comp *cps = calloc(N, sizeof(*cps));
    ucs_status_t st[N];
    uint64_t sum = 0, word;
    unsigned i, bad = 0;
    char name[64], why[256] = "";
    int ok;

    snprintf(name, sizeof(name), "atomic%d_fetch add x%d in flight", bits, N);
    rpc_args(c, CMD_SET64, slot, 0, 0, 0);
    for (i = 0; i < N; i++) {
        comp_init(&cps[i]);
        res[i] = ~0ull;
        if (bits == 64) {
            st[i] = POST(c, uct_ep_atomic64_fetch(c->ep, UCT_ATOMIC_OP_ADD, i + 1, &res[i],
                                                  c->peer_base + slot, c->peer_rkey.rkey,
                                                  &cps[i].uc));
        } else {
            st[i] = POST(c, uct_ep_atomic32_fetch(c->ep, UCT_ATOMIC_OP_ADD, i + 1,
                                                  (uint32_t *)&res[i], c->peer_base + slot,
                                                  c->peer_rkey.rkey, &cps[i].uc));
        }
    }
    flush_ep_wait(c, c->ep, UCT_FLUSH_FLAG_LOCAL);
    progress_for(c, 2);
    for (i = 0; i < N; i++) {
        uint64_t got = bits == 64 ? res[i] : (uint64_t)*(uint32_t *)&res[i];
        if (!comp_ok(&cps[i], st[i], why, sizeof(why)) || got != sum) {
            if (bad++ == 0 && why[0] == '\0') {
                snprintf(why, sizeof(why), "op %u fetched %" PRIu64 ", expected %" PRIu64, i, got,
                         sum);
            }
        }
        sum += i + 1;
    }
    word = rpc_args(c, CMD_READ64, slot, 0, 0, 0).a;
    if (bits == 32) {
        word &= 0xffffffffull;
    }
    ok = bad == 0 && word == sum;
    if (bad == 0 && word != sum) {
        snprintf(why, sizeof(why), "target counter %" PRIu64 ", expected %" PRIu64, word, sum);
    }
    check(c, ok, name, "%u of %d wrong %s", bad, N, why);
    free(cps);
}

void test_atomics(struct ctx *c)
{
    int bits;
    uct_atomic_op_t op;
    for (bits = 32; bits <= 64; bits += 32) {
        for (op = UCT_ATOMIC_OP_ADD; op <= UCT_ATOMIC_OP_XOR; op++) {
            one_atomic(c, bits, 0, op, 0, 0);
        }
        for (op = UCT_ATOMIC_OP_ADD; op <= UCT_ATOMIC_OP_SWAP; op++) {
            one_atomic(c, bits, 1, op, 0, 0);
        }
        if (bits == 32) {
            one_atomic(c, bits, 0, UCT_ATOMIC_OP_ADD, 0, 1);
            one_atomic(c, bits, 1, UCT_ATOMIC_OP_XOR, 0, 1);
        }
        one_atomic(c, bits, 1, UCT_ATOMIC_OP_CSWAP, 1, 0);
        one_atomic(c, bits, 1, UCT_ATOMIC_OP_CSWAP, 0, 0);
        atomic_chain(c, bits);
    }
}
