// Real servers for the Node tests, on ephemeral loopback ports in temporary folders, stopped by
// PID: a standalone slotd started here (startSlotd: any flags, e.g. a token file of several
// roles), and clients/fixtures/servers.py for a private etcd and a 3-node replica set
// (startServers). The slotd binary is $SLOTD (tests/meson.build sets it to the build's), else
// ../../build/slotd of this checkout; etcd is $ETCD or /usr/bin/etcd.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** The slotd binary the tests run. */
export function slotdBinary() {
  const b = process.env.SLOTD || path.resolve(here, '../../../build/slotd');
  return fs.existsSync(b) ? b : null;
}

/** clients/fixtures/servers.py, or null when this checkout has none. */
const serversPy = path.resolve(here, '../../fixtures/servers.py');
export function serversPyPath() {
  return fs.existsSync(serversPy) ? serversPy : null;
}

/** The etcd binary, or null when there is none (the replica-set tests then skip). */
export function etcdBinary() {
  const b = process.env.ETCD || '/usr/bin/etcd';
  return fs.existsSync(b) ? b : null;
}

const started = new Set();
process.on('exit', () => {
  for (const p of started) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      /* gone already */
    }
  }
});

function waitLine(proc, re, ms, what) {
  return new Promise((resolve, reject) => {
    let buf = '';
    const t = setTimeout(() => reject(new Error(`${what}: no line matching ${re} within ${ms} ms: ${buf.slice(0, 300)}`)), ms);
    const on = (d) => {
      buf += d;
      const m = re.exec(buf);
      if (m) {
        clearTimeout(t);
        proc.stdout.off('data', on);
        resolve(m);
      }
    };
    proc.stdout.setEncoding('utf8');
    proc.stdout.on('data', on);
    proc.once('exit', (code, sig) => {
      clearTimeout(t);
      reject(new Error(`${what} exited (${code ?? sig}) before announcing itself`));
    });
  });
}

function killWait(proc, sig = 'SIGTERM', ms = 10000) {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    const t = setTimeout(() => {
      try {
        process.kill(proc.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }, ms);
    proc.once('exit', () => {
      clearTimeout(t);
      started.delete(proc);
      resolve();
    });
    try {
      process.kill(proc.pid, sig);
    } catch {
      resolve();
    }
  });
}

/**
 * Starts slotd --data TMP --listen 127.0.0.1:0 EXTRA...; resolves {host, pid, dir, stop()}.
 * @param {string[]} [extra]
 */
export async function startSlotd(extra = [], opts = {}) {
  const bin = slotdBinary();
  const dir = opts.dir || fs.mkdtempSync(path.join(os.tmpdir(), 'slotd-node-'));
  const argv = ['--data', path.join(dir, opts.dataName || 'data'), '--listen', '127.0.0.1:0', ...extra];
  const log = fs.openSync(path.join(dir, opts.logName || 'slotd.log'), 'a');
  const proc = spawn(bin, argv, { stdio: ['ignore', 'pipe', log] });
  fs.closeSync(log);
  started.add(proc);
  const m = await waitLine(proc, /^listening on (\S+)$/m, 15000, 'slotd');
  const s = {
    host: m[1],
    pid: proc.pid,
    proc,
    dir,
    async kill() {
      await killWait(proc, 'SIGKILL');
    },
    async stop() {
      await killWait(proc, 'SIGTERM');
      if (!opts.dir) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return s;
}

/**
 * clients/fixtures/servers.py (the shared real-server starter): a standalone slotd, or with
 * nodes 3 a private etcd and a 3-node replica set, on ephemeral loopback ports in one temporary
 * folder, with an admin token. Resolves {hosts, primary, token, killPrimary(), stop()}.
 * @param {{nodes?: 1|3, durability?: 'sync'|'nosync'}} [opts]
 */
export async function startServers(opts = {}) {
  const py = process.env.PYTHON || 'python3';
  const argv = [serversPy, '--slotd', slotdBinary(), '--nodes', String(opts.nodes || 1), '--durability', opts.durability || 'nosync'];
  if (etcdBinary()) argv.push('--etcd', etcdBinary());
  const proc = spawn(py, argv, { stdio: ['pipe', 'pipe', 'inherit'] });
  started.add(proc);
  proc.stdout.setEncoding('utf8');
  let buf = '';
  const lines = [];
  let wake = null;
  proc.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      lines.push(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
    if (wake) wake();
  });
  proc.once('exit', () => wake && wake());
  const nextLine = async (ms) => {
    const end = Date.now() + ms;
    while (lines.length === 0) {
      if (proc.exitCode !== null || Date.now() > end) throw new Error('servers.py: no line (it exited or took too long)');
      await new Promise((r) => {
        wake = r;
        setTimeout(r, 200);
      });
      wake = null;
    }
    return JSON.parse(lines.shift());
  };
  const view = await nextLine(90000);
  const s = {
    ...view,
    /** kill -9 of the primary; resolves the new view (with `killed`) once another is primary */
    async killPrimary() {
      proc.stdin.write('kill-primary\n');
      const v = await nextLine(60000);
      if (v.error) throw new Error('servers.py: ' + v.error);
      Object.assign(s, v);
      return v;
    },
    async stop() {
      if (proc.exitCode === null) proc.stdin.end('stop\n');
      await new Promise((r) => (proc.exitCode !== null ? r() : proc.once('exit', r)));
      started.delete(proc);
    },
  };
  return s;
}
