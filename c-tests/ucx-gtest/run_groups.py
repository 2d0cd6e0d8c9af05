#!/usr/bin/env python3
"""Runs UCX's gtest groups (one test-suite class of one transport each) in
separate processes and prints a table group -> passed/failed/crashed/hung/
skipped.

    run_groups.py --gtest FILE --transports rc_mlx5,ib [--preload LIB]
                  [--expectations FILE] [--logs DIR] [--test-timeout S]
                  [--markdown FILE] [--results FILE] [--filter SUBSTRING]

A group is `<transport>/<suite>` as gtest names it (rc_mlx5/test_uct_ep,
ib/test_md). Each group runs as `gtest --gtest_filter=<group>.* -t S`: gtest's
watchdog (-t) aborts a test that runs longer than S seconds, and this driver
kills a process whose running test has made no progress for S + 30 seconds.
A test that was running when its process died is `crashed`, or `hung` when it
had run into either timeout; the group's remaining tests then run in a new
process, so one crash costs one test.

--expectations lists the tests known not to pass today (one line each:
`<full gtest name> <failed|crashed|hung|sometimes>[:<condition>] <reason>`;
`sometimes`: the outcome depends on chance until the bug is fixed; a
condition limits the line to hosts where it holds, see CONDITIONS). The
`ib/*` groups run with the soft HCA device bound to the host's first
non-loopback IPv4 address whose interface sits on a PCI function, when
there is one (see pci_interface). The exit status is 1 when
a test outside that list fails, crashes or hangs; listed tests that pass are
reported so the list can shrink. Without --expectations every bad result
counts. The table always shows the real counts.
"""

import argparse
import collections
import fcntl
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time

# Groups left out, with what each reads or calls that is UCX's own rc/ib
# implementation rather than the public uct.h API (our library has none of it;
# the calls land in ib_stub.c). Checked against UCX 1.13.1's test/gtest.
INTERNAL_GROUPS = {
    "test_rc_flow_control": "uct_rc_iface_t config.fc_* and tx.cq_available, uct_rc_ep_t fc",
    "test_rc_flow_control_stats": "as test_rc_flow_control, plus UCX's stats counters",
    "test_rc_get_limit": "uct_rc_iface_t tx.reads_available and config (max_get_bytes)",
    "test_rc_keepalive": "uct_rc_iface_t tx.cq_available and tx.arbiter, dispatched with "
                         "UCX's uct_rc_ep_process_pending",
    "test_rc_iface_attrs": "uct_rc_mlx5_iface_common_t (UCT_RC_MLX5_TM_ENABLED) and UCX's "
                           "mlx5 WQE-size constants",
    "test_uct_ib_addr": "uct_ib_iface_t gid_info/config and UCX's uct_ib_address_pack/unpack",
    "test_uct_ib_pkey": "uct_ib_iface_t pkey fields, UCX's uct_ib_iface_address_pack and "
                        "uct_ib_iface_is_reachable; the port through libibverbs",
    "test_uct_ib_sl": "UCX's uct_ib_md_open on uct_ib_component, uct_ib_mlx5_md_t "
                      "(uct_ib_mlx5_devx_query_ooo_sl_mask)",
    "test_uct_ib_gid_idx": "uct_ib_md_t and a uct_ib_iface_t filled by UCX's "
                           "uct_ib_iface_init_roce_gid_info",
    "test_uct_ib_lmc": "no UCX struct, but it opens the port through libibverbs itself "
                       "(ibv_query_port for the LMC), where the soft HCA is no device",
    "test_uct_event_ib": "uct_ib_iface_t cq[] (the ibv_cq's comp_events_completed)",
    "uct_p2p_test_event": "uct_ib_iface_t and uct_rc_mlx5_ep_t tx.wq (UCX's "
                          "uct_ib_mlx5_modify_qp_state forces the QP to error)",
    "uct_qp_test_event": "uct_rc_mlx5_iface_common_t, uct_ib_mlx5_md_t (its own QP through "
                         "UCX's uct_rc_mlx5_iface_create_qp), uct_ib_device_t async events",
    "test_tag_mp_xrq": "uct_rc_mlx5_iface_common_t tm fields (multi-packet XRQ)",
    "test_ib_md": "uct_ib_md_t, uct_ib_mlx5_md_t flags, uct_ib_mem_t",
    "test_devx": "uct_ib_mlx5_md_t DevX objects, uct_priv_worker_t",
}
# Prefix matches (uct_p2p_test_event_log shares the reason above).
INTERNAL_PREFIXES = ("uct_p2p_test_event",)
# Single tests of otherwise public groups that read UCX internals.
INTERNAL_TESTS = {
    "test_rc.tx_cq_moderation": "uct_rc_iface_t config.tx_moderation, uct_rc_ep_t txqp.available",
}

# Skip reasons (as the test prints them) that UCX's own transports share,
# with why, from UCX 1.13.1's sources: UCX's rc_mlx5/ib md skip these tests
# the same way (or on hardware like the one named).
TAG_OFFLOAD = ("tag-matching offload: UCX's rc_mlx5 has it only with hardware tag matching "
               "(ConnectX-5 and later) and RC_TM_ENABLE=y; its other transports never")
SHARED_SKIP_REASONS = {
    "!check_caps(UCT_IFACE_FLAG_CB_ASYNC, UCT_IFACE_FLAG_AM_DUP)":
        "UCX's rc iface offers CB_SYNC only, and no AM_DUP (rc_iface.c)",
    "!check_caps(UCT_IFACE_FLAG_CB_SYNC | UCT_IFACE_FLAG_CB_ASYNC, UCT_IFACE_FLAG_AM_DUP)":
        "UCX's rc iface offers no AM_DUP (rc_iface.c)",
    "!check_caps(UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY | UCT_IFACE_FLAG_PENDING"
    " | UCT_IFACE_FLAG_CB_ASYNC)":
        "UCX's rc iface offers CB_SYNC only (rc_iface.c)",
    "!check_caps(UCT_IFACE_FLAG_CB_SYNC | UCT_IFACE_FLAG_AM_BCOPY) || "
    "!check_event_caps(UCT_IFACE_FLAG_EVENT_RECV_SIG)":
        "UCX's rc iface has the SEND_COMP, RECV and FD events, not RECV_SIG (rc_iface.c)",
    "!check_caps(UCT_IFACE_FLAG_AM_BCOPY | UCT_IFACE_FLAG_ERRHANDLE_BCOPY_LEN)":
        "UCX's rc_mlx5 does not set ERRHANDLE_BCOPY_LEN (rc_mlx5_common.c)",
    "!check_caps(UCT_IFACE_FLAG_PUT_BCOPY | UCT_IFACE_FLAG_ERRHANDLE_BCOPY_LEN)":
        "UCX's rc_mlx5 does not set ERRHANDLE_BCOPY_LEN (rc_mlx5_common.c)",
    "!check_caps(UCT_MD_FLAG_ALLOC)": "UCX 1.13's ib md has no ALLOC (ib_md.c)",
    "!check_caps(UCT_MD_FLAG_ALLOC | UCT_MD_FLAG_RKEY_PTR)": "UCX 1.13's ib md has no ALLOC (ib_md.c)",
    "!check_caps(UCT_MD_FLAG_ALLOC | UCT_MD_FLAG_ADVISE)": "UCX 1.13's ib md has no ALLOC (ib_md.c)",
    "!check_caps(UCT_MD_FLAG_INVALIDATE)":
        "UCX's verbs ib md has no INVALIDATE, its DevX md only with KSM and indirect atomics",
    "MD can't detect any memory types": "UCX's ib md detects no memory types (host memory only)",
    "skipping on loopback": "the test needs two entities; its loopback variant skips everywhere",
    "!check_caps(UCT_IFACE_FLAG_TAG_EAGER_SHORT)": TAG_OFFLOAD,
    "!check_caps(UCT_IFACE_FLAG_TAG_EAGER_BCOPY)": TAG_OFFLOAD,
    "!check_caps(UCT_IFACE_FLAG_TAG_EAGER_ZCOPY)": TAG_OFFLOAD,
    "!check_caps(UCT_IFACE_FLAG_TAG_RNDV_ZCOPY)": TAG_OFFLOAD,
    "!check_caps(UCT_IFACE_FLAG_TAG_EAGER_BCOPY | UCT_IFACE_FLAG_TAG_RNDV_ZCOPY)": TAG_OFFLOAD,
}
# Skip reasons that UCX's rc_mlx5 does not share: the test runs there and
# skips here because of a difference of ours (a bug to fix).
OWN_SKIP_REASONS = {
    "": "the transfer size range is empty (uct_p2p_test::test_xfer_multi): the md's max_alloc "
        "caps it (UCX's ib md reports ULONG_MAX)",
    "!check_caps(UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_ERRHANDLE_ZCOPY_BUF)":
        "UCX's rc_mlx5 sets ERRHANDLE_ZCOPY_BUF (rc_mlx5_common.c)",
    "!check_caps(UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_ERRHANDLE_REMOTE_MEM)":
        "UCX's rc_mlx5 sets ERRHANDLE_REMOTE_MEM (rc_mlx5_common.c)",
    "Test does not apply to the current transport":
        "uct_config_modify of IB_TX_MAX_BUFS / IB_TX_BUFS_GROW fails (UCX's rc_mlx5 has both keys "
        "and then skips with \"Test does not work with IB RC transports\")",
}

RESULT_RE = re.compile(r"^\[\s*(RUN|OK|FAILED|SKIP)\s*\] ?(.*)$")
FAILURE_RE = re.compile(r"(: Failure$|UCX\s+ERROR|Assertion|error:|Error:|Caught signal|panicked)")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gtest", required=True)
    parser.add_argument("--transports", required=True,
                        help="comma-separated gtest prefixes, e.g. rc_mlx5,ib or tcp")
    parser.add_argument("--preload", help="LD_PRELOAD this library (our libuct.so.0)")
    parser.add_argument("--expectations")
    parser.add_argument("--logs", default="ucx-gtest-logs")
    parser.add_argument("--test-timeout", type=int, default=120)
    parser.add_argument("--markdown", help="also write the table (markdown) here")
    parser.add_argument("--filter", help="only groups whose name contains this")
    parser.add_argument("--results", help="also write every test's result here (JSON)")
    return parser.parse_args()


def base_environment(args):
    env = dict(os.environ)
    # A crash prints UCX's backtrace and ends the process (the default of
    # UCX's `make test`, freeze, would wait for a debugger).
    env["UCX_HANDLE_ERRORS"] = "bt"
    env.setdefault("UCX_LOG_LEVEL", "warn")
    if args.preload:
        env["LD_PRELOAD"] = os.path.abspath(args.preload)
    else:
        # UCX's own libuct (reference runs): its module loader would load
        # UCX's libuct_ib.so, whose uct_ib_component the binary's copy from
        # ib_stub.c overrides, and crash; the runs need no module.
        env.setdefault("UCX_MODULES", "^ib,rdmacm,cma")
    return env


def interface_ipv4(name):
    """The IPv4 address of interface `name` (SIOCGIFADDR), or None."""
    siocgifaddr = 0x8915
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            answer = fcntl.ioctl(sock.fileno(), siocgifaddr,
                                 struct.pack("256s", name.encode()[:15]))
        except OSError:
            return None
    return socket.inet_ntoa(answer[20:24])


def interface_pci_function(name):
    """The PCI function interface `name` sits on, by the kernel's list of
    PCI devices: its parent device (`/sys/class/net/<name>/device`) or that
    device's parent (a virtio network device on its virtio-pci function)."""
    try:
        parent = os.path.realpath(f"/sys/class/net/{name}/device", strict=True)
        functions = {os.path.realpath(os.path.join("/sys/bus/pci/devices", bdf)): bdf
                     for bdf in os.listdir("/sys/bus/pci/devices")}
    except OSError:
        return None
    return functions.get(parent) or functions.get(os.path.dirname(parent))


def pci_interface():
    """(interface, IPv4 address, PCI function) of the first interface, in
    index order, with a non-loopback IPv4 address that sits on a PCI
    function; None when there is none. The `ib/*` groups' soft device is
    bound to that address, so it sits on that function as Linux's rxe sits
    on its network device's parent: UCX's ib/test_md.sys_device wants a
    system device for every ib resource."""
    for _, name in socket.if_nameindex():
        address = interface_ipv4(name)
        if not address or address.startswith("127."):
            continue
        function = interface_pci_function(name)
        if function:
            return name, address, function
    return None


def group_environment(env, group, pci):
    """The environment of `group`: the `ib/*` groups get the soft device on
    the PCI interface's address (the rc_mlx5 groups keep the default,
    loopback)."""
    if pci is None or not group.startswith("ib/"):
        return env
    env = dict(env)
    env["UCX_SOFT_HCA_DEVICES"] = f"mlx5_0@{pci[1]}"
    return env


def list_tests(args, env):
    patterns = ":".join(f"{t}/*" for t in args.transports.split(","))
    listing = subprocess.run([args.gtest, "--gtest_list_tests", f"--gtest_filter={patterns}"],
                             env=env, capture_output=True, text=True, timeout=300)
    if listing.returncode != 0:
        sys.exit(f"run_groups.py: listing the tests failed ({listing.returncode}):\n"
                 f"{listing.stdout[-3000:]}\n{listing.stderr[-3000:]}")
    groups = collections.OrderedDict()
    suite = None
    for line in listing.stdout.splitlines():
        if not line.strip() or line.startswith("["):
            continue
        if not line.startswith(" "):
            suite = line.split()[0].rstrip(".")
            continue
        if suite and "/" in suite:
            groups.setdefault(suite, []).append(f"{suite}.{line.split()[0]}")
    return groups


def internal_reason(group):
    suite = group.split("/", 1)[1]
    if suite in INTERNAL_GROUPS:
        return INTERNAL_GROUPS[suite]
    for prefix in INTERNAL_PREFIXES:
        if suite.startswith(prefix):
            return INTERNAL_GROUPS[prefix]
    return None


def test_key(test):
    """rc_mlx5/test_rc.tx_cq_moderation/0 -> test_rc.tx_cq_moderation"""
    return test.split("/")[1]


class TestResult:
    def __init__(self, outcome, message="", seconds=0.0):
        self.outcome = outcome  # passed, failed, crashed, hung, skipped
        self.message = message
        self.seconds = seconds


def first_error(lines):
    for i, line in enumerate(lines):
        if FAILURE_RE.search(line):
            # gtest's assertion output continues on the next lines (the
            # compared expressions and their values).
            text = " ".join(part.strip() for part in lines[i:i + 6]
                            if part.strip() and not RESULT_RE.match(part))
            return text[:300]
    return ""


# Groups whose tests move millions of messages between two threads pinned to
# the two CPUs: 27-38 s with the cores to themselves, but 160-212 s when the
# machine is loaded (the threads wait in the run queue), so their watchdog is
# longer than --test-timeout. Their figures are not checked (perf_retry_count
# 0): only that they finish.
SLOW_GROUP_TIMEOUT = {"test_uct_perf": 600}


def run_group(args, env, group, tests, left_out, log):
    """Runs `tests` (`group` but `left_out`), restarting after a crash or hang."""
    test_timeout = max(args.test_timeout, SLOW_GROUP_TIMEOUT.get(group.split("/")[-1], 0))
    results = {}
    test_set = set(tests)
    while True:
        remaining = [t for t in tests if t not in results]
        if not remaining:
            break
        gtest_filter = f"{group}.*"
        done = left_out + [t for t in tests if t in results]
        if done:
            gtest_filter += "-" + ":".join(done)
        command = [args.gtest, f"--gtest_filter={gtest_filter}", "-t", str(test_timeout)]
        log.write(f"\n##### {' '.join(command)}\n")
        log.flush()
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        os.set_blocking(process.stdout.fileno(), False)
        current, current_started, output = None, 0.0, []
        skip_reason = None
        killed_by_us = False
        buffer = b""
        progressed = False

        def handle(line):
            nonlocal current, current_started, output, skip_reason, progressed
            log.write(line + "\n")
            match = RESULT_RE.match(line)
            if not match:
                if current:
                    output.append(line)
                    del output[:-200]
                return
            kind, rest = match.groups()
            if kind == "RUN":
                # `[ RUN      ] <name> <resource>`
                name = rest.split()[0] if rest.split() else ""
                if name in test_set:
                    current, current_started, output, skip_reason = name, time.monotonic(), [], None
                    progressed = True
                    log.flush()
            elif kind == "SKIP" and current:
                reason = rest.strip()
                if reason.startswith("(") and reason.endswith(")"):
                    reason = reason[1:-1]
                skip_reason = reason
            elif kind in ("OK", "FAILED") and current and rest.startswith(current):
                seconds = time.monotonic() - current_started
                if kind == "OK":
                    results[current] = (TestResult("skipped", skip_reason, seconds)
                                    if skip_reason is not None
                                    else TestResult("passed", "", seconds))
                else:
                    results[current] = TestResult("failed", first_error(output), seconds)
                current = None

        while True:
            try:
                chunk = process.stdout.read()
            except BlockingIOError:
                chunk = None
            if chunk:
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for raw in lines:
                    handle(raw.decode("utf-8", "replace"))
            elif chunk == b"" and process.poll() is not None:
                break
            else:
                time.sleep(0.05)
            if (current and not killed_by_us
                    and time.monotonic() - current_started > test_timeout + 30):
                log.write(f"##### {current}: no progress in {test_timeout + 30} s, killing\n")
                killed_by_us = True
                os.killpg(process.pid, signal.SIGKILL)
        if buffer:
            handle(buffer.decode("utf-8", "replace"))
        status = process.wait()
        log.flush()
        if current:
            seconds = time.monotonic() - current_started
            hung = killed_by_us or seconds >= test_timeout - 1
            how = (f"killed after {seconds:.0f} s" if killed_by_us else
                   f"gtest watchdog after {seconds:.0f} s" if hung else
                   f"process ended ({describe_status(status)})")
            message = first_error(output)
            tail = " | ".join(line.strip() for line in output[-4:] if line.strip())
            results[current] = TestResult("hung" if hung else "crashed",
                                          f"{how}: {message or tail}"[:400], seconds)
        elif not progressed:
            # The process ran none of the tests left: count them as crashed
            # rather than retrying forever.
            tail = " | ".join(line.strip() for line in output[-4:] if line.strip())
            for test in remaining:
                results[test] = TestResult("crashed",
                                           f"not run: process ended ({describe_status(status)}) {tail}")
        elif status not in (0, 1) and all(t in results for t in tests):
            results[f"{group}.<process exit>"] = TestResult(
                "crashed", f"after its tests the process ended ({describe_status(status)})")
    return results


def describe_status(status):
    if status < 0:
        return f"signal {signal.Signals(-status).name}"
    return f"exit status {status}"


# `sometimes`: fails or passes by chance until its bug is fixed (not reported
# as passing).
EXPECTED_OUTCOMES = ("failed", "crashed", "hung", "sometimes")

# Conditions an expectation may carry (`<outcome>:<condition>`): the line
# applies only on hosts where the condition holds; elsewhere the test must
# pass. Each maps to (holds(pci), what it means).
CONDITIONS = {
    "no-pci-interface": (lambda pci: pci is None,
                         "the host has no non-loopback IPv4 interface on a PCI function"),
}


def read_expectations(path, pci):
    expected = {}
    if not path:
        return expected
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 2)
            outcome, _, condition = parts[1].partition(":") if len(parts) == 3 else ("", "", "")
            if (len(parts) < 3 or outcome not in EXPECTED_OUTCOMES
                    or (condition and condition not in CONDITIONS)):
                sys.exit(f"{path}:{number}: expected `<test> <{'|'.join(EXPECTED_OUTCOMES)}>"
                         f"[:<{'|'.join(CONDITIONS)}>] <reason>`")
            if condition:
                holds, meaning = CONDITIONS[condition]
                if not holds(pci):
                    print(f"Expectation not applied (the test must pass): {parts[0]}: it applies "
                          f"only where {meaning}; here {pci[0]} ({pci[1]}) is on PCI {pci[2]}")
                    continue
                print(f"Expectation applied: {parts[0]} {outcome}: {meaning}")
            expected[parts[0]] = (outcome, parts[2])
    return expected


OUTCOMES = ("passed", "failed", "crashed", "hung", "skipped")


def format_table(rows, totals, markdown):
    header = ("group",) + OUTCOMES
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for group, counts in rows + [("**total**", totals)]:
            lines.append("| " + " | ".join([group] + [str(counts[o]) for o in OUTCOMES]) + " |")
        return "\n".join(lines)
    width = max(len(r[0]) for r in rows + [("total", None)])
    lines = [f"{'group':<{width}} " + " ".join(f"{o:>8}" for o in OUTCOMES)]
    for group, counts in rows + [("total", totals)]:
        lines.append(f"{group:<{width}} " + " ".join(f"{counts[o]:>8}" for o in OUTCOMES))
    return "\n".join(lines)


def main():
    args = parse_args()
    env = base_environment(args)
    os.makedirs(args.logs, exist_ok=True)
    pci = pci_interface()
    if pci:
        print(f"ib/* groups: soft device mlx5_0 on {pci[1]} ({pci[0]}, PCI {pci[2]})")
    else:
        print("ib/* groups: soft device on loopback (no non-loopback IPv4 interface "
              "on a PCI function here)")
    expected = read_expectations(args.expectations, pci)
    started = time.monotonic()
    groups = list_tests(args, env)
    if not groups:
        sys.exit(f"run_groups.py: the gtest lists no test for {args.transports}")
    left_out, results, group_seconds = {}, collections.OrderedDict(), {}
    for group, tests in groups.items():
        if args.filter and args.filter not in group:
            continue
        reason = internal_reason(group)
        if reason:
            left_out[group] = (len(tests), reason)
            continue
        internal_tests = [t for t in tests if test_key(t) in INTERNAL_TESTS]
        for test in internal_tests:
            left_out[test] = (1, INTERNAL_TESTS[test_key(test)])
        tests = [t for t in tests if t not in internal_tests]
        log_path = os.path.join(args.logs, group.replace("/", "_") + ".log")
        group_started = time.monotonic()
        with open(log_path, "w", encoding="utf-8") as log:
            group_results = run_group(args, group_environment(env, group, pci), group, tests,
                                      internal_tests, log)
        group_seconds[group] = time.monotonic() - group_started
        results[group] = group_results
        counts = collections.Counter(r.outcome for r in group_results.values())
        print(f"{group}: " + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts[o])
              + f" ({group_seconds[group]:.0f} s, log {log_path})", flush=True)

    rows, totals = [], collections.Counter()
    for group, group_results in results.items():
        counts = collections.Counter(r.outcome for r in group_results.values())
        totals.update(counts)
        rows.append((group, counts))
    print()
    print(format_table(rows, totals, markdown=False))
    print(f"\n{sum(len(r) for r in results.values())} tests in {len(results)} groups, "
          f"{time.monotonic() - started:.0f} s")

    finished = [(r.seconds, name) for group_results in results.values()
                for name, r in group_results.items() if r.outcome in ("passed", "failed")]
    if finished:
        print("Slowest finished tests (the watchdog is --test-timeout "
              f"{args.test_timeout} s): " + ", ".join(
                  f"{name} {seconds:.0f} s" for seconds, name in sorted(finished)[-5:][::-1]))

    if left_out:
        print("\nLeft out (they read UCX-internal structures or call UCX's own IB code):")
        for name, (count, reason) in left_out.items():
            print(f"  {name} ({count} test{'s' if count > 1 else ''}): {reason}")

    skip_reasons = collections.Counter()
    for group_results in results.values():
        for result in group_results.values():
            if result.outcome == "skipped":
                skip_reasons[result.message] += 1
    if skip_reasons:
        # The classification compares with UCX's rc_mlx5: it means nothing
        # for a reference run of UCX's own transports.
        compare = "rc_mlx5" in args.transports.split(",")
        print("\nSkip reasons (count, the test's reason"
              + (", whether UCX's own rc_mlx5 skips it too):" if compare else "):"))
        for reason, count in skip_reasons.most_common():
            if not compare:
                print(f"  {count:4} x {reason or '(no reason printed)'}")
                continue
            if reason in SHARED_SKIP_REASONS:
                why = f"shared: {SHARED_SKIP_REASONS[reason]}"
            elif reason in OWN_SKIP_REASONS:
                why = f"NOT shared: {OWN_SKIP_REASONS[reason]}"
            else:
                why = "not examined"
            print(f"  {count:4} x {reason or '(no reason printed)'}\n         {why}")

    unexpected, known, now_passing = [], [], []
    for group_results in results.values():
        for name, result in group_results.items():
            bad = result.outcome in ("failed", "crashed", "hung")
            if bad and name in expected:
                known.append((name, result))
            elif bad:
                unexpected.append((name, result))
            elif (name in expected and result.outcome == "passed"
                  and expected[name][0] != "sometimes"):
                now_passing.append(name)
    for title, entries in (("Known failures (in the expectations file)", known),
                           ("UNEXPECTED failures", unexpected)):
        if entries:
            print(f"\n{title}:")
            for name, result in entries:
                note = ""
                if name in expected and expected[name][0] not in (result.outcome, "sometimes"):
                    note = f" [listed as {expected[name][0]}]"
                print(f"  {result.outcome:7} {name}{note}\n          {result.message}")
    if now_passing:
        print("\nListed in the expectations file but passing now (remove them from the list):")
        for name in now_passing:
            print(f"  {name}")

    if args.results:
        with open(args.results, "w", encoding="utf-8") as file:
            json.dump({name: {"outcome": r.outcome, "message": r.message,
                              "seconds": round(r.seconds, 1)}
                       for group_results in results.values()
                       for name, r in group_results.items()}, file, indent=1)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as file:
            file.write(format_table(rows, totals, markdown=True) + "\n")
    if unexpected:
        print(f"\nFAIL: {len(unexpected)} test(s) outside the expectations file did not pass")
        return 1
    print("\nOK: every test that did not pass is in the expectations file"
          if args.expectations else "\nOK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
