// The Node runner of the shared client fixtures (clients/fixtures/README.md): for every
// cases/*.json, start peer.py (the scripted peers), connect with hosts = the peers and the
// case's options, make the calls at once (pipelined), compare each result by subset match (a
// rejected call as its error reply), close peer.py's stdin and require the verdict {"ok":true}.
// Skipped when clients/fixtures (or python3) is not there.

import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { connect, SlotError } from '../src/index.js';

const fixtures = process.env.SLOT_FIXTURES || path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures');
const peerPy = path.join(fixtures, 'peer.py');
const casesDir = path.join(fixtures, 'cases');
const python = process.env.PYTHON || 'python3';
const cases = fs.existsSync(casesDir) ? fs.readdirSync(casesDir).filter((f) => f.endsWith('.json')).sort() : [];
const skip = !fs.existsSync(peerPy) || cases.length === 0 ? 'no clients/fixtures cases (clients/fixtures/peer.py, cases/*.json)'
  : spawnSync(python, ['--version']).status !== 0 ? 'no python3 for peer.py' : false;

/** want ⊆ got: every key of want in got with an equal value (objects recursively). */
export function subset(want, got) {
  if (want !== null && typeof want === 'object' && !Array.isArray(want)) {
    if (got === null || typeof got !== 'object' || Array.isArray(got)) return false;
    return Object.keys(want).every((k) => k in got && subset(want[k], got[k]));
  }
  if (Array.isArray(want)) return Array.isArray(got) && want.length === got.length && want.every((v, i) => subset(v, got[i]));
  return want === got;
}

function lineReader(stream) {
  const rl = readline.createInterface({ input: stream });
  const lines = [];
  let waiter = null;
  rl.on('line', (l) => {
    lines.push(l);
    if (waiter) waiter();
  });
  rl.on('close', () => waiter && waiter());
  return async (ms) => {
    const end = Date.now() + ms;
    while (lines.length === 0) {
      const left = end - Date.now();
      if (left <= 0) return null;
      await new Promise((r) => {
        waiter = r;
        setTimeout(r, left);
      });
      waiter = null;
    }
    return lines.shift();
  };
}

async function runCase(file) {
  const c = JSON.parse(fs.readFileSync(path.join(casesDir, file), 'utf8'));
  const peer = spawn(python, [peerPy, path.join(casesDir, file)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const next = lineReader(peer.stdout);
  let client;
  try {
    const first = await next(10000);
    assert.ok(first, `${c.name}: peer.py printed no peers line`);
    const { peers } = JSON.parse(first);
    client = await connect({ hosts: peers, ...(c.options || {}) });
    const results = await Promise.all(
      c.calls.map((call) =>
        client.request(call.op, call.args || {}).then(
          (r) => r,
          (err) => {
            if (err instanceof SlotError) return err.reply;
            throw err;
          },
        ),
      ),
    );
    c.results.forEach((want, i) => {
      assert.ok(subset(want, results[i]), `${c.name}: call ${i} (${c.calls[i].op}): want ${JSON.stringify(want)} got ${JSON.stringify(results[i])}`);
    });
  } finally {
    if (client) await client.close();
    peer.stdin.end();
  }
  const verdict = await next(10000);
  await new Promise((r) => (peer.exitCode !== null ? r() : peer.once('exit', r)));
  assert.ok(verdict, `${c.name}: no verdict from peer.py`);
  assert.deepEqual(JSON.parse(verdict), { ok: true }, `${c.name}: ${verdict}`);
}

test('the shared client fixtures', { skip, timeout: 120000 }, async (t) => {
  for (const f of cases) await t.test(f.replace(/\.json$/, ''), () => runCase(f));
});
