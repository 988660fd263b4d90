"""pip install of clients/python works offline: a copy of the package (so the tree stays
clean) installed with `pip install --no-build-isolation --no-index` into a new venv that
sees the system's setuptools and wheel (Debian: python3-setuptools, python3-wheel); the
installed package imports from outside the tree and ships py.typed. Exits 77 (skipped)
when no python3 here has venv, pip, setuptools and wheel."""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)
CHECK = 'import setuptools, wheel, venv, ensurepip'


def interpreter():
    for py in (sys.executable, '/usr/bin/python3'):
        if py and os.access(py, os.X_OK) and subprocess.run([py, '-c', CHECK], capture_output=True).returncode == 0:
            return py
    return None


def main():
    py = interpreter()
    if py is None:
        print('skipped: no python3 with venv, pip, setuptools and wheel (Debian: python3-venv python3-setuptools '
              'python3-wheel)')
        sys.exit(77)
    with tempfile.TemporaryDirectory(prefix='slotd-pip-') as tmp:
        src = os.path.join(tmp, 'src')
        shutil.copytree(PKG, src, ignore=shutil.ignore_patterns('build', '*.egg-info', '__pycache__', 'tests'))
        venv = os.path.join(tmp, 'venv')
        subprocess.run([py, '-m', 'venv', '--system-site-packages', venv], check=True)
        vpy = os.path.join(venv, 'bin', 'python')
        r = subprocess.run([vpy, '-m', 'pip', 'install', '--no-build-isolation', '--no-index', '--no-cache-dir', src],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit('FAIL: pip install --no-build-isolation --no-index:\n' + r.stdout[-3000:] + r.stderr[-3000:])
        print('ok: pip install --no-build-isolation --no-index clients/python')
        probe = ('import os, slotd; d = os.path.dirname(slotd.__file__); '
                 'assert d.startswith(%r), d; assert os.path.exists(os.path.join(d, "py.typed")); '
                 'assert callable(slotd.Client) and callable(slotd.AsyncClient); print(slotd.__version__)' % venv)
        r = subprocess.run([vpy, '-c', probe], capture_output=True, text=True, cwd=tmp)
        if r.returncode != 0:
            sys.exit('FAIL: the installed package:\n' + r.stderr[-3000:])
        print('ok: slotd %s imports from the venv, with py.typed' % r.stdout.strip())
    print('ok')


if __name__ == '__main__':
    main()
