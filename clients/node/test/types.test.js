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

test('tsc --noEmit: the typed example passes, a wrong use fails', { skip, timeout: 120000 }, () => {
  // One tsc run over both files (tsc's start-up is most of its time): every error must be in
  // the wrong use, none in test/typed-example.ts.
  const dir = fs.mkdtempSync(path.join(root, 'test', '.tsc-'));
  try {
    fs.writeFileSync(path.join(dir, 'bad.ts'),
      "import { connect } from 'slotd-client';\n" +
      "export async function f() { const c = await connect({ hosts: ['h:1'] }); await c.hold({ event: 'e', user: 'u' }); }\n");
    const base = JSON.parse(fs.readFileSync(path.join(root, 'test', 'tsconfig.json'), 'utf8'));
    base.files = ['../typed-example.ts', 'bad.ts'];
    fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(base));
    const r = runTsc(dir);
    const errors = r.stdout.split('\n').filter((l) => /error TS\d+/.test(l));
    assert.notEqual(r.status, 0, 'a hold without qty must not type-check');
    assert.ok(errors.length > 0 && errors.every((l) => l.includes('bad.ts')), 'errors only in the wrong use:\n' + r.stdout + r.stderr);
    assert.match(r.stdout, /qty/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
