#!/usr/bin/env node
// hold-bench.js — holds/s through slotd-client at K connections from one Node process, each
// keeping D holds in flight (pipelined), until a fresh event is sold out; then, in the same
// run on the same slotd, `slot-bench hot-release` with the same K, D and capacity, for
// comparison. Verified: the units held through the client equal the capacity.
//
// usage: node bench/hold-bench.js [--slotd BIN | --host H:P] [--slot-bench BIN]
//          [--connections 256] [--pipeline 16] [--capacity 200000] [--durability sync|nosync]
//          [--json FILE]
// With --slotd it starts its own slotd (127.0.0.1:0, a temporary folder, stopped by PID).

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connect } from '../src/index.js';

function args() {
  const o = { connections: 256, pipeline: 16, capacity: 200000, durability: 'sync' };
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i++) {
    const k = a[i].replace(/^--/, '');
    const v = a[++i];
    if (v === undefined) throw new Error(`--${k} needs a value`);
    o[k.replace(/-([a-z])/g, (_, c) => c.toUpperCase())] = /^\d+$/.test(v) ? Number(v) : v;
  }
  return o;
}

async function startSlotd(bin, durability) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slotd-hold-bench-'));
  const p = spawn(bin, ['--data', path.join(dir, 'data'), '--listen', '127.0.0.1:0', '--durability', durability],
    { stdio: ['ignore', 'pipe', fs.openSync(path.join(dir, 'slotd.log'), 'a')] });
  const host = await new Promise((resolve, reject) => {
    let buf = '';
    const t = setTimeout(() => reject(new Error('slotd did not announce itself in 10 s')), 10000);
    p.stdout.setEncoding('utf8');
    p.stdout.on('data', (d) => {
      buf += d;
      const m = /^listening on (\S+)$/m.exec(buf);
      if (m) {
        clearTimeout(t);
        resolve(m[1]);
      }
    });
    p.once('exit', (c) => reject(new Error(`slotd exited (${c})`)));
  });
  return {
    host,
    stop: () => new Promise((r) => {
      p.once('exit', () => {
        fs.rmSync(dir, { recursive: true, force: true });
        r();
      });
      process.kill(p.pid, 'SIGTERM');
    }),
  };
}

async function nodeRun(host, o) {
  const event = `node-${process.pid}-${Date.now()}`;
  const admin = await connect({ hosts: [host] });
  await admin.createEvent({ event, capacity: o.capacity, shards: 16 });
  const clients = await Promise.all(Array.from({ length: o.connections }, () => connect({ hosts: [host], timeoutMs: 30000 })));
  let held = 0;
  let units = 0;
  let soldOut = false;
  let errors = 0;
  let seq = 0;
  const t0 = process.hrtime.bigint();
  const lane = async (c) => {
    while (!soldOut) {
      const r = await c.hold({ event, user: `u${seq++}`, qty: 1 }).catch(() => (errors++, null));
      if (!r) continue;
      if (r.status === 'held') {
        held++;
        units += r.qty;
      } else if (r.status === 'sold_out') soldOut = true;
    }
  };
  const lanes = [];
  for (const c of clients) for (let d = 0; d < o.pipeline; d++) lanes.push(lane(c));
  await Promise.all(lanes);
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  const view = await admin.event({ event });
  await Promise.all(clients.map((c) => c.close()));
  await admin.close();
  return { event, holds: held, units, seconds: s, holds_per_s: held / s, errors, server_held: view.held, verified: view.held === units && units === o.capacity };
}

function slotBenchRun(bin, host, o, tmp) {
  const port = host.slice(host.lastIndexOf(':') + 1);
  const json = path.join(tmp, 'slot-bench.json');
  const r = spawnSync(bin, ['hot-release', '--port', port, '--connections', String(o.connections), '--pipeline', String(o.pipeline),
    '--capacity', String(o.capacity), '--tail', '0', '--json', json], { encoding: 'utf8', timeout: 600000 });
  if (r.status !== 0) throw new Error(`slot-bench exited ${r.status}: ${r.stdout}${r.stderr}`);
  const j = JSON.parse(fs.readFileSync(json, 'utf8'));
  return { results: j.results, verification: j.verification?.status };
}

const o = args();
let server = null;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hold-bench-'));
try {
  if (o.slotd) server = await startSlotd(o.slotd, o.durability);
  const host = server ? server.host : o.host || '127.0.0.1:7420';
  const node = await nodeRun(host, o);
  let bench = null;
  if (o.slotBench) bench = slotBenchRun(o.slotBench, host, o, tmp);
  const out = { connections: o.connections, pipeline: o.pipeline, capacity: o.capacity, durability: server ? o.durability : 'unknown', node, slot_bench: bench };
  console.log(`slotd-client: ${node.holds} holds in ${node.seconds.toFixed(2)} s = ${Math.round(node.holds_per_s)} holds/s ` +
    `(${o.connections} connections x ${o.pipeline} in flight, one process; verified: ${node.verified})`);
  if (bench) {
    const r = bench.results;
    const hps = r.holds_per_s ?? r.throughput ?? (r.holds && r.duration_s ? r.holds / r.duration_s : undefined);
    console.log(`slot-bench:   ${r.holds} holds = ${hps !== undefined ? Math.round(hps) : '?'} holds/s (same slotd, same K and D; verification: ${bench.verification})`);
  }
  if (o.json) fs.writeFileSync(o.json, JSON.stringify(out, null, 2));
} finally {
  if (server) await server.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
}
