#!/usr/bin/env python3
"""Runs UCX's gtest groups (one test-suite class of one transport each) in
separate processes and prints a table group -> passed/failed/crashed/hung/
skipped.

    run_groups.py --gtest FILE --transports rc_mlx5,ib [--preload LIB]
                  [--expectations FILE] [--logs DIR] [--test-timeout S]
                  [--markdown FILE] [--filter SUBSTRING]

A group is `<transport>/<suite>` as gtest names it (rc_mlx5/test_uct_ep,
ib/test_md). Each group runs as `gtest --gtest_filter=<group>.* -t S`: gtest's
watchdog (-t) aborts a test that runs longer than S seconds, and this driver
kills a process whose running test has made no progress for S + 30 seconds.
A test that was running when its process died is `crashed`, or `hung` when it
had run into either timeout; the group's remaining tests then run in a new
process, so one crash costs one test.

--expectations lists the tests known not to pass today (one line each:
`<full gtest name> <failed|crashed|hung> <reason>`). The exit status is 1 when
a test outside that list fails, crashes or hangs; listed tests that pass are
reported so the list can shrink. Without --expectations every bad result
counts. The table always shows the real counts.
"""

import argparse
import collections
import os
import re
import signal
import subprocess
import sys
import time

# Groups left out: each reads or changes UCX-internal structures of UCX's own
# rc/ib implementation (not part of the public uct.h API), which our library
# does not have. Checked against UCX 1.13.1's test/gtest sources.
INTERNAL_GROUPS = {
    "test_rc_flow_control": "uct_rc_iface_t/uct_rc_ep_t flow-control fields (fc.fc_wnd, config.fc_*)",
    "test_rc_flow_control_stats": "uct_rc_iface_t flow-control fields and UCX's stats counters",
    "test_rc_get_limit": "uct_rc_iface_t tx.reads_available / config.max_get_bytes",
    "test_rc_keepalive": "uct_rc_mlx5 ep internals (uct_rc_mlx5_ep_t tx wq, keepalive state)",
    "test_rc_iface_attrs": "uct_ib_iface_config_t / uct_rc_iface_t config fields",
    "test_uct_ib_addr": "uct_ib_iface_t address pack/unpack (uct_ib_address_pack, uct_ib_iface_t)",
    "test_uct_ib_pkey": "uct_ib_iface_t pkey fields and uct_ib_device_t port attributes",
    "test_uct_ib_sl": "uct_ib_iface_t config.sl",
    "test_uct_ib_gid_idx": "uct_ib_iface_t gid_info",
    "test_uct_ib_lmc": "uct_ib_iface_t path_bits",
    "test_uct_event_ib": "uct_ib_iface_t/uct_rc_iface_t CQ internals",
    "uct_p2p_test_event": "uct_ib_iface_t CQs and async events",
    "uct_qp_test_event": "uct_ib_iface_t/uct_rc_ep_t QP handles (ibv_modify_qp on UCX's QP)",
    "test_tag_mp_xrq": "uct_rc_mlx5_iface_common_t tm fields (multi-packet XRQ)",
    "test_ib_md": "uct_ib_md_t and uct_ib_mem_t internals",
    "test_devx": "uct_ib_mlx5_md_t DevX objects",
}
# Prefix matches (uct_p2p_test_event_* variants share the reason above).
INTERNAL_PREFIXES = ("uct_p2p_test_event",)

# Skip reasons UCX's own transports share: the test skips the same way on
# UCX's rc_mlx5/ib (or on every transport) on a machine like this one.
SHARED_SKIP_REASONS = {}

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
    return parser.parse_args()


def base_environment(args):
    env = dict(os.environ)
    # A crash prints UCX's backtrace and ends the process (the default of
    # UCX's `make test`, freeze, would wait for a debugger).
    env["UCX_HANDLE_ERRORS"] = "bt"
    env.setdefault("UCX_LOG_LEVEL", "warn")
    if args.preload:
        env["LD_PRELOAD"] = os.path.abspath(args.preload)
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


class TestResult:
    def __init__(self, outcome, message="", seconds=0.0):
        self.outcome = outcome  # passed, failed, crashed, hung, skipped
        self.message = message
        self.seconds = seconds


def first_error(lines):
    for i, line in enumerate(lines):
        if FAILURE_RE.search(line):
            text = " ".join(part.strip() for part in lines[i:i + 3] if part.strip())
            return text[:400]
    return ""


def run_group(args, env, group, tests, log):
    """Runs `tests` (all of `group`), restarting after a crash or hang."""
    results = {}
    test_set = set(tests)
    while True:
        remaining = [t for t in tests if t not in results]
        if not remaining:
            break
        gtest_filter = f"{group}.*"
        done = [t for t in tests if t in results]
        if done:
            gtest_filter += "-" + ":".join(done)
        command = [args.gtest, f"--gtest_filter={gtest_filter}", "-t", str(args.test_timeout)]
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
            elif kind == "SKIP" and current:
                skip_reason = rest.strip().strip("()") or "no reason given"
            elif kind in ("OK", "FAILED") and current and rest.startswith(current):
                seconds = time.monotonic() - current_started
                if kind == "OK":
                    results[current] = (TestResult("skipped", skip_reason, seconds) if skip_reason
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
                    and time.monotonic() - current_started > args.test_timeout + 30):
                log.write(f"##### {current}: no progress in {args.test_timeout + 30} s, killing\n")
                killed_by_us = True
                os.killpg(process.pid, signal.SIGKILL)
        if buffer:
            handle(buffer.decode("utf-8", "replace"))
        status = process.wait()
        log.flush()
        if current:
            seconds = time.monotonic() - current_started
            hung = killed_by_us or seconds >= args.test_timeout - 1
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


def read_expectations(path):
    expected = {}
    if not path:
        return expected
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 2)
            if len(parts) < 3 or parts[1] not in ("failed", "crashed", "hung"):
                sys.exit(f"{path}:{number}: expected `<test> <failed|crashed|hung> <reason>`")
            expected[parts[0]] = (parts[1], parts[2])
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
    expected = read_expectations(args.expectations)
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
        log_path = os.path.join(args.logs, group.replace("/", "_") + ".log")
        group_started = time.monotonic()
        with open(log_path, "w", encoding="utf-8") as log:
            group_results = run_group(args, env, group, tests, log)
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

    if left_out:
        print("\nGroups left out (they read UCX-internal structures):")
        for group, (count, reason) in left_out.items():
            print(f"  {group} ({count} tests): {reason}")

    skip_reasons = collections.Counter()
    for group_results in results.values():
        for result in group_results.values():
            if result.outcome == "skipped":
                skip_reasons[result.message] += 1
    if skip_reasons:
        print("\nSkip reasons:")
        for reason, count in skip_reasons.most_common():
            shared = SHARED_SKIP_REASONS.get(reason, "not known to be shared with UCX's transports")
            print(f"  {count:4} x {reason}: {shared}")

    unexpected, known, now_passing = [], [], []
    for group_results in results.values():
        for name, result in group_results.items():
            bad = result.outcome in ("failed", "crashed", "hung")
            if bad and name in expected:
                known.append((name, result))
            elif bad:
                unexpected.append((name, result))
            elif name in expected and result.outcome == "passed":
                now_passing.append(name)
    for title, entries in (("Known failures (in the expectations file)", known),
                           ("UNEXPECTED failures", unexpected)):
        if entries:
            print(f"\n{title}:")
            for name, result in entries:
                note = ""
                if name in expected and expected[name][0] != result.outcome:
                    note = f" [listed as {expected[name][0]}]"
                print(f"  {result.outcome:7} {name}{note}\n          {result.message}")
    if now_passing:
        print("\nListed in the expectations file but passing now (remove them from the list):")
        for name in now_passing:
            print(f"  {name}")

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
