#!/usr/bin/env python3
"""test_install.py — `meson install --destdir` lays out what slotd installs,
and a program builds against the installed client library via slot.pc.

    test_install.py BUILD_ROOT CC VERSION PREFIX BINDIR SBINDIR LIBDIR INCLUDEDIR MANDIR UNITDIR MAN(yes|no)

Installs the build (already built: --no-rebuild) into a temporary folder,
checks every file the docs promise (docs/operations.md, "Install"), then
compiles, links and runs a small C program (the codec and a slot_follow)
with `pkg-config --cflags --libs slot` against the installed slot.pc, relocated into the folder by
PKG_CONFIG_SYSROOT_DIR.
"""
import os
import shutil
import subprocess
import sys
import tempfile

PROGRAM = r'''
#include <slot/client.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    slot_req q;
    if (slot_req_hold(&q, "gig", "u1", "r1", 2) != 0)
        return 1;
    char line[512];
    long n = slot_req_encode(&q, line, sizeof line);
    if (n <= 0 || (size_t)n >= sizeof line)
        return 1;
    fwrite(line, 1, (size_t)n, stdout);
    const char *reply = "{\"ok\":true,\"status\":\"held\",\"qty\":2}";
    slot_reply r;
    if (slot_reply_parse(reply, strlen(reply), &r) != 0)
        return 1;
    printf("%s %llu %s\n", r.status, (unsigned long long)r.qty, slot_op_name(SLOT_OP_HOLD));
    slot_reply_clear(&r);
    /* The follower of a replica set's primary is in the library too (it connects nothing yet). */
    slot_follow_opts o;
    slot_follow_opts_default(&o);
    slot_follow *f = NULL;
    char err[128];
    if (slot_follow_new("127.0.0.1:7421,127.0.0.1:7422", &o, &f, err, sizeof err) != 0)
        return 1;
    printf("follow %s\n", slot_follow_client(f) ? "connected" : "idle");
    slot_follow_free(f);
    return 0;
}
'''

failures = []


def run(argv, **kw):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, **kw)
    if p.returncode != 0:
        failures.append('%s: exit %d\n%s' % (' '.join(argv), p.returncode, p.stdout))
    return p


def main():
    if len(sys.argv) != 12:
        sys.exit(__doc__)
    build, cc, version, prefix, bindir, sbindir, libdir, includedir, mandir, unitdir, man = sys.argv[1:]
    if not shutil.which('pkg-config'):
        print('skipped: pkg-config is not installed')
        sys.exit(77)
    under = lambda d: os.path.join(prefix, d)  # an absolute option stays as it is
    with tempfile.TemporaryDirectory() as dest:
        inside = lambda path: os.path.join(dest, path.lstrip('/'))
        run(['meson', 'install', '-C', build, '--destdir', dest, '--no-rebuild', '--quiet'])
        want = {
            os.path.join(under(sbindir), 'slotd'): True,
            os.path.join(under(bindir), 'slotctl'): True,
            os.path.join(under(bindir), 'slot-bench'): True,
            os.path.join(unitdir, 'slotd.service'): False,
            os.path.join(under(libdir), 'pkgconfig', 'slot.pc'): False,
            os.path.join(under(libdir), 'libslot-client.so'): False,
            os.path.join(under(libdir), 'libslot-client.so.0'): False,
        }
        for h in ('client.h', 'error.h', 'ops.h', 'limits.h'):
            want[os.path.join(under(includedir), 'slot', h)] = False
        if man == 'yes':
            want[os.path.join(under(mandir), 'man8', 'slotd.8')] = False
            want[os.path.join(under(mandir), 'man1', 'slotctl.1')] = False
            want[os.path.join(under(mandir), 'man1', 'slot-bench.1')] = False
        for path, executable in sorted(want.items()):
            p = inside(path)
            if not os.path.isfile(p):
                failures.append('not installed: %s' % path)
            elif executable and not os.access(p, os.X_OK):
                failures.append('not executable: %s' % path)
            else:
                print('installed: %s' % path)
        unit = inside(os.path.join(unitdir, 'slotd.service'))
        if os.path.isfile(unit):
            slotd = os.path.join(under(sbindir), 'slotd')
            if 'ExecStart=%s ' % slotd not in open(unit, encoding='utf-8').read():
                failures.append('%s: ExecStart does not run %s' % (unit, slotd))

        env = dict(os.environ)
        env['PKG_CONFIG_PATH'] = inside(os.path.join(under(libdir), 'pkgconfig'))
        env['PKG_CONFIG_SYSROOT_DIR'] = dest
        env.pop('PKG_CONFIG_LIBDIR', None)
        got = run(['pkg-config', '--modversion', 'slot'], env=env).stdout.strip()
        if got != version:
            failures.append('pkg-config --modversion slot: %r, want %r' % (got, version))
        flags = run(['pkg-config', '--cflags', '--libs', 'slot'], env=env).stdout.split()
        print('pkg-config --cflags --libs slot: %s' % ' '.join(flags))
        if not any(f.startswith('-I' + dest) for f in flags):
            failures.append('the cflags do not point into the install folder: %s' % flags)
        src = os.path.join(dest, 'hello.c')
        exe = os.path.join(dest, 'hello')
        with open(src, 'w', encoding='utf-8') as f:
            f.write(PROGRAM)
        # -I/usr/include and the like are what a real user's system has too;
        # nothing from the source tree or the build folder is on the path.
        if run([cc, '-std=c11', '-Wall', '-Wextra', '-Werror', src, '-o', exe] + flags).returncode == 0:
            env['LD_LIBRARY_PATH'] = inside(under(libdir))
            out = run([exe], env=env).stdout
            print(out, end='')
            if '"op":"hold"' not in out or 'held 2 hold' not in out or 'follow idle' not in out:
                failures.append('the program printed %r' % out)
    for f in failures:
        print('FAIL ' + f)
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()
