#!/usr/bin/env python3
"""test_wings.py — tools/wings.py, the guard of src/'s layering.

    test_wings.py WINGS_PY BUILD_DIR CC

1. On this build: 0 cycles between wings (exit 0), every wing of src/ seen.
2. A planted cycle fails: two objects compiled here, src/low/a.c calling
   src/high/b.c and back, give exit 1 and name both calls; without the call
   back up, exit 0. A cycle between two files of one wing is reported, not
   failed.
Ends "N passed, M failed" like the C tests.
"""
import os
import subprocess
import sys
import tempfile

wings_py, build, cc = sys.argv[1:4]
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   " + name)
    else:
        failed += 1
        print("FAIL " + name + ("\n" + detail if detail else ""))


def wings(*args):
    p = subprocess.run([sys.executable, wings_py, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


rc, out = wings(build, "--quiet")
check("this build: no cycle between wings", rc == 0 and " 0 cycles between wings" in out, out)
seen = set(os.listdir(os.path.join(os.path.dirname(os.path.abspath(wings_py)), "..", "src")))
expected = {w for w in seen if os.path.isdir(os.path.join(os.path.dirname(os.path.abspath(wings_py)), "..", "src", w))}
n = len(expected)
check(f"this build: all {n} wings read", f"wings: {n} wings," in out, out)

with tempfile.TemporaryDirectory() as tmp:
    def obj(name, body):
        c = os.path.join(tmp, name + ".c")
        with open(c, "w") as f:
            f.write(body)
        o = os.path.join(tmp, name + ".o")
        subprocess.run([cc, "-c", "-o", o, c], check=True)
        return o

    a_up = obj("a_up", "int b(void);\nint a(void) { return b(); }\n")
    a = obj("a", "int a(void) { return 1; }\n")
    b = obj("b", "int a(void);\nint b(void) { return a(); }\n")
    a2 = obj("a2", "int a(void);\nint a2(void) { return a(); }\n")
    a_loop = obj("a_loop", "int a2(void);\nint a(void) { return a2(); }\n")

    rc, out = wings("--objects", "src/low/a.c=" + a_up, "src/high/b.c=" + b)
    check("a planted cycle fails", rc == 1, out)
    check("the cycle is printed with both calls",
          "cycle between wings: high low" in out and "src/low/a.c -> src/high/b.c (b)" in out
          and "src/high/b.c -> src/low/a.c (a)" in out, out)
    rc, out = wings("--objects", "src/low/a.c=" + a, "src/high/b.c=" + b)
    check("a call down only passes", rc == 0 and "0 cycles between wings" in out, out)
    rc, out = wings("--objects", "src/low/a.c=" + a_loop, "src/low/a2.c=" + a2, "src/high/b.c=" + b)
    check("a cycle inside one wing is reported, not failed",
          rc == 0 and "cycle inside low (reported, not failed): src/low/a.c src/low/a2.c" in out, out)
    rc, out = wings("--objects", "nowing.c=" + a)
    check("a bad argument is a usage error", rc == 2, out)

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
