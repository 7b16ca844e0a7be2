#!/usr/bin/env python3
"""hot_text.py - the library code gpuop runs, as archive members (test/bench/hot-text).

  hot_text.py map GPUOP_BINARY LINK_MAP CALLGRIND_OUT... > cmake/hot-text.txt
      Every function a callgrind profile of `gpuop run` executed, found by
      address in the binary's symbol table (nm) and by input section in
      the link map (-Wl,-Map, which cmake/static.cmake writes beside the
      binary): the members of the external archives (libcrypto.a, libc.a,
      libcurl.a, ...) holding them, one "ARCHIVE MEMBER" line each, sorted.
      gpuop's own layers are left out: they are linked whole and are small.
  hot_text.py check LINK_MAP HOT_LIST
      The layout the list asks for is the layout linked: every listed
      member's code lies before the code of any member of the same
      archives that is not listed (so the hot code shares the binary's
      first pages, the cold code the rest). Exit 1 with the first
      exception otherwise.

Why (docs/benchmarks-history.md, "The binary's pages"): the kernel maps a file's
pages around each page a process faults on (fault-around, 64 KiB), so a
function run once at startup in the middle of 2 MB of libcrypto keeps
16 pages of it resident. Linked as they come, the 670 members gpuop runs lie
among 1,400 it never does, and nearly all 4.3 MB of text ends up
resident; linked first, only their 2 MB.

Standard library only.
"""
import bisect
import os
import re
import subprocess
import sys

# Members of our own layers (libgpuop_*.a) are never listed.
OWN = re.compile(r"libgpuop_")
# An input section line of a GNU ld map: " .text.x  0xADDR  0xSIZE  FILE",
# or the name alone on its line and the rest on the next.
SEC_ONE = re.compile(r"^ (\.text\S*)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S+)")
SEC_NAME = re.compile(r"^ (\.\S+)$")
SEC_REST = re.compile(r"^\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S+)")
# glibc's string functions come in one member per instruction set
# (memmove-evex-unaligned-erms.o, strlen-avx2.o, ...), chosen at startup by
# the CPU: valgrind's CPU has no AVX-512, so a profile names the AVX2 ones
# where a real machine runs EVEX. A profiled variant brings its siblings.
ISA = {"sse2", "sse4", "sse4_1", "sse4_2", "ssse3", "avx", "avx2", "avx512", "evex", "evex512",
       "erms", "rtm", "movbe"}


def variant_family(member):
    """"memmove" for "memmove-avx-unaligned-erms.o", else None."""
    parts = member[:-2].split("-") if member.endswith(".o") else []
    return parts[0] if len(parts) > 1 and ISA.intersection(parts[1:]) else None


# "DIR/libx.a(member.o)" as linked from an archive, "DIR/libx.a/member.o"
# as cmake/static.cmake links a listed member (extracted into a directory
# named after its archive).
IN_ARCHIVE = re.compile(r"(?:^|/)([^/()]+\.a)\(([^()]+)\)$")
EXTRACTED = re.compile(r"(?:^|/)([^/]+\.a)/([^/]+)$")


def member_of(path):
    """(archive basename, member) for an input file of the map, or None."""
    m = IN_ARCHIVE.search(path) or EXTRACTED.search(path)
    return (m.group(1), m.group(2)) if m else None


def text_sections(link_map):
    """[(address, size, input file, section)] of the map's non-empty .text*
    input sections that were linked, sorted."""
    out, pending, linked = [], None, False
    with open(link_map) as f:
        for line in f:
            line = line.rstrip("\n")
            # Before this heading: the sections --gc-sections discarded.
            linked = linked or line.startswith("Linker script and memory map")
            if not linked:
                continue
            m = SEC_ONE.match(line)
            if m:
                out.append((int(m.group(2), 16), int(m.group(3), 16), m.group(4), m.group(1)))
                pending = None
                continue
            m = SEC_NAME.match(line)
            if m:
                pending = m.group(1) if m.group(1).startswith(".text") else None
                continue
            if pending:
                m = SEC_REST.match(line)
                if m:
                    out.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3), pending))
                pending = None
    return sorted(s for s in out if s[1] > 0)


def executed_functions(paths):
    """Names of the functions a callgrind profile holds (fn= and cfn= lines)."""
    names = set()
    pat = re.compile(r"^c?fn=\(\d+\)(?: (.*))?$")
    for p in paths:
        with open(p, errors="replace") as f:
            for line in f:
                m = pat.match(line.rstrip("\n"))
                if m and m.group(1):
                    names.add(m.group(1).split("'")[0])
    return names


def symbols(binary):
    """Function name -> address from nm."""
    out = {}
    nm = subprocess.run(["nm", binary], check=True, capture_output=True, text=True).stdout
    for line in nm.splitlines():
        p = line.split()
        if len(p) >= 3 and p[1] in "tTwWiI":
            out.setdefault(p[2], int(p[0], 16))
    return out


def cmd_map(binary, link_map, profiles):
    secs = text_sections(link_map)
    starts = [s[0] for s in secs]
    addr = symbols(binary)
    hot, unknown = set(), 0
    for fn in executed_functions(profiles):
        a = addr.get(fn)
        if a is None:
            unknown += 1
            continue
        i = bisect.bisect_right(starts, a) - 1
        if i < 0 or not secs[i][0] <= a < secs[i][0] + secs[i][1]:
            continue
        mem = member_of(secs[i][2])
        if mem and not OWN.search(mem[0]):
            hot.add(mem)
    linked = {member_of(sec[2]) for sec in secs} - {None}
    families = {(a, variant_family(m)) for a, m in hot if variant_family(m)}
    hot |= {(a, m) for a, m in linked if (a, m.split("-")[0]) in families and "-" in m}
    if not hot:
        sys.exit("hot_text.py: no archive member found: is %s the binary %s was linked with?" %
                 (link_map, binary))
    print("# cmake/hot-text.txt - the archive members whose code gpuop runs, linked")
    print("# first (cmake/static.cmake). Generated by test/bench/hot-text; do not edit.")
    for a, m in sorted(hot):
        print(a, m)
    print("hot_text.py: %d members; %d profiled functions not in the symbol table" %
          (len(hot), unknown), file=sys.stderr)


def read_list(path):
    out = set()
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if len(line) == 2:
                out.add((line[0], line[1]))
    return out


def cmd_check(link_map, hot_list):
    listed = read_list(hot_list)
    archives = {a for a, _ in listed}
    last_hot, first_cold = None, None
    found = set()
    for addr, size, path, sec in text_sections(link_map):
        mem = member_of(path)
        # .text.unlikely, .text.startup and the like are grouped apart by
        # the linker script, before .text: only .text is ordered here.
        if sec != ".text" or not mem or mem[0] not in archives:
            continue
        if mem in listed:
            found.add(mem)
            if last_hot is None or addr > last_hot[0]:
                last_hot = (addr, mem)
        elif first_cold is None or addr < first_cold[0]:
            first_cold = (addr, mem)
    if not found:
        sys.exit("FAIL: none of the %d listed members is in %s" % (len(listed), link_map))
    if first_cold and last_hot and first_cold[0] < last_hot[0]:
        sys.exit("FAIL: %s %s (not listed) at 0x%x lies before %s %s (listed) at 0x%x" %
                 (*first_cold[1], first_cold[0], *last_hot[1], last_hot[0]))
    print("ok: %d of %d listed members linked, all before the %s" %
          (len(found), len(listed), "rest" if first_cold else "end"))


def main():
    if len(sys.argv) >= 5 and sys.argv[1] == "map":
        cmd_map(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        cmd_check(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
