// Real servers for the Node tests: a standalone slotd, or a private etcd and a 3-node replica
// set, on ephemeral loopback ports in a temporary folder, stopped by PID. The slotd binary is
// $SLOTD (tests/meson.build sets it to the build's), else ../../build/slotd of this checkout;
// etcd is $ETCD or /usr/bin/etcd.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** The slotd binary the tests run. */
export function slotdBinary() {
  const b = process.env.SLOTD || path.resolve(here, '../../../build/slotd');
  return fs.existsSync(b) ? b : null;
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

/** A free loopback port (the kernel's pick; the caller retries a clash at bind). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
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

async function etcdHealthy(url) {
  try {
    const r = await fetch(url + '/health', { signal: AbortSignal.timeout(1000) });
    return (await r.text()).includes('"health":"true"');
  } catch {
    return false;
  }
}

/** A raw NDJSON exchange with one host: sends `req`, resolves the reply object. */
export function rawRequest(host, req, ms = 2000) {
  return new Promise((resolve, reject) => {
    const [h, p] = [host.slice(0, host.lastIndexOf(':')), Number(host.slice(host.lastIndexOf(':') + 1))];
    const s = net.connect({ host: h, port: p });
    let buf = '';
    const t = setTimeout(() => {
      s.destroy();
      reject(new Error(`${host}: no reply`));
    }, ms);
    s.on('connect', () => s.write(JSON.stringify(req) + '\n'));
    s.setEncoding('utf8');
    s.on('data', (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(t);
        s.destroy();
        resolve(JSON.parse(buf.slice(0, nl)));
      }
    });
    s.on('error', (e) => {
      clearTimeout(t);
      reject(e);
    });
  });
}

/**
 * A private etcd and a 3-node replica set (the way tools/cluster-lib.sh starts one):
 * resolves {hosts, primary(), nodes, killPrimary(), stop()}.
 */
export async function startSet(opts = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slotd-node-set-'));
  const secret = path.join(dir, 'secret');
  fs.writeFileSync(secret, Buffer.from(Array.from({ length: 32 }, () => Math.floor(Math.random() * 256))).toString('hex'), { mode: 0o600 });
  let etcd = null;
  let etcdUrl = '';
  for (let tries = 0; tries < 3 && !etcd; tries++) {
    const c = await freePort();
    const p = await freePort();
    etcdUrl = `http://127.0.0.1:${c}`;
    const log = fs.openSync(path.join(dir, 'etcd.log'), 'a');
    const proc = spawn(etcdBinary(), ['--name', 'n', '--data-dir', path.join(dir, `etcd${tries}`), '--listen-client-urls', etcdUrl,
      '--advertise-client-urls', etcdUrl, '--listen-peer-urls', `http://127.0.0.1:${p}`,
      '--initial-advertise-peer-urls', `http://127.0.0.1:${p}`, '--initial-cluster', `n=http://127.0.0.1:${p}`],
    { stdio: ['ignore', log, log] });
    fs.closeSync(log);
    started.add(proc);
    for (let i = 0; i < 100 && proc.exitCode === null; i++) {
      if (await etcdHealthy(etcdUrl)) {
        etcd = proc;
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    if (!etcd) await killWait(proc, 'SIGKILL');
  }
  if (!etcd) throw new Error(`etcd did not start (see ${dir}/etcd.log)`);
  const flags = opts.flags || ['--heartbeat-ms', '50', '--failover-timeout-ms', '500', '--repl-timeout-ms', '300'];
  const nodes = [];
  const set = {
    dir,
    nodes,
    get hosts() {
      return nodes.map((n) => n.host);
    },
    /** The member whose `cluster` op says primary, waited for (bounded). */
    async primary(ms = 30000, not = null) {
      const end = Date.now() + ms;
      while (Date.now() < end) {
        for (const n of nodes) {
          if (n.dead || n.host === not) continue;
          try {
            const r = await rawRequest(n.host, { op: 'cluster' }, 1000);
            if (r.ok && r.role === 'primary') return n;
          } catch {
            /* not answering yet */
          }
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error('no primary within ' + ms + ' ms');
    },
    async members(want, ms = 60000) {
      const end = Date.now() + ms;
      while (Date.now() < end) {
        try {
          const p = await set.primary(2000);
          const r = await rawRequest(p.host, { op: 'cluster' }, 1000);
          if (r.ok && Array.isArray(r.members) && r.members.filter((m) => m.role !== 'joining').length >= want) return r;
        } catch {
          /* retry */
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`fewer than ${want} members within ${ms} ms`);
    },
    /** kill -9 of the primary; resolves the new primary once one is elected. */
    async killPrimary() {
      const p = await set.primary();
      p.dead = true;
      await p.kill();
      return set.primary(30000, p.host);
    },
    async stop() {
      for (const n of nodes) await killWait(n.proc, 'SIGTERM');
      await killWait(etcd, 'SIGTERM');
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  for (let i = 1; i <= 3; i++) {
    const n = await startSlotd(['--durability', 'nosync', '--cluster', 'nodetest', '--node', `n${i}`, '--etcd', etcdUrl,
      '--cluster-secret-file', secret, ...flags], { dir, dataName: `n${i}`, logName: `n${i}.log` });
    nodes.push(n);
    if (i === 1) await set.primary();
  }
  await set.members(3);
  return set;
}
