// src/index.d.ts against a typed example: `tsc --noEmit` (npm's typescript, a devDependency
// pinned in package-lock.json) passes on test/typed-example.ts and fails on a wrong use.

import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const skip = fs.existsSync(tsc) ? false : 'typescript is not installed (npm ci in clients/node)';

function runTsc(project) {
  return spawnSync(process.execPath, [tsc, '-p', project], { cwd: root, encoding: 'utf8', timeout: 60000 });
}

test('tsc --noEmit: the typed example passes, the wrong uses fail', { skip, timeout: 120000 }, () => {
  // One tsc run over both files (tsc's start-up is most of its time): every error must be in
  // typed-wrong.ts (one for each of its three wrong calls), none in typed-example.ts.
  const r = runTsc('test/tsconfig.json');
  const errors = r.stdout.split('\n').filter((l) => /error TS\d+/.test(l));
  assert.notEqual(r.status, 0, 'the wrong uses must not type-check');
  assert.ok(errors.every((l) => l.startsWith('test/typed-wrong.ts')), 'errors only in the wrong uses:\n' + r.stdout + r.stderr);
  for (const line of [7, 8, 9]) {
    assert.ok(errors.some((l) => l.startsWith(`test/typed-wrong.ts(${line},`)), `line ${line} refused:\n${r.stdout}`);
  }
});
