#!/usr/bin/env python3
"""tools/wings.py — the call graph between src/'s wings, from the object files.

Reads the defined and undefined symbols (nm) of every object file of a build
whose source lies under src/WING/, maps each call to the file that defines its
symbol, and reports:

  * cycles between wings (strongly connected components of the wing graph
    with more than one wing): each is printed with one call per edge, and
    the exit status is 1;
  * cycles between files inside one wing: printed, not counted as a failure;
  * with --layers, each wing's callees.

Usage: tools/wings.py BUILD_DIR [--layers] [--quiet]
       tools/wings.py --objects A.o B.o ... (each named SRC_PATH=OBJECT)

Exit status: 0 without cycles between wings, 1 with one or more, 2 on a
usage error or when no object file of src/ was found.

The object-to-source mapping comes from meson's folders (source_of). Only
the objects of the failpoint-free wing libraries and of slotd are read.
"""
import os
import re
import subprocess
import sys


def usage(code):
    print(__doc__.strip(), file=sys.stderr if code else sys.stdout)
    sys.exit(code)


def nm(path):
    out = subprocess.run(["nm", "--defined-only", "-g", path], capture_output=True, text=True,
                         check=True).stdout
    defined = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] in "TDBRCVWSG":
            defined.add(parts[2])
    out = subprocess.run(["nm", "-u", path], capture_output=True, text=True, check=True).stdout
    used = {line.split()[-1] for line in out.splitlines() if line.strip()}
    return defined, used


def source_of(build, root, obj_name):
    """The source file of one object of meson's build folder, or None.

    A wing's static library: BUILD/src/WING/libslot-WING.a.p/FILE.c.o is
    src/WING/FILE.c. An executable's own objects: BUILD/slotd.p/
    src_daemon_slotd.c.o is src/daemon/slotd.c. Failpoint, fuzz and client
    library twins, and the tests', are skipped: they compile the same files.
    """
    if not obj_name.endswith(".c.o"):
        return None
    rel = os.path.relpath(root, build).split(os.sep)
    if any(x in part for part in rel for x in ("-fp", "failpoints", "fuzz", "slot-client.so")):
        return None
    if rel[0] in ("tests", "bench", "tools"):
        return None
    if len(rel) == 3 and rel[0] == "src" and rel[2].endswith(".a.p"):
        return "src/" + rel[1] + "/" + obj_name[:-len(".o")]
    if len(rel) == 1 and rel[0].endswith(".p") and obj_name.startswith("src_"):
        wing, sep, rest = obj_name[len("src_"):-len(".o")].partition("_")
        return "src/" + wing + "/" + rest if sep else None
    return None


def collect(build):
    objects = {}
    for root, dirs, files in os.walk(build):
        for f in files:
            src = source_of(build, root, f)
            if src is not None and src not in objects:
                objects[src] = os.path.join(root, f)
    return objects


def wing_of(src):
    return src.split("/")[1]


def sccs(nodes, edges):
    """Tarjan's strongly connected components, iteratively."""
    index = {}
    low = {}
    on = set()
    stack = []
    out = []
    counter = [0]
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def main(argv):
    layers = "--layers" in argv
    quiet = "--quiet" in argv
    args = [a for a in argv if a not in ("--layers", "--quiet")]
    if not args or args[0] in ("-h", "--help"):
        usage(0 if args else 2)
    if args[0] == "--objects":
        objects = {}
        for a in args[1:]:
            src, sep, obj = a.partition("=")
            if not sep or not src.startswith("src/") or src.count("/") < 2:
                print(f"wings: {a}: expected src/WING/FILE.c=OBJECT", file=sys.stderr)
                sys.exit(2)
            objects[src] = obj
    else:
        objects = collect(args[0])
    if not objects:
        print("wings: no object file of src/WING/ found", file=sys.stderr)
        sys.exit(2)

    defs = {}
    uses = {}
    for src, obj in sorted(objects.items()):
        d, u = nm(obj)
        uses[src] = u
        for s in d:
            defs.setdefault(s, src)

    calls = {}  # (from_src, to_src) -> example symbol
    for src, u in uses.items():
        for s in sorted(u):
            to = defs.get(s)
            if to is not None and to != src:
                calls.setdefault((src, to), s)

    wing_edges = {}
    wing_example = {}
    file_edges = {}
    for (a, b), s in calls.items():
        file_edges.setdefault(a, set()).add(b)
        wa, wb = wing_of(a), wing_of(b)
        if wa != wb:
            wing_edges.setdefault(wa, set()).add(wb)
            wing_example.setdefault((wa, wb), f"{a} -> {b} ({s})")

    wings = {wing_of(s) for s in objects}
    bad = sccs(wings, wing_edges)
    for comp in bad:
        print("wings: cycle between wings: " + " ".join(comp))
        for a in comp:
            for b in sorted(wing_edges.get(a, ())):
                if b in comp:
                    print("  " + wing_example[(a, b)])

    inner = 0
    for w in sorted(wings):
        files = {s for s in objects if wing_of(s) == w}
        edges = {a: {b for b in file_edges.get(a, ()) if b in files} for a in files}
        for comp in sccs(files, edges):
            inner += 1
            if not quiet:
                print(f"wings: cycle inside {w} (reported, not failed): " + " ".join(comp))

    if layers:
        for w in sorted(wings):
            print(f"{w}: " + " ".join(sorted(wing_edges.get(w, ()))))
    print(f"wings: {len(wings)} wings, {len(objects)} files, {len(bad)} cycles between wings, "
          f"{inner} inside a wing")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
