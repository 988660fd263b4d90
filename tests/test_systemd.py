#!/usr/bin/env python3
"""test_systemd.py — docs/systemd/slotd.service.in passes systemd's checks.

    test_systemd.py UNIT_IN SLOTD [MAN_PAGE_SLOTD_8]

The unit, with @SBINDIR@/slotd replaced by the built SLOTD, must pass
`systemd-analyze verify` without a word of complaint (with its man:slotd(8)
reference resolved against the built page when given, else --man=no), must
score "OK" or better in `systemd-analyze security --offline=yes` (exposure at
most 2.0, where systemd >= 250 has it), and must set what docs/operations.md,
"systemd", promises: Type=notify, a user of its own, the state folder, the
hardening options. Exits 77 (skipped) without systemd-analyze.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

REQUIRED = {
    'Type': 'notify',
    'DynamicUser': 'yes',
    'StateDirectory': 'slotd',
    'NoNewPrivileges': 'yes',
    'ProtectSystem': 'strict',
    'ProtectHome': 'yes',
    'PrivateTmp': 'yes',
    'PrivateDevices': 'yes',
    'RestrictAddressFamilies': 'AF_INET AF_INET6 AF_UNIX',
    'SystemCallFilter': '@system-service',
    'MemoryDenyWriteExecute': 'yes',
    'LockPersonality': 'yes',
    'RestrictRealtime': 'yes',
    'LimitNOFILE': None,  # any value
}


def settings(text):
    """key -> [values] of the unit's uncommented assignments."""
    out = {}
    for line in text.splitlines():
        m = re.match(r'^([A-Za-z]+)=(.*)$', line)
        if m:
            out.setdefault(m.group(1), []).append(m.group(2))
    return out


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit('usage: test_systemd.py UNIT_IN SLOTD [SLOTD_8]')
    unit_in, slotd = sys.argv[1], os.path.abspath(sys.argv[2])
    page = sys.argv[3] if len(sys.argv) == 4 else None
    if not shutil.which('systemd-analyze'):
        print('skipped: systemd-analyze is not installed (Debian: systemd)')
        sys.exit(77)
    failures = []
    text = open(unit_in, encoding='utf-8').read()
    if '@SBINDIR@/slotd' not in text:
        failures.append('%s: no ExecStart=@SBINDIR@/slotd to fill in' % unit_in)
    unit = text.replace('@SBINDIR@/slotd', slotd)
    got = settings(unit)
    for key, want in REQUIRED.items():
        if key not in got or (want is not None and want not in got[key]):
            failures.append('%s=%s is not set (has %s)' % (key, want or '...', got.get(key)))
    exec_start = [v for v in got.get('ExecStart', []) if v]
    if len(exec_start) != 1 or '--data /var/lib/slotd' not in exec_start[0]:
        failures.append('want one ExecStart with --data /var/lib/slotd, got %s' % exec_start)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'slotd.service')
        with open(path, 'w', encoding='utf-8') as f:
            f.write(unit)
        env = dict(os.environ)
        argv = ['systemd-analyze', 'verify']
        if page:
            os.makedirs(os.path.join(tmp, 'man', 'man8'))
            shutil.copy(page, os.path.join(tmp, 'man', 'man8', 'slotd.8'))
            env['MANPATH'] = os.path.join(tmp, 'man')
        else:
            argv.append('--man=no')
        p = subprocess.run(argv + [path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=env, timeout=120)
        print('$ %s\n%s' % (' '.join(argv + [path]), p.stdout))
        if p.returncode != 0 or p.stdout.strip():
            failures.append('systemd-analyze verify: exit %d: %s' % (p.returncode, p.stdout.strip()))

        v = subprocess.run(['systemd-analyze', '--version'], stdout=subprocess.PIPE, text=True)
        m = re.match(r'systemd (\d+)', v.stdout)
        if m and int(m.group(1)) >= 250:
            p = subprocess.run(['systemd-analyze', 'security', '--offline=yes', '--threshold=20', path],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
            level = re.search(r'Overall exposure level for slotd.service: ([0-9.]+)', p.stdout)
            print('security: exposure %s' % (level.group(1) if level else '?'))
            if p.returncode != 0:
                failures.append('systemd-analyze security: exposure above 2.0: %s' % p.stdout[-2000:])
        else:
            print('systemd-analyze security --offline: needs systemd 250, not checked')
    for f in failures:
        print('FAIL ' + f)
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()
